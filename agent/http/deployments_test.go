package http_test

import (
	nethttp "net/http"
	"testing"

	"github.com/drover/drover/api"
)

func TestDeploymentRoutes(t *testing.T) {
	a := newTestAPI(t)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: testNode(nodeID)}, nil)
	job := webJob(2)
	job["Job"].(map[string]any)["Update"] = map[string]any{"MaxParallel": 1}
	reg := a.register(job)
	if ev := a.waitEval(reg.EvalID); ev.Status != api.EvalStatusComplete {
		t.Fatalf("register eval %s, want complete", ev.Status)
	}

	var list []*api.Deployment
	a.ok("GET", "/v1/deployments", nil, &list)
	if len(list) != 1 || list[0].JobID != "web" || list[0].Status != api.DeploymentStatusRunning {
		t.Fatalf("GET /v1/deployments = %+v, want one running deployment of web", list)
	}
	id := list[0].ID
	a.ok("GET", "/v1/deployments?prefix="+id[:6], nil, &list)
	if len(list) != 1 {
		t.Errorf("?prefix = %d deployments, want 1", len(list))
	}
	a.ok("GET", "/v1/deployments?prefix=zzzz", nil, &list)
	if len(list) != 0 {
		t.Errorf("?prefix=zzzz = %d deployments, want 0", len(list))
	}
	var d api.Deployment
	a.ok("GET", "/v1/deployment/"+id, nil, &d)
	if d.ID != id || d.TaskGroups["web"] == nil || d.TaskGroups["web"].DesiredTotal != 2 || d.TaskGroups["web"].PlacedAllocs != 2 {
		t.Fatalf("GET /v1/deployment/%s = %+v, want group web with 2 desired and placed", id, d)
	}
	a.fails("GET", "/v1/deployment/nope", nil, nethttp.StatusNotFound, "deployment_not_found")

	var stubs []*api.AllocListStub
	a.ok("GET", "/v1/deployment/allocations/"+id, nil, &stubs)
	if len(stubs) != 2 {
		t.Errorf("deployment allocations = %d, want 2", len(stubs))
	}
	a.fails("GET", "/v1/deployment/allocations/nope", nil, nethttp.StatusNotFound, "deployment_not_found")

	a.ok("GET", "/v1/job/web/deployments", nil, &list)
	if len(list) != 1 || list[0].ID != id {
		t.Errorf("job deployments = %+v, want %s", list, id)
	}
	var latest *api.Deployment
	a.ok("GET", "/v1/job/web/deployment", nil, &latest)
	if latest == nil || latest.ID != id {
		t.Errorf("job latest deployment = %+v, want %s", latest, id)
	}
	a.fails("GET", "/v1/job/nope/deployments", nil, nethttp.StatusNotFound, "job_not_found")
	a.fails("GET", "/v1/job/nope/deployment", nil, nethttp.StatusNotFound, "job_not_found")

	// Pause and resume.
	var ur api.DeploymentUpdateResponse
	a.ok("POST", "/v1/deployment/pause/"+id, &api.DeploymentPauseRequest{Pause: true}, &ur)
	if ur.DeploymentModifyIndex == 0 {
		t.Errorf("pause answered %+v, want a modify index", ur)
	}
	a.ok("GET", "/v1/deployment/"+id, nil, &d)
	if d.Status != api.DeploymentStatusPaused {
		t.Errorf("after pause: status %q, want paused", d.Status)
	}
	a.ok("PUT", "/v1/deployment/pause/"+id, &api.DeploymentPauseRequest{DeploymentID: id, Pause: false}, &ur)
	if ur.EvalID == "" {
		t.Errorf("resume answered %+v, want an eval", ur)
	}
	a.ok("GET", "/v1/deployment/"+id, nil, &d)
	if d.Status != api.DeploymentStatusRunning {
		t.Errorf("after resume: status %q, want running", d.Status)
	}
	a.fails("POST", "/v1/deployment/pause/"+id, "{", nethttp.StatusBadRequest, "bad_request")
	a.fails("POST", "/v1/deployment/pause/"+id, &api.DeploymentPauseRequest{DeploymentID: "other"}, nethttp.StatusBadRequest, "bad_request")
	a.fails("POST", "/v1/deployment/pause/nope", &api.DeploymentPauseRequest{Pause: true}, nethttp.StatusNotFound, "deployment_not_found")

	// Promote: unknown group, both All and Groups; a plain promote works
	// (no canaries: nothing to wait for).
	a.fails("POST", "/v1/deployment/promote/"+id, &api.DeploymentPromoteRequest{Groups: []string{"nope"}}, nethttp.StatusBadRequest, "bad_request")
	a.fails("POST", "/v1/deployment/promote/"+id, &api.DeploymentPromoteRequest{All: true, Groups: []string{"web"}}, nethttp.StatusBadRequest, "bad_request")
	a.ok("POST", "/v1/deployment/promote/"+id, nil, &ur)
	if ur.EvalID == "" {
		t.Errorf("promote answered %+v, want an eval", ur)
	}

	// Fail, then every write conflicts.
	a.ok("POST", "/v1/deployment/fail/"+id, nil, &ur)
	a.ok("GET", "/v1/deployment/"+id, nil, &d)
	if d.Status != api.DeploymentStatusFailed {
		t.Errorf("after fail: status %q, want failed", d.Status)
	}
	a.fails("POST", "/v1/deployment/fail/"+id, nil, nethttp.StatusConflict, "conflict")
	a.fails("POST", "/v1/deployment/pause/"+id, &api.DeploymentPauseRequest{Pause: true}, nethttp.StatusConflict, "conflict")
	a.fails("POST", "/v1/deployment/fail/nope", nil, nethttp.StatusNotFound, "deployment_not_found")
	a.fails("DELETE", "/v1/deployment/fail/"+id, nil, nethttp.StatusMethodNotAllowed, "method_not_allowed")
}

func TestJobLatestDeploymentNone(t *testing.T) {
	a := newTestAPI(t)
	a.register(webJob(1)) // no update block: no deployment
	r := a.ok("GET", "/v1/job/web/deployment", nil, nil)
	if string(r.body) != "null" && string(r.body) != "null\n" {
		t.Errorf("latest deployment of a job without one = %s, want null", r.body)
	}
	var list []*api.Deployment
	a.ok("GET", "/v1/job/web/deployments", nil, &list)
	if list == nil || len(list) != 0 {
		t.Errorf("deployments of a job without one = %v, want []", list)
	}
}
