package http_test

import (
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestJobRoutes(t *testing.T) {
	a := newTestAPI(t)
	reg := a.register(webJob(3))

	var stubs []*api.JobListStub
	r := a.ok("GET", "/v1/jobs", nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != "web" || stubs[0].Namespace != api.DefaultNamespace {
		t.Fatalf("GET /v1/jobs = %s, want the one job web in namespace default", r.body)
	}
	if headerIndex(t, r) < reg.JobModifyIndex {
		t.Errorf("X-Drover-Index %d < the register's index %d", headerIndex(t, r), reg.JobModifyIndex)
	}
	if got := r.header.Get(api.HeaderKnownLeader); got != "true" {
		t.Errorf("%s = %q, want true", api.HeaderKnownLeader, got)
	}
	a.ok("GET", "/v1/jobs?prefix=we", nil, &stubs)
	if len(stubs) != 1 {
		t.Errorf("?prefix=we listed %d jobs, want 1", len(stubs))
	}
	a.ok("GET", "/v1/jobs?prefix=zz", nil, &stubs)
	if len(stubs) != 0 {
		t.Errorf("?prefix=zz listed %d jobs, want 0", len(stubs))
	}
	a.ok("GET", "/v1/jobs?namespace=other", nil, &stubs)
	if len(stubs) != 0 {
		t.Errorf("?namespace=other listed %d jobs, want 0", len(stubs))
	}
	a.ok("GET", "/v1/jobs?namespace=*", nil, &stubs)
	if len(stubs) != 1 {
		t.Errorf("?namespace=* listed %d jobs, want 1", len(stubs))
	}

	var job api.Job
	a.ok("GET", "/v1/job/web", nil, &job)
	if job.ID != "web" || len(job.TaskGroups) != 1 || job.TaskGroups[0].Count != 3 || job.JobModifyIndex != reg.JobModifyIndex {
		t.Fatalf("GET /v1/job/web = %+v, want web with count 3 at index %d", job, reg.JobModifyIndex)
	}

	ev := a.waitEval(reg.EvalID)
	if ev.Status != api.EvalStatusComplete {
		t.Errorf("register eval status %q, want complete (no nodes: placements fail, a blocked eval follows)", ev.Status)
	}

	var evals []*api.Evaluation
	a.ok("GET", "/v1/job/web/evaluations", nil, &evals)
	found := false
	for _, e := range evals {
		found = found || e.ID == reg.EvalID
	}
	if !found {
		t.Errorf("GET /v1/job/web/evaluations = %d evals without the register eval %s", len(evals), reg.EvalID)
	}

	var allocs []*api.AllocListStub
	r = a.ok("GET", "/v1/job/web/allocations", nil, &allocs)
	if string(r.body) == "null\n" || len(allocs) != 0 {
		t.Errorf("GET /v1/job/web/allocations = %s, want [] (no nodes)", r.body)
	}

	var sum api.JobSummary
	a.ok("GET", "/v1/job/web/summary", nil, &sum)
	if sum.JobID != "web" {
		t.Errorf("summary = %+v, want JobID web", sum)
	}

	// Update through POST /v1/job/{id}: a second version.
	job2 := webJob(2)
	var up api.JobRegisterResponse
	r = a.ok("POST", "/v1/job/web", job2, &up)
	if up.Index > 0 && headerIndex(t, r) != up.Index {
		t.Errorf("write %s header %d, want the answer's Index %d", api.HeaderIndex, headerIndex(t, r), up.Index)
	}
	if up.JobModifyIndex <= reg.JobModifyIndex {
		t.Errorf("update JobModifyIndex %d, want > %d", up.JobModifyIndex, reg.JobModifyIndex)
	}
	var vs api.JobVersionsResponse
	a.ok("GET", "/v1/job/web/versions", nil, &vs)
	if len(vs.Versions) != 2 || vs.Versions[0].Version != 1 {
		t.Errorf("versions = %d (newest %+v), want 2, newest version 1", len(vs.Versions), vs.Versions)
	}

	// Plan: no commit.
	var plan api.JobPlanResponse
	a.ok("POST", "/v1/job/web/plan", map[string]any{"Job": webJob(5)["Job"], "Diff": true}, &plan)
	if plan.Diff == nil || plan.Diff.Type != api.DiffTypeEdited {
		t.Errorf("plan diff = %+v, want Edited", plan.Diff)
	}
	if len(plan.FailedTGAllocs) == 0 {
		t.Errorf("plan FailedTGAllocs empty, want the group web (no nodes)")
	}
	a.ok("GET", "/v1/job/web", nil, &job)
	if job.TaskGroups[0].Count != 2 {
		t.Errorf("after plan, count = %d, want 2 (plan must not commit)", job.TaskGroups[0].Count)
	}

	var evr api.JobEvaluateResponse
	a.ok("POST", "/v1/job/web/evaluate", "{}", &evr)
	if evr.EvalID == "" {
		t.Errorf("evaluate answered %+v, want an EvalID", evr)
	}

	// Stop, then purge.
	var dr api.JobDeregisterResponse
	a.ok("DELETE", "/v1/job/web", nil, &dr)
	a.ok("GET", "/v1/job/web", nil, &job)
	if !job.Stop {
		t.Errorf("after DELETE, job.Stop = false, want true")
	}
	a.ok("DELETE", "/v1/job/web?purge=true", nil, &dr)
	a.fails("GET", "/v1/job/web", nil, nethttp.StatusNotFound, "job_not_found")
}

func TestJobParse(t *testing.T) {
	a := newTestAPI(t)
	hcl := `job "p" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = var.cmd }
    }
  }
}
variable "cmd" { default = "/bin/true" }
`
	var job api.Job
	a.ok("POST", "/v1/jobs/parse", &api.JobsParseRequest{JobHCL: hcl, VariableArgs: map[string]string{"cmd": "/bin/date"}, Canonicalize: true}, &job)
	if job.ID != "p" || len(job.TaskGroups) != 1 || job.TaskGroups[0].Tasks[0].Config["command"] != "/bin/date" {
		t.Fatalf("parse = %+v, want job p with command /bin/date", job)
	}
	e := a.fails("POST", "/v1/jobs/parse", &api.JobsParseRequest{JobHCL: "job \"x\" {\n  group \"g\" {\n    count = \"many\"\n  }\n}\n"}, nethttp.StatusBadRequest, "invalid_job")
	if !strings.Contains(e.Message, "job.hcl:3") {
		t.Errorf("parse error %q does not point at job.hcl:3", e.Message)
	}
	a.fails("POST", "/v1/jobs/parse", &api.JobsParseRequest{}, nethttp.StatusBadRequest, "bad_request")
}

func TestBadInput(t *testing.T) {
	a := newTestAPI(t)
	reg := a.register(webJob(1))
	big := `{"Job":{"ID":"` + strings.Repeat("x", 9<<20) + `"}}`
	neg := webJob(-1)
	mismatch := webJob(1)
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"malformed JSON", "PUT", "/v1/jobs", `{"Job":`, 400, "bad_request"},
		{"not JSON", "PUT", "/v1/jobs", `hello`, 400, "bad_request"},
		{"empty body", "PUT", "/v1/jobs", ``, 400, "bad_request"},
		{"unknown field", "POST", "/v1/node/n1/eligibility", `{"Eligibility":"eligible","Bogus":1}`, 400, "bad_request"},
		{"wrong type", "PUT", "/v1/jobs", `{"Job":{"ID":"a","TaskGroups":[{"Name":"g","Count":"three"}]}}`, 400, "bad_request"},
		{"trailing data", "PUT", "/v1/jobs", `{"Job":{"ID":"a"}} {}`, 400, "bad_request"},
		{"no job", "PUT", "/v1/jobs", `{}`, 400, "bad_request"},
		{"negative count", "PUT", "/v1/jobs", neg, 400, "invalid_job"},
		{"body over 8 MiB", "PUT", "/v1/jobs", big, 413, "body_too_large"},
		{"id mismatch", "POST", "/v1/job/other", mismatch, 400, "bad_request"},
		{"enforce index conflict", "PUT", "/v1/jobs", map[string]any{"Job": webJob(1)["Job"], "EnforceIndex": true, "JobModifyIndex": reg.JobModifyIndex + 100}, 409, "index_conflict"},
		{"unknown job", "GET", "/v1/job/nope", nil, 404, "job_not_found"},
		{"unknown job allocs", "GET", "/v1/job/nope/allocations", nil, 404, "job_not_found"},
		{"unknown job evals", "GET", "/v1/job/nope/evaluations", nil, 404, "job_not_found"},
		{"unknown job versions", "GET", "/v1/job/nope/versions", nil, 404, "job_not_found"},
		{"unknown job summary", "GET", "/v1/job/nope/summary", nil, 404, "job_not_found"},
		{"deregister unknown job", "DELETE", "/v1/job/nope", nil, 404, "job_not_found"},
		{"evaluate unknown job", "POST", "/v1/job/nope/evaluate", `{}`, 404, "job_not_found"},
		{"unknown node", "GET", "/v1/node/nope", nil, 404, "node_not_found"},
		{"unknown node allocs", "GET", "/v1/node/nope/allocations", nil, 404, "node_not_found"},
		{"unknown alloc", "GET", "/v1/allocation/00000000-0000-0000-0000-000000000000", nil, 404, "alloc_not_found"},
		{"stop unknown alloc", "POST", "/v1/allocation/00000000-0000-0000-0000-000000000000/stop", `{}`, 404, "alloc_not_found"},
		{"unknown eval", "GET", "/v1/evaluation/00000000-0000-0000-0000-000000000000", nil, 404, "eval_not_found"},
		{"unknown eval allocs", "GET", "/v1/evaluation/zzzz/allocations", nil, 404, "eval_not_found"},
		{"unknown path", "GET", "/v1/nothing", nil, 404, "not_found"},
		{"method not allowed", "PATCH", "/v1/jobs", `{}`, 405, "method_not_allowed"},
		{"method not allowed on job", "PUT", "/v1/job/web/summary", `{}`, 405, "method_not_allowed"},
		{"bad index", "GET", "/v1/jobs?index=abc", nil, 400, "bad_request"},
		{"bad wait", "GET", "/v1/jobs?index=1&wait=forever", nil, 400, "bad_request"},
		{"bad purge", "DELETE", "/v1/job/web?purge=maybe", nil, 400, "bad_request"},
		{"bad topic", "GET", "/v1/event/stream?topic=Bogus:x", nil, 400, "bad_request"},
		{"bad eligibility", "POST", "/v1/node/n1/eligibility", `{"Eligibility":"sometimes"}`, 400, "bad_request"},
		{"drain id mismatch", "POST", "/v1/node/n1/drain", `{"NodeID":"n2"}`, 400, "bad_request"},
		{"register without node", "PUT", "/v1/node/register", `{}`, 400, "bad_request"},
		{"register without secret", "PUT", "/v1/node/register", `{"Node":{"ID":"n1"}}`, 400, "bad_request"},
		{"alloc update without ID", "PUT", "/v1/node/n1/allocations/update", `{"Allocs":[{}]}`, 400, "bad_request"},
		{"plan without job", "POST", "/v1/job/web/plan", `{}`, 400, "bad_request"},
		{"parse malformed", "POST", "/v1/jobs/parse", `{"JobHCL":`, 400, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.t = t
			a.fails(tc.method, tc.path, tc.body, tc.status, tc.code)
		})
	}
	a.t = t
	r := a.do("PATCH", "/v1/jobs", `{}`)
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "PUT") {
		t.Errorf("405 Allow header = %q, want GET and PUT", allow)
	}
	// Nothing was lost or changed by the bad requests.
	var job api.Job
	a.ok("GET", "/v1/job/web", nil, &job)
	if job.JobModifyIndex != reg.JobModifyIndex {
		t.Errorf("job modified by rejected requests: index %d, want %d", job.JobModifyIndex, reg.JobModifyIndex)
	}
}

// TestRegisterNomadFields: job JSON from Nomad tooling carries blocks
// drover does not support (Vault, Consul, Volumes ...). Like Nomad, the job
// is accepted; unlike a silent drop, the answer names every ignored field.
func TestRegisterNomadFields(t *testing.T) {
	a := newTestAPI(t)
	body := webJob(1)
	job := body["Job"].(map[string]any)
	job["ConsulToken"] = ""
	job["Multiregion"] = nil // supported: no warning
	tg := job["TaskGroups"].([]any)[0].(map[string]any)
	tg["Volumes"] = map[string]any{"models": map[string]any{"Type": "host", "Source": "models"}} // supported: no warning
	tg["Scaling"] = map[string]any{"Min": 1, "Max": 3, "Enabled": true}
	task := tg["Tasks"].([]any)[0].(map[string]any)
	task["Vault"] = map[string]any{"Policies": []string{"p"}}
	task["Resources"].(map[string]any)["IOPS"] = 0
	task["Config"].(map[string]any)["anything_goes"] = true // driver config is free-form
	task["Meta"] = map[string]any{"free": "form"}
	out := a.register(body)
	for _, f := range []string{"Job.ConsulToken",
		"Job.TaskGroups[0].Tasks[0].Vault", "Job.TaskGroups[0].Tasks[0].Resources.IOPS"} {
		if !strings.Contains(out.Warnings, f) {
			t.Errorf("Warnings %q do not name %s", out.Warnings, f)
		}
	}
	for _, f := range []string{"anything_goes", "free", "Scaling", "Volumes", "Multiregion"} {
		if strings.Contains(out.Warnings, f) {
			t.Errorf("Warnings %q name %s, a free-form key", out.Warnings, f)
		}
	}
	var got api.Job
	a.ok("GET", "/v1/job/web", nil, &got)
	if got.TaskGroups[0].Tasks[0].Config["anything_goes"] != true {
		t.Errorf("registered job lost its config: %v", got.TaskGroups[0].Tasks[0].Config)
	}
	var plan api.JobPlanResponse
	a.ok("POST", "/v1/job/web/plan", body, &plan)
	if !strings.Contains(plan.Warnings, "Job.TaskGroups[0].Tasks[0].Vault") {
		t.Errorf("plan Warnings %q do not name the Vault block", plan.Warnings)
	}
}
