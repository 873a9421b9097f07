package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestDispatchJob(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	tmpl := testJob("report", 1, 100, 64)
	tmpl.Type = api.JobTypeBatch
	tmpl.ParameterizedJob = &api.ParameterizedJobConfig{Payload: "required", MetaRequired: []string{"customer"}, MetaOptional: []string{"mode"}}
	tmpl.Meta = map[string]string{"mode": "full", "team": "data"}
	if resp := registerJob(t, s, tmpl); resp.EvalID != "" {
		t.Fatalf("registering a parameterized job created eval %s", resp.EvalID)
	}

	for name, c := range map[string]struct {
		req  *api.JobDispatchRequest
		want string
	}{
		"no payload":   {&api.JobDispatchRequest{Meta: map[string]string{"customer": "x"}}, "requires a payload"},
		"missing meta": {&api.JobDispatchRequest{Payload: []byte("p")}, "missing required meta: customer"},
		"unknown meta": {&api.JobDispatchRequest{Payload: []byte("p"), Meta: map[string]string{"customer": "x", "zz": "1"}}, "zz"},
		"too big":      {&api.JobDispatchRequest{Payload: make([]byte, api.DispatchPayloadSizeLimit+1), Meta: map[string]string{"customer": "x"}}, "limit"},
	} {
		_, err := s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "report", c.req)
		if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a bad request naming %q", name, err, c.want)
		}
	}
	if _, err := s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "nope", nil); !errors.Is(err, api.ErrJobNotFound) {
		t.Errorf("dispatch of a missing job: %v", err)
	}
	plain := testJob("plain", 1, 100, 64)
	registerJob(t, s, plain)
	if _, err := s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "plain", nil); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("dispatch of a job that is not parameterized: %v", err)
	}

	resp, err := s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "report",
		&api.JobDispatchRequest{Payload: []byte("hello"), Meta: map[string]string{"customer": "acme"}, IdPrefixTemplate: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.DispatchedJobID, "report/dispatch-nightly-") || resp.EvalID == "" {
		t.Fatalf("dispatch response %+v", resp)
	}
	child, _ := s.State().JobByID(nil, api.DefaultNamespace, resp.DispatchedJobID)
	if child == nil || child.ParentID != "report" || !child.Dispatched || string(child.Payload) != "hello" {
		t.Fatalf("child job %+v", child)
	}
	if child.Meta["customer"] != "acme" || child.Meta["mode"] != "full" || child.Meta["team"] != "data" {
		t.Errorf("child meta %v, want the parent's merged with the dispatch's", child.Meta)
	}
	allocs := waitLive(t, s, resp.DispatchedJobID, 1)
	if allocs[0].NodeID != "a" {
		t.Errorf("dispatched alloc on %q", allocs[0].NodeID)
	}
}

func TestForcePeriodic(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 4000, 8192))
	job := testJob("cron", 1, 100, 64)
	job.Type = api.JobTypeBatch
	job.Periodic = &api.PeriodicConfig{Enabled: true, Spec: "0 0 1 1 *"} // once a year
	registerJob(t, s, job)
	resp, err := s.Jobs().ForcePeriodic(ctx, api.DefaultNamespace, "cron")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.DispatchedJobID, "cron"+periodicChildPrefix) || resp.EvalID == "" {
		t.Fatalf("force response %+v", resp)
	}
	waitLive(t, s, resp.DispatchedJobID, 1)
	registerJob(t, s, testJob("svc", 1, 100, 64))
	if _, err := s.Jobs().ForcePeriodic(ctx, api.DefaultNamespace, "svc"); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("force of a job that is not periodic: %v", err)
	}
}

func TestRevertAndScaleJob(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 8000, 16384))
	registerJob(t, s, testJob("web", 1, 100, 64)) // version 0
	v1 := testJob("web", 1, 100, 64)
	v1.TaskGroups[0].Tasks[0].Resources.CPU = 200
	registerJob(t, s, v1) // version 1

	if _, err := s.Jobs().RevertJob(ctx, api.DefaultNamespace, "web", &api.JobRevertRequest{JobVersion: 1}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("revert to the current version: %v", err)
	}
	if _, err := s.Jobs().RevertJob(ctx, api.DefaultNamespace, "web", &api.JobRevertRequest{JobVersion: 9}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("revert to a missing version: %v", err)
	}
	wrong := uint64(0)
	if _, err := s.Jobs().RevertJob(ctx, api.DefaultNamespace, "web", &api.JobRevertRequest{JobVersion: 0, EnforcePriorVersion: &wrong}); !errors.Is(err, api.ErrIndexConflict) {
		t.Errorf("revert enforcing a prior version that is not current: %v", err)
	}
	if _, err := s.Jobs().RevertJob(ctx, api.DefaultNamespace, "web", &api.JobRevertRequest{JobVersion: 0}); err != nil {
		t.Fatal(err)
	}
	cur, _ := s.State().JobByID(nil, api.DefaultNamespace, "web")
	if cur.Version != 2 || cur.TaskGroups[0].Tasks[0].Resources.CPU != 100 {
		t.Fatalf("after revert: version %d cpu %d, want version 2 with version 0's cpu 100", cur.Version, cur.TaskGroups[0].Tasks[0].Resources.CPU)
	}

	three := int64(3)
	resp, err := s.Jobs().ScaleJob(ctx, api.DefaultNamespace, "web", &api.JobScaleRequest{Target: api.ScalingTarget{"Group": "web"}, Count: &three})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := s.State().EvalByID(nil, resp.EvalID)
	if e == nil || e.TriggeredBy != api.EvalTriggerJobScaling {
		t.Errorf("scale eval %+v, want triggered by job-scaling", e)
	}
	waitLive(t, s, "web", 3)
	for name, req := range map[string]*api.JobScaleRequest{
		"no group":      {Count: &three},
		"unknown group": {Target: api.ScalingTarget{"Group": "db"}, Count: &three},
		"no count":      {Target: api.ScalingTarget{"Group": "web"}},
	} {
		if _, err := s.Jobs().ScaleJob(ctx, api.DefaultNamespace, "web", req); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%s: %v, want a bad request", name, err)
		}
	}
}
