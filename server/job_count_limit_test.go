package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

func withJobMaxGroupCount(n int) serverOpt { return func(cfg *Config) { cfg.JobMaxGroupCount = n } }

// wantCountLimit checks err is a 400 invalid_job naming the group, the
// count and the bound.
func wantCountLimit(t *testing.T, what string, err error, group string, count, limit int) {
	t.Helper()
	want := fmt.Sprintf("group %q: count %d is above the server's limit of %d", group, count, limit)
	if err == nil {
		t.Errorf("%s: no error, want a 400 invalid_job saying %q", what, want)
		return
	}
	if e := api.AsError(err); !errors.Is(err, api.ErrInvalidJob) || e.Status != 400 || !strings.Contains(e.Message, want) {
		t.Errorf("%s: err %v, want a 400 invalid_job saying %q", what, err, want)
	}
}

// storeJob writes a job as an older server would have, without the
// endpoints' checks (a state restored from before the bound).
func storeJob(t *testing.T, s *Server, j *api.Job) {
	t.Helper()
	j.Canonicalize()
	var eval *api.Evaluation
	if !j.IsParameterized() && !j.IsPeriodic() {
		eval = s.core.newJobEval(j, api.EvalTriggerJobRegister)
	}
	if _, err := s.core.applyJobRegister(context.Background(), j, eval); err != nil {
		t.Fatalf("store job %s: %v", j.ID, err)
	}
}

// TestJobMaxGroupCountEndpoints: every way to set a group's count
// (register, plan, scale, revert, dispatch, a periodic force, a register
// preserving a stored count) is refused above the server's
// JobMaxGroupCount with a 400 naming the group, the count and the bound;
// the bound itself is allowed.
func TestJobMaxGroupCountEndpoints(t *testing.T) {
	const limit = 10
	s := newTestServer(t, withJobMaxGroupCount(limit))
	ctx := context.Background()
	registerNode(t, s, testNode("a", 8000, 16384))

	_, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("web", limit+1, 10, 16)})
	wantCountLimit(t, "register", err, "web", limit+1, limit)
	_, err = s.Jobs().PlanJob(ctx, &api.JobPlanRequest{Job: testJob("web", 2_000_000_000, 10, 16)})
	wantCountLimit(t, "plan", err, "web", 2_000_000_000, limit)
	if _, err := s.Jobs().PlanJob(ctx, &api.JobPlanRequest{Job: testJob("web", limit, 10, 16)}); err != nil {
		t.Errorf("plan at the bound: %v", err)
	}

	job := testJob("web", 1, 10, 16)
	job.TaskGroups[0].Scaling = &api.ScalingPolicy{Min: 1, Max: 5}
	registerJob(t, s, job) // version 0
	big := int64(2_000_000_000)
	_, err = s.Jobs().ScaleJob(ctx, api.DefaultNamespace, "web", &api.JobScaleRequest{Target: api.ScalingTarget{"Group": "web"}, Count: &big})
	if !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "scaling policy") {
		t.Errorf("scale outside the scaling policy: %v, want a bad request naming the policy", err)
	}
	job.TaskGroups[0].Scaling = nil
	registerJob(t, s, job) // version 1, no scaling block
	_, err = s.Jobs().ScaleJob(ctx, api.DefaultNamespace, "web", &api.JobScaleRequest{Target: api.ScalingTarget{"Group": "web"}, Count: &big})
	wantCountLimit(t, "scale", err, "web", 2_000_000_000, limit)
	over := int64(limit + 1)
	_, err = s.Jobs().ScaleJob(ctx, api.DefaultNamespace, "web", &api.JobScaleRequest{Target: api.ScalingTarget{"Group": "web"}, Count: &over})
	wantCountLimit(t, "scale", err, "web", limit+1, limit)
	at := int64(limit)
	if _, err := s.Jobs().ScaleJob(ctx, api.DefaultNamespace, "web", &api.JobScaleRequest{Target: api.ScalingTarget{"Group": "web"}, Count: &at}); err != nil {
		t.Errorf("scale to the bound: %v", err)
	}

	// A version stored above the bound (before it was set) is not
	// registered again: not by a revert, not by a register that
	// preserves counts.
	storeJob(t, s, testJob("web", 50, 10, 16))
	cur, _ := s.State().JobByID(nil, api.DefaultNamespace, "web")
	registerJob(t, s, testJob("web", 1, 20, 16))
	_, err = s.Jobs().RevertJob(ctx, api.DefaultNamespace, "web", &api.JobRevertRequest{JobVersion: cur.Version})
	wantCountLimit(t, "revert", err, "web", 50, limit)
	storeJob(t, s, testJob("web", 50, 10, 16))
	_, err = s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("web", 1, 30, 16), PreserveCounts: true})
	wantCountLimit(t, "register preserving counts", err, "web", 50, limit)

	// Templates stored above the bound launch nothing.
	tmpl := testJob("report", 50, 10, 16)
	tmpl.Type = api.JobTypeBatch
	tmpl.ParameterizedJob = &api.ParameterizedJobConfig{}
	storeJob(t, s, tmpl)
	_, err = s.Jobs().DispatchJob(ctx, api.DefaultNamespace, "report", nil)
	wantCountLimit(t, "dispatch", err, "web", 50, limit)
	cron := testJob("cron", 50, 10, 16)
	cron.Type = api.JobTypeBatch
	cron.Periodic = &api.PeriodicConfig{Enabled: true, Spec: "0 0 1 1 *"}
	storeJob(t, s, cron)
	_, err = s.Jobs().ForcePeriodic(ctx, api.DefaultNamespace, "cron")
	wantCountLimit(t, "periodic force", err, "web", 50, limit)

	// System jobs read the count too (fair-share demand, summaries).
	sys := testJob("sys", limit+1, 10, 16)
	sys.Type = api.JobTypeSystem
	_, err = s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: sys})
	wantCountLimit(t, "register a system job", err, "web", limit+1, limit)
}

// TestJobMaxGroupCountDefault: without the setting the bound is
// scheduler.DefaultMaxGroupCount, and a group of exactly that many (what
// the benchmarks place) is allowed.
func TestJobMaxGroupCountDefault(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("a", 8000, 16384))
	if _, err := s.Jobs().PlanJob(ctx, &api.JobPlanRequest{Job: testJob("web", scheduler.DefaultMaxGroupCount, 10, 16)}); err != nil {
		t.Errorf("plan of %d: %v", scheduler.DefaultMaxGroupCount, err)
	}
	_, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: testJob("web", 2_000_000_000, 10, 16)})
	wantCountLimit(t, "register", err, "web", 2_000_000_000, scheduler.DefaultMaxGroupCount)
}

// TestWorkerLeavesStoredGroupOverLimit: the workers schedule with the
// server's bound: a job stored above it (from before the bound) places
// nothing and its eval says why, with no blocked eval.
func TestWorkerLeavesStoredGroupOverLimit(t *testing.T) {
	s := newTestServer(t, withJobMaxGroupCount(10))
	registerNode(t, s, testNode("a", 8000, 16384))
	storeJob(t, s, testJob("web", 50, 10, 16)) // 50 would fit on the node
	evals, err := s.State().EvalsByJob(nil, api.DefaultNamespace, "web")
	if err != nil || len(evals) != 1 {
		t.Fatalf("evals %v, %v", evals, err)
	}
	e := waitEvalStatus(t, s, evals[0].ID, api.EvalStatusComplete)
	m := e.FailedTGAllocs["web"]
	if m == nil || len(m.Reasons) != 1 || m.Reasons[0].Kind != api.PendingCountLimit ||
		!strings.Contains(m.Reasons[0].Message, `group "web" count 50 is above the server's limit of 10`) {
		t.Errorf("eval failures %+v, want web's count-limit reason", e.FailedTGAllocs)
	}
	if e.BlockedEval != "" {
		t.Errorf("blocked eval %s, want none", e.BlockedEval)
	}
	if live, _ := liveAllocs(s, nil, "web"); len(live) != 0 {
		t.Errorf("%d allocs placed, want none", len(live))
	}
}
