package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// newDeployTestServer is a server on a fake clock with 3 nodes. Heartbeat
// TTLs and nack timeouts are long, so advancing the clock through a
// rollout neither downs the nodes nor redelivers evals.
func newDeployTestServer(t *testing.T) (*Server, *clock.Fake, []string) {
	t.Helper()
	clk := clock.NewFake(testT0)
	s := newTestServer(t, withClock(clk), func(c *Config) {
		c.HeartbeatTTLMin = 24 * time.Hour
		c.NackTimeout = 24 * time.Hour
	})
	var nodes []string
	for i := range 3 {
		n := testNode(fmt.Sprintf("node-%d", i), 4000, 8192)
		registerNode(t, s, n)
		nodes = append(nodes, n.ID)
	}
	return s, clk, nodes
}

// rollingJob is a service job with count 4 updated one alloc at a time.
func rollingJob(arg string, autoRevert bool) *api.Job {
	j := testJob("web", 4, 100, 64)
	j.Update = &api.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second, AutoRevert: autoRevert}
	j.TaskGroups[0].Tasks[0].Config["args"] = []any{arg}
	return j
}

// reportTasks plays the clients: every alloc reports status with its task
// in state (running since at, or dead and failed).
func reportTasks(t *testing.T, s *Server, status string, at time.Time, allocs ...*api.Allocation) {
	t.Helper()
	for _, a := range allocs {
		ts := &api.TaskState{State: api.TaskStateRunning, StartedAt: at}
		if status == api.AllocClientStatusFailed {
			ts = &api.TaskState{State: api.TaskStateDead, Failed: true, StartedAt: at, FinishedAt: at}
		}
		up := &api.Allocation{ID: a.ID, ClientStatus: status, TaskStates: map[string]*api.TaskState{"srv": ts}}
		if _, err := s.Nodes().UpdateAllocsFromClient(context.Background(), a.NodeID, "secret-"+a.NodeID, []*api.Allocation{up}); err != nil {
			t.Fatalf("update alloc %s from client: %v", a.ID, err)
		}
	}
}

// waitVersions waits until the job has 4 live allocs of which exactly n
// run version v, and returns those n.
func waitVersions(t *testing.T, s *Server, v uint64, n int) []*api.Allocation {
	t.Helper()
	var got []*api.Allocation
	waitState(t, s, fmt.Sprintf("%d live allocs at version %d", n, v), func(ws memdb.WatchSet) (bool, error) {
		live, err := liveAllocs(s, ws, "web")
		got = got[:0]
		for _, a := range live {
			if a.Job.Version == v {
				got = append(got, a)
			}
		}
		return len(live) == 4 && len(got) == n, err
	})
	return got
}

// waitDeployment waits for the deployment of a job version to reach status.
func waitDeployment(t *testing.T, s *Server, version uint64, status string) *api.Deployment {
	t.Helper()
	var d *api.Deployment
	waitState(t, s, fmt.Sprintf("deployment of version %d %s", version, status), func(ws memdb.WatchSet) (bool, error) {
		ds, err := s.State().DeploymentsByJobID(ws, api.DefaultNamespace, "web")
		for _, x := range ds {
			if x.JobVersion == version {
				d = x
				return x.Status == status, err
			}
		}
		return false, err
	})
	return d
}

func waitStable(t *testing.T, s *Server, version uint64) {
	t.Helper()
	waitState(t, s, fmt.Sprintf("version %d stable", version), func(ws memdb.WatchSet) (bool, error) {
		j, err := s.State().JobVersionByID(ws, api.DefaultNamespace, "web", version)
		return j != nil && j.Stable, err
	})
}

// deployV0 runs version 0 to a successful, stable deployment.
func deployV0(t *testing.T, s *Server, clk *clock.Fake, autoRevert bool) {
	t.Helper()
	registerJob(t, s, rollingJob("v0", autoRevert))
	v0 := waitVersions(t, s, 0, 4)
	reportTasks(t, s, api.AllocClientStatusRunning, clk.Now(), v0...)
	clk.Advance(10 * time.Second)
	waitDeployment(t, s, 0, api.DeploymentStatusSuccessful)
	waitStable(t, s, 0)
}

func TestDeploymentWatcherRollingUpdate(t *testing.T) {
	s, clk, _ := newDeployTestServer(t)
	deployV0(t, s, clk, false)

	registerJob(t, s, rollingJob("v1", false))
	for step := 1; step <= 4; step++ {
		v1 := waitVersions(t, s, 1, step)
		var fresh []*api.Allocation
		for _, a := range v1 {
			if a.ClientStatus == api.AllocClientStatusPending {
				fresh = append(fresh, a)
			}
		}
		if len(fresh) != 1 {
			t.Fatalf("step %d: %d new pending allocs, want 1 (max_parallel)", step, len(fresh))
		}
		start := clk.Now()
		reportTasks(t, s, api.AllocClientStatusRunning, start, fresh...)
		// Not yet healthy: half of min_healthy_time places nothing.
		clk.Advance(5 * time.Second)
		if live := waitVersions(t, s, 1, step); len(live) != step {
			t.Fatalf("step %d: %d allocs at v1 before min_healthy_time, want %d", step, len(live), step)
		}
		d := waitDeployment(t, s, 1, api.DeploymentStatusRunning)
		if got := d.TaskGroups["web"].HealthyAllocs; got != step-1 {
			t.Fatalf("step %d: HealthyAllocs = %d before min_healthy_time, want %d", step, got, step-1)
		}
		clk.Advance(5 * time.Second)
		waitState(t, s, fmt.Sprintf("step %d alloc healthy", step), func(ws memdb.WatchSet) (bool, error) {
			a, err := s.State().AllocByID(ws, fresh[0].ID)
			ok := a != nil && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy
			return ok, err
		})
	}
	d := waitDeployment(t, s, 1, api.DeploymentStatusSuccessful)
	waitStable(t, s, 1)
	st := d.TaskGroups["web"]
	if st.DesiredTotal != 4 || st.PlacedAllocs != 4 || st.HealthyAllocs != 4 || st.UnhealthyAllocs != 0 {
		t.Fatalf("deployment counters = desired %d placed %d healthy %d unhealthy %d, want 4/4/4/0",
			st.DesiredTotal, st.PlacedAllocs, st.HealthyAllocs, st.UnhealthyAllocs)
	}
	// Every deployment-watcher eval belongs to a deployment of the job.
	evals, err := s.State().EvalsByJob(nil, api.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evals {
		if e.TriggeredBy == api.EvalTriggerDeploymentWatcher {
			n++
			if e.DeploymentID == "" {
				t.Errorf("eval %s from the watcher has no DeploymentID", e.ID)
			}
		}
	}
	if n < 5 { // one for v0, one per v1 batch
		t.Errorf("%d deployment-watcher evals, want >= 5", n)
	}
}

func TestDeploymentWatcherAutoRevert(t *testing.T) {
	s, clk, _ := newDeployTestServer(t)
	deployV0(t, s, clk, true)

	registerJob(t, s, rollingJob("v1", true))
	v1 := waitVersions(t, s, 1, 1)
	reportTasks(t, s, api.AllocClientStatusFailed, clk.Now(), v1...)

	// The scheduler or the watcher fails the deployment (whichever sees
	// the failed alloc first); the watcher reverts in the same write as
	// its verdict and description.
	var job *api.Job
	waitState(t, s, "job reverted", func(ws memdb.WatchSet) (bool, error) {
		var err error
		job, err = s.State().JobByID(ws, api.DefaultNamespace, "web")
		return job != nil && job.Version == 2, err
	})
	d := waitDeployment(t, s, 1, api.DeploymentStatusFailed)
	if !strings.Contains(d.StatusDescription, "rolling back to job version 0") {
		t.Errorf("failed deployment description = %q, want the rollback named", d.StatusDescription)
	}
	if got := d.TaskGroups["web"].UnhealthyAllocs; got != 1 {
		t.Errorf("UnhealthyAllocs = %d, want 1", got)
	}
	if got := job.TaskGroups[0].Tasks[0].Config["args"]; fmt.Sprint(got) != "[v0]" {
		t.Fatalf("reverted job args = %v, want [v0]", got)
	}
	// The old allocs move to version 2 in place; the failed one is
	// replaced at once, without its reschedule delay: version 2 runs
	// other tasks than the failed alloc's version 1, and a new version
	// is not a reschedule (no clock advance here).
	for _, a := range waitVersions(t, s, 2, 4) {
		if a.PreviousAllocation == v1[0].ID && a.RescheduleTracker != nil && len(a.RescheduleTracker.Events) > 0 {
			t.Errorf("replacement of the failed alloc has reschedule events %+v: a new version is not a reschedule", a.RescheduleTracker.Events)
		}
	}
}

func TestDeploymentWatcherHealthyDeadline(t *testing.T) {
	s, clk, _ := newDeployTestServer(t)
	deployV0(t, s, clk, false)
	registerJob(t, s, rollingJob("v1", false))
	waitVersions(t, s, 1, 1)
	// The new alloc never reports running: healthy_deadline (5 min by
	// default) fails it and the deployment, without a revert.
	clk.Advance(5 * time.Minute)
	d := waitDeployment(t, s, 1, api.DeploymentStatusFailed)
	if !strings.Contains(d.StatusDescription, "unhealthy") || strings.Contains(d.StatusDescription, "rolling back") {
		t.Errorf("description = %q, want an unhealthy alloc and no rollback", d.StatusDescription)
	}
	if j, _ := s.State().JobByID(nil, api.DefaultNamespace, "web"); j.Version != 1 {
		t.Errorf("job version = %d, want 1 (no auto_revert)", j.Version)
	}
}

func TestDeploymentEndpoints(t *testing.T) {
	s, clk, _ := newDeployTestServer(t)
	deployV0(t, s, clk, true)
	ctx := context.Background()
	old := waitDeployment(t, s, 0, api.DeploymentStatusSuccessful)
	if _, err := s.Deployments().FailDeployment(ctx, old.ID); !errors.Is(err, api.ErrConflict) {
		t.Errorf("fail a successful deployment: err = %v, want ErrConflict", err)
	}
	if _, err := s.Deployments().PauseDeployment(ctx, "nope", true); !errors.Is(err, api.ErrDeploymentNotFound) {
		t.Errorf("pause a missing deployment: err = %v, want ErrDeploymentNotFound", err)
	}
	registerJob(t, s, rollingJob("v1", true))
	v1 := waitVersions(t, s, 1, 1)
	d := waitDeployment(t, s, 1, api.DeploymentStatusRunning)

	if _, err := s.Deployments().PauseDeployment(ctx, d.ID, true); err != nil {
		t.Fatalf("pause: %v", err)
	}
	waitDeployment(t, s, 1, api.DeploymentStatusPaused)
	// Paused: a running alloc past min_healthy_time gets no verdict.
	reportTasks(t, s, api.AllocClientStatusRunning, clk.Now(), v1...)
	clk.Advance(time.Minute)
	if a, _ := s.State().AllocByID(nil, v1[0].ID); a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil {
		t.Fatalf("paused deployment: alloc got a verdict %v", *a.DeploymentStatus.Healthy)
	}
	if _, err := s.Deployments().PromoteDeployment(ctx, d.ID, []string{"nope"}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("promote an unknown group: err = %v, want ErrBadRequest", err)
	}
	if _, err := s.Deployments().PauseDeployment(ctx, d.ID, false); err != nil {
		t.Fatalf("resume: %v", err)
	}
	// Resumed: the alloc is judged (running for a minute: healthy) and
	// the rollout goes on.
	waitVersions(t, s, 1, 2)

	resp, err := s.Deployments().FailDeployment(ctx, d.ID)
	if err != nil {
		t.Fatalf("fail: %v", err)
	}
	if resp.RevertedJobVersion == nil || *resp.RevertedJobVersion != 0 {
		t.Errorf("RevertedJobVersion = %v, want 0", resp.RevertedJobVersion)
	}
	got := waitDeployment(t, s, 1, api.DeploymentStatusFailed)
	if !strings.Contains(got.StatusDescription, "by the operator") {
		t.Errorf("description = %q", got.StatusDescription)
	}
}

func TestJudgeAlloc(t *testing.T) {
	t0 := testT0
	upd := &api.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
	job := &api.Job{ID: "j", TaskGroups: []*api.TaskGroup{{Name: "g", Tasks: []*api.Task{
		{Name: "main"},
		{Name: "init", Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart}},
		{Name: "side", Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststart, Sidecar: true}},
		{Name: "cleanup", Lifecycle: &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststop}},
	}}}}
	run := func(at time.Time) *api.TaskState { return &api.TaskState{State: api.TaskStateRunning, StartedAt: at} }
	done := &api.TaskState{State: api.TaskStateDead, FinishedAt: t0}
	alloc := func(status string, ts map[string]*api.TaskState) *api.Allocation {
		return &api.Allocation{Job: job, TaskGroup: "g", ClientStatus: status, CreateTime: t0.UnixNano(), TaskStates: ts}
	}
	running := map[string]*api.TaskState{"main": run(t0), "init": done, "side": run(t0.Add(2 * time.Second))}
	cases := []struct {
		name   string
		a      *api.Allocation
		now    time.Time
		want   healthVerdict
		wantAt time.Time
	}{
		{"pending: not started", alloc(api.AllocClientStatusPending, nil), t0, verdictPending, t0.Add(time.Minute)},
		{"running, too short", alloc(api.AllocClientStatusRunning, running), t0.Add(5 * time.Second), verdictPending, t0.Add(12 * time.Second)},
		{"running long enough", alloc(api.AllocClientStatusRunning, running), t0.Add(12 * time.Second), verdictHealthy, time.Time{}},
		{"sidecar not running", alloc(api.AllocClientStatusRunning, map[string]*api.TaskState{"main": run(t0)}), t0.Add(20 * time.Second), verdictPending, t0.Add(time.Minute)},
		{"restarted", alloc(api.AllocClientStatusRunning, map[string]*api.TaskState{"main": {State: api.TaskStateRunning, Restarts: 1}}), t0, verdictUnhealthy, time.Time{}},
		{"hook failed", alloc(api.AllocClientStatusRunning, map[string]*api.TaskState{"main": run(t0), "init": {State: api.TaskStateDead, Failed: true}}), t0, verdictUnhealthy, time.Time{}},
		{"exited, waiting to restart", alloc(api.AllocClientStatusPending, map[string]*api.TaskState{"main": {State: api.TaskStatePending, StartedAt: t0}}), t0.Add(time.Second), verdictUnhealthy, time.Time{}},
		{"alloc failed", alloc(api.AllocClientStatusFailed, nil), t0, verdictUnhealthy, time.Time{}},
		{"deadline passed", alloc(api.AllocClientStatusPending, nil), t0.Add(time.Minute), verdictUnhealthy, time.Time{}},
		{"healthy after the deadline would come too late", alloc(api.AllocClientStatusRunning, map[string]*api.TaskState{"main": run(t0.Add(55 * time.Second)), "side": run(t0)}), t0.Add(56 * time.Second), verdictPending, t0.Add(time.Minute)},
	}
	for _, c := range cases {
		got, at := judgeAlloc(c.a, upd, c.now, nil)
		if got != c.want || !at.Equal(c.wantAt) {
			t.Errorf("%s: got %v at %v, want %v at %v", c.name, got, at, c.want, c.wantAt)
		}
	}
}

func TestDeploymentFailedHaltsRollout(t *testing.T) {
	s, clk, _ := newDeployTestServer(t)
	deployV0(t, s, clk, false)
	registerJob(t, s, rollingJob("v1", false))
	v1 := waitVersions(t, s, 1, 1)
	reportTasks(t, s, api.AllocClientStatusFailed, clk.Now(), v1...)
	failed := waitDeployment(t, s, 1, api.DeploymentStatusFailed)
	if strings.Contains(failed.StatusDescription, "rolling back") {
		t.Errorf("description = %q without auto_revert", failed.StatusDescription)
	}
	// Later evals of the same version neither replace more old allocs
	// nor start a new deployment; the failed alloc's reschedule (after
	// its delay) is placed outside any deployment.
	resp, err := s.Jobs().EvaluateJob(context.Background(), api.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	waitEvalStatus(t, s, resp.EvalID, api.EvalStatusComplete)
	clk.Advance(time.Minute)
	var live []*api.Allocation
	waitState(t, s, "the failed alloc rescheduled", func(ws memdb.WatchSet) (bool, error) {
		var err error
		live, err = liveAllocs(s, ws, "web")
		return len(live) == 4, err
	})
	n1 := 0
	for _, a := range live {
		if a.Job.Version == 1 {
			n1++
			if a.DeploymentID != "" {
				t.Errorf("rescheduled alloc %s joined deployment %s", a.ID, a.DeploymentID)
			}
		}
	}
	if n1 != 1 {
		t.Errorf("%d live allocs at version 1, want 1 (the reschedule only)", n1)
	}
	ds, err := s.State().DeploymentsByJobID(nil, api.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].ID != failed.ID {
		t.Errorf("%d deployments, latest %s; want 2 with the failed one latest", len(ds), ds[0].ID)
	}
}

func TestDeploymentCanaryPromote(t *testing.T) {
	s, clk, _ := newDeployTestServer(t)
	ctx := context.Background()
	deployV0(t, s, clk, false)
	j := rollingJob("v1", false)
	j.Update.Canary = 1
	registerJob(t, s, j)
	// One canary next to the 4 old allocs.
	var canary *api.Allocation
	waitState(t, s, "a canary", func(ws memdb.WatchSet) (bool, error) {
		live, err := liveAllocs(s, ws, "web")
		canary = nil
		for _, a := range live {
			if a.Job.Version == 1 {
				canary = a
			}
		}
		return len(live) == 5 && canary != nil, err
	})
	if canary.DeploymentStatus == nil || !canary.DeploymentStatus.Canary {
		t.Fatalf("new alloc is not a canary: %+v", canary.DeploymentStatus)
	}
	d := waitDeployment(t, s, 1, api.DeploymentStatusRunning)
	if _, err := s.Deployments().PromoteDeployment(ctx, d.ID, nil); !errors.Is(err, api.ErrConflict) {
		t.Errorf("promote before the canary is healthy: err = %v, want ErrConflict", err)
	}
	reportTasks(t, s, api.AllocClientStatusRunning, clk.Now(), canary)
	clk.Advance(10 * time.Second)
	waitState(t, s, "canary healthy", func(ws memdb.WatchSet) (bool, error) {
		a, err := s.State().AllocByID(ws, canary.ID)
		return a != nil && a.DeploymentStatus != nil && a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy, err
	})
	// No auto_promote: the rollout waits (no progress deadline either).
	clk.Advance(time.Hour)
	if d := waitDeployment(t, s, 1, api.DeploymentStatusRunning); d.TaskGroups["web"].Promoted {
		t.Fatal("deployment promoted by itself")
	}
	if _, err := s.Deployments().PromoteDeployment(ctx, d.ID, []string{"web"}); err != nil {
		t.Fatalf("promote: %v", err)
	}
	// The canary replaces one old alloc; then one at a time.
	for step := 2; step <= 4; step++ {
		v1 := waitVersions(t, s, 1, step)
		for _, a := range v1 {
			if a.ClientStatus == api.AllocClientStatusPending {
				reportTasks(t, s, api.AllocClientStatusRunning, clk.Now(), a)
			}
		}
		clk.Advance(10 * time.Second)
	}
	waitDeployment(t, s, 1, api.DeploymentStatusSuccessful)
	waitStable(t, s, 1)
}

// With health_check = "checks" an alloc whose tasks run is healthy only
// once each of its checked services is registered and passing for
// min_healthy_time from its latest health change; on_update
// ignore_warnings accepts a warning, ignore does not wait at all.
func TestJudgeAllocChecks(t *testing.T) {
	t0 := testT0
	upd := &api.UpdateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
	check := func(onUpdate string) []*api.ServiceCheck {
		return []*api.ServiceCheck{{Type: "http", Path: "/", Interval: time.Second, Timeout: time.Second, OnUpdate: onUpdate}}
	}
	job := &api.Job{ID: "j", TaskGroups: []*api.TaskGroup{{Name: "g",
		Services: []*api.Service{{Name: "api", PortLabel: "http", Checks: check(api.OnUpdateRequireHealthy)}, {Name: "metrics", Checks: check(api.OnUpdateIgnore)}},
		Tasks: []*api.Task{{Name: "main", Services: []*api.Service{{Name: "${NOMAD_TASK_NAME}-admin", PortLabel: "admin", Checks: check(api.OnUpdateIgnoreWarnings)},
			{Name: "plain"}}}}}}}
	a := &api.Allocation{ID: "a1", JobID: "j", Job: job, TaskGroup: "g", ClientStatus: api.AllocClientStatusRunning, CreateTime: t0.UnixNano(),
		TaskStates: map[string]*api.TaskState{"main": {State: api.TaskStateRunning, StartedAt: t0}}}
	reg := func(id, health string, at time.Time) *api.ServiceRegistration {
		return &api.ServiceRegistration{ID: id, AllocID: "a1", Health: health, HealthTime: at.UnixNano()}
	}
	apiID := api.ServiceRegistrationID("a1", "g", "", "api", "http")
	adminID := api.ServiceRegistrationID("a1", "g", "main", "main-admin", "admin")
	cases := []struct {
		name   string
		regs   []*api.ServiceRegistration
		now    time.Time
		want   healthVerdict
		wantAt time.Time
	}{
		{"nothing registered", nil, t0.Add(20 * time.Second), verdictPending, t0.Add(time.Minute)},
		{"api critical", []*api.ServiceRegistration{reg(apiID, api.ServiceHealthCritical, t0), reg(adminID, api.ServiceHealthPassing, t0)}, t0.Add(20 * time.Second), verdictPending, t0.Add(time.Minute)},
		{"admin missing", []*api.ServiceRegistration{reg(apiID, api.ServiceHealthPassing, t0)}, t0.Add(20 * time.Second), verdictPending, t0.Add(time.Minute)},
		{"passing, too recently", []*api.ServiceRegistration{reg(apiID, api.ServiceHealthPassing, t0.Add(15*time.Second)), reg(adminID, api.ServiceHealthWarning, t0)}, t0.Add(20 * time.Second), verdictPending, t0.Add(25 * time.Second)},
		{"passing long enough", []*api.ServiceRegistration{reg(apiID, api.ServiceHealthPassing, t0.Add(15*time.Second)), reg(adminID, api.ServiceHealthWarning, t0)}, t0.Add(25 * time.Second), verdictHealthy, time.Time{}},
		{"never passing: deadline", []*api.ServiceRegistration{reg(apiID, api.ServiceHealthCritical, t0), reg(adminID, api.ServiceHealthPassing, t0)}, t0.Add(time.Minute), verdictUnhealthy, time.Time{}},
	}
	for _, c := range cases {
		got, at := judgeAlloc(a, upd, c.now, c.regs)
		if got != c.want || !at.Equal(c.wantAt) {
			t.Errorf("%s: got %v at %v, want %v at %v", c.name, got, at, c.want, c.wantAt)
		}
	}
	ts := *upd
	ts.HealthCheck = "task_states"
	if got, _ := judgeAlloc(a, &ts, t0.Add(20*time.Second), nil); got != verdictHealthy {
		t.Errorf("task_states ignores checks: got %v", got)
	}
}

// A stopped or purged job's active deployment (running or paused) ends
// as cancelled instead of running forever.
func TestDeploymentEndsWithItsJob(t *testing.T) {
	for _, tc := range []struct {
		name         string
		purge, pause bool
		want         string
	}{
		{"stop", false, false, "cancelled because the job was stopped"},
		{"purge", true, false, "cancelled because the job was purged"},
		{"purge paused", true, true, "cancelled because the job was purged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, clk, _ := newDeployTestServer(t)
			ctx := context.Background()
			deployV0(t, s, clk, false)
			registerJob(t, s, rollingJob("v1", false))
			waitVersions(t, s, 1, 1)
			d := waitDeployment(t, s, 1, api.DeploymentStatusRunning)
			if tc.pause {
				if _, err := s.Deployments().PauseDeployment(ctx, d.ID, true); err != nil {
					t.Fatalf("pause: %v", err)
				}
				waitDeployment(t, s, 1, api.DeploymentStatusPaused)
			}
			if _, err := s.Jobs().DeregisterJob(ctx, api.DefaultNamespace, "web", tc.purge); err != nil {
				t.Fatalf("deregister: %v", err)
			}
			got := waitDeployment(t, s, 1, api.DeploymentStatusCancelled)
			if got.StatusDescription != tc.want {
				t.Errorf("description = %q, want %q", got.StatusDescription, tc.want)
			}
		})
	}
}
