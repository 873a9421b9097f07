package scheduler

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

func TestNextDelay(t *testing.T) {
	tracker := func(n int) *api.Allocation {
		a := &api.Allocation{RescheduleTracker: &api.RescheduleTracker{}}
		for i := 0; i < n; i++ {
			a.RescheduleTracker.Events = append(a.RescheduleTracker.Events, &api.RescheduleEvent{})
		}
		return a
	}
	s := time.Second
	cases := []struct {
		fn   string
		n    int
		want time.Duration
	}{
		{"constant", 0, 5 * s}, {"constant", 4, 5 * s},
		{"exponential", 0, 5 * s}, {"exponential", 1, 10 * s}, {"exponential", 3, 40 * s}, {"exponential", 10, 60 * s},
		{"fibonacci", 0, 5 * s}, {"fibonacci", 1, 5 * s}, {"fibonacci", 2, 10 * s}, {"fibonacci", 3, 15 * s},
		{"fibonacci", 4, 25 * s}, {"fibonacci", 5, 40 * s}, {"fibonacci", 6, 60 * s},
	}
	for _, c := range cases {
		p := &api.ReschedulePolicy{Delay: 5 * s, DelayFunction: c.fn, MaxDelay: 60 * s, Unlimited: true}
		if got := nextDelay(p, tracker(c.n)); got != c.want {
			t.Errorf("%s after %d: got %v, want %v", c.fn, c.n, got, c.want)
		}
	}
}

func TestDecideRescheduleAttempts(t *testing.T) {
	job := testJob("j", api.JobTypeBatch, 1, 100, 64)
	tg := job.TaskGroups[0]
	tg.ReschedulePolicy = &api.ReschedulePolicy{Attempts: 2, Interval: time.Hour, Delay: 10 * time.Second, DelayFunction: "constant"}
	failed := &api.Allocation{ClientStatus: api.AllocClientStatusFailed, ModifyTime: testNow.UnixNano()}
	if d, at, _ := decideReschedule(job, tg, failed, "e", testNow); d != reschedLater || !at.Equal(testNow.Add(10*time.Second)) {
		t.Errorf("fresh failure: got %v at %v, want later at +10s", d, at)
	}
	if d, _, _ := decideReschedule(job, tg, failed, "e", testNow.Add(10*time.Second)); d != reschedNow {
		t.Errorf("after the delay: got %v, want now", d)
	}
	old := testNow.Add(-2 * time.Hour).UnixNano()
	failed.RescheduleTracker = &api.RescheduleTracker{Events: []*api.RescheduleEvent{{RescheduleTime: old}, {RescheduleTime: testNow.UnixNano()}}}
	if d, _, _ := decideReschedule(job, tg, failed, "e", testNow.Add(time.Minute)); d == reschedNever {
		t.Error("an attempt outside the interval was counted")
	}
	failed.RescheduleTracker.Events[0].RescheduleTime = testNow.UnixNano()
	if d, _, _ := decideReschedule(job, tg, failed, "e", testNow.Add(time.Minute)); d != reschedNever {
		t.Errorf("2 attempts used within the interval: got %v, want never", d)
	}
	yes := true
	failed.DesiredTransition.ForceReschedule = &yes
	if d, _, _ := decideReschedule(job, tg, failed, "e", testNow); d != reschedNow {
		t.Errorf("forced: got %v, want now", d)
	}
	sys := testJob("s", api.JobTypeSystem, 1, 100, 64)
	if d, _, _ := decideReschedule(sys, sys.TaskGroups[0], &api.Allocation{}, "e", testNow); d != reschedNever {
		t.Error("system allocs must not be rescheduled")
	}
}

func TestDestructiveChange(t *testing.T) {
	base := func() *api.Job {
		j := testJob("j", api.JobTypeService, 2, 500, 256)
		j.TaskGroups[0].Tasks[0].Env = map[string]string{"A": "1"}
		return j
	}
	cases := []struct {
		name   string
		change func(j *api.Job)
		want   bool
	}{
		{"nothing", func(j *api.Job) {}, false},
		{"count", func(j *api.Job) { j.TaskGroups[0].Count = 5 }, false},
		{"restart policy", func(j *api.Job) { j.TaskGroups[0].RestartPolicy = &api.RestartPolicy{Attempts: 9} }, false},
		{"update block", func(j *api.Job) { j.Update = &api.UpdateStrategy{MaxParallel: 3} }, false},
		{"kill timeout", func(j *api.Job) { j.TaskGroups[0].Tasks[0].KillTimeout = time.Minute }, false},
		{"services", func(j *api.Job) { j.TaskGroups[0].Services = []*api.Service{{Name: "x"}} }, false},
		{"env", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Env["A"] = "2" }, true},
		{"config", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "x"} }, true},
		{"driver", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Driver = "exec" }, true},
		{"cpu", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Resources.CPU = 501 }, true},
		{"devices", func(j *api.Job) {
			j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "gpu", Count: 1}}
		}, true},
		{"group meta", func(j *api.Job) { j.TaskGroups[0].Meta = map[string]string{"a": "b"} }, true},
		{"job meta", func(j *api.Job) { j.Meta = map[string]string{"a": "b"} }, true},
		{"network", func(j *api.Job) {
			j.TaskGroups[0].Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
		}, true},
		{"artifact", func(j *api.Job) {
			j.TaskGroups[0].Tasks[0].Artifacts = []*api.TaskArtifact{{GetterSource: "https://x"}}
		}, true},
		{"template", func(j *api.Job) { j.TaskGroups[0].Tasks[0].Templates = []*api.Template{{DestPath: "a"}} }, true},
		{"user", func(j *api.Job) { j.TaskGroups[0].Tasks[0].User = "nobody" }, true},
		{"constraint", func(j *api.Job) {
			j.Constraints = []*api.Constraint{{LTarget: "${attr.kernel.name}", Operand: "=", RTarget: "linux"}}
		}, true},
		{"task added", func(j *api.Job) {
			j.TaskGroups[0].Tasks = append(j.TaskGroups[0].Tasks, &api.Task{Name: "side", Driver: "exec"})
		}, true},
	}
	for _, c := range cases {
		old, nw := base(), base()
		c.change(nw)
		if got := destructiveChange(old, old.TaskGroups[0], nw, nw.TaskGroups[0]); got != c.want {
			t.Errorf("%s: destructive = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRescheduleLinks checks the fields that tie a rescheduled alloc to
// the failed one.
func TestRescheduleLinks(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("a", "dc1", 4000, 8192))
	st.addNode(testNode("b", "dc1", 4000, 8192))
	job := testJob("j", api.JobTypeBatch, 1, 100, 64)
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 0, DelayFunction: "constant"}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	first := st.liveAllocs("default", "j")[0]
	failed := first.Copy()
	failed.ClientStatus = api.AllocClientStatusFailed
	st.upsertAlloc(failed)

	res, err = Schedule(st, testEval(job, 2), Options{Now: testNow.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var next *api.Allocation
	for _, l := range res.Plan.NodeAllocation {
		next = l[0]
	}
	if next == nil {
		t.Fatal("failed alloc not rescheduled")
	}
	if next.PreviousAllocation != first.ID || next.Name != first.Name {
		t.Errorf("next = %s prev %s, want name %s prev %s", next.Name, next.PreviousAllocation, first.Name, first.ID)
	}
	wantEv := []*api.RescheduleEvent{{RescheduleTime: testNow.Add(time.Minute).UnixNano(), PrevAllocID: first.ID, PrevNodeID: first.NodeID}}
	if diff := cmp.Diff(wantEv, next.RescheduleTracker.Events); diff != "" {
		t.Errorf("tracker (-want +got):\n%s", diff)
	}
	old := res.Plan.NodeUpdate[first.NodeID]
	if len(old) != 1 || old[0].ID != first.ID || old[0].NextAllocation != next.ID {
		t.Errorf("NodeUpdate = %+v, want the failed alloc with NextAllocation %s", old, next.ID)
	}
	if next.NodeID == first.NodeID {
		t.Error("rescheduled onto the node it failed on despite an empty alternative")
	}
}

func TestJobMissingStopsAllocsAndBadEval(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("a", "dc1", 4000, 8192))
	job := testJob("j", api.JobTypeService, 2, 100, 64)
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	delete(st.jobs, "default/j")
	res, err = Schedule(st, testEval(job, 2), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Plan.NodeUpdate["node-a"]); n != 2 || res.Eval.Status != api.EvalStatusComplete {
		t.Errorf("stops = %d, eval status %q; want 2 stops, complete", n, res.Eval.Status)
	}
	if _, err := Schedule(st, &api.Evaluation{ID: "x"}, Options{}); !errors.Is(err, ErrBadEval) {
		t.Errorf("eval without job: err = %v, want ErrBadEval", err)
	}
}

func TestScheduleDeterministic(t *testing.T) {
	st := newMemState()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		st.addNode(testNode(n, "dc1", 4000, 8192))
	}
	job := testJob("j", api.JobTypeService, 7, 300, 128)
	st.upsertJob(job)
	r1, err1 := Schedule(st, testEval(job, 1), Options{Now: testNow})
	r2, err2 := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if diff := cmp.Diff(r1.Plan.NodeAllocation, r2.Plan.NodeAllocation); diff != "" {
		t.Errorf("same input, different plans:\n%s", diff)
	}
	st.index++ // a retry on a newer snapshot must not reuse alloc IDs
	r3, _ := Schedule(st, testEval(job, 1), Options{Now: testNow})
	ids := map[string]bool{}
	for _, l := range r1.Plan.NodeAllocation {
		for _, a := range l {
			ids[a.ID] = true
		}
	}
	for _, l := range r3.Plan.NodeAllocation {
		for _, a := range l {
			if ids[a.ID] {
				t.Fatalf("alloc ID %s reused on a newer snapshot", a.ID)
			}
		}
	}
}

func TestAllocFields(t *testing.T) {
	st := newMemState()
	n := testNode("a", "dc1", 4000, 8192)
	st.addNode(n)
	job := testJob("j", api.JobTypeService, 1, 250, 128)
	job.TaskGroups[0].Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http", To: 8080}}}}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Plan.NodeAllocation[n.ID][0]
	if a.Job != job || a.JobID != "j" || a.Namespace != "default" || a.TaskGroup != "web" || a.Name != "j.web[0]" ||
		a.NodeName != "a" || a.EvalID != "eval-0001-j" || a.DesiredStatus != "run" || a.ClientStatus != "pending" ||
		a.CreateTime != testNow.UnixNano() || a.ModifyTime != testNow.UnixNano() || len(a.ID) != 36 || a.ID[14] != '4' {
		t.Errorf("alloc fields wrong: %+v", a)
	}
	tr := a.AllocatedResources.Tasks["server"]
	if tr.Cpu.CpuShares != 250 || tr.Memory.MemoryMB != 128 || a.AllocatedResources.Shared.DiskMB != 100 {
		t.Errorf("resources = %+v / %+v", tr, a.AllocatedResources.Shared)
	}
	p := a.AllocatedResources.Shared.Ports
	if len(p) != 1 || p[0].Label != "http" || p[0].To != 8080 || p[0].HostIP != "10.0.0.a" ||
		p[0].Value < api.DefaultMinDynamicPort || p[0].Value > api.DefaultMaxDynamicPort {
		t.Errorf("ports = %+v", p)
	}
	if res.Plan.SnapshotIndex != st.Index() || res.Plan.EvalID != "eval-0001-j" || res.Plan.Job != job {
		t.Errorf("plan header = %+v", res.Plan)
	}
}

func TestReservedCores(t *testing.T) {
	st := newMemState()
	n := testNode("a", "dc1", 4000, 8192)
	n.NodeResources.Cpu.TotalCpuCores = 4
	st.addNode(n)
	job := testJob("j", api.JobTypeBatch, 3, 0, 64)
	job.TaskGroups[0].Tasks[0].Resources = &api.Resources{Cores: 2, MemoryMB: 64}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]uint16
	for _, a := range res.Plan.NodeAllocation[n.ID] {
		cpu := a.AllocatedResources.Tasks["server"].Cpu
		if cpu.CpuShares != 2000 {
			t.Errorf("%s: CpuShares = %d, want 2000 (2 cores x 1000 MHz)", a.Name, cpu.CpuShares)
		}
		got = append(got, cpu.ReservedCores)
	}
	if diff := cmp.Diff([][]uint16{{0, 1}, {2, 3}}, got); diff != "" {
		t.Errorf("reserved cores (-want +got):\n%s", diff)
	}
	if m := res.Eval.FailedTGAllocs["web"]; m == nil || m.NodesExhausted != 1 {
		t.Errorf("third alloc: metric %+v, want one node exhausted", m)
	}
}

// TestScheduleDoesNotMutateState runs passes that stop, update in place,
// replace destructively, reschedule and migrate, and checks that nothing
// read from the state changed (state objects are shared).
func TestScheduleDoesNotMutateState(t *testing.T) {
	st := newMemState()
	for _, n := range []string{"a", "b", "c"} {
		st.addNode(testNode(n, "dc1", 4000, 8192))
	}
	job := testJob("j", api.JobTypeService, 4, 100, 64)
	job.Update = &api.UpdateStrategy{MaxParallel: 1}
	job.TaskGroups[0].Networks = []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	live := st.liveAllocs("default", "j")
	failed := live[0].Copy()
	failed.ClientStatus = api.AllocClientStatusFailed
	st.upsertAlloc(failed)
	yes := true
	mig := live[1].Copy()
	mig.DesiredTransition.Migrate = &yes
	st.upsertAlloc(mig)
	j2 := testJob("j", api.JobTypeService, 3, 100, 64)
	j2.Update = &api.UpdateStrategy{MaxParallel: 1}
	j2.TaskGroups[0].Networks = job.TaskGroups[0].Networks
	j2.TaskGroups[0].Tasks[0].Env = map[string]string{"X": "1"}
	st.upsertJob(j2)

	before := snapshotJSON(t, st)
	for i := 0; i < 3; i++ {
		if _, err := Schedule(st, testEval(j2, 10+i), Options{Now: testNow.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(before, snapshotJSON(t, st)); diff != "" {
		t.Errorf("Schedule modified state (-before +after):\n%s", diff)
	}
}

func snapshotJSON(t *testing.T, st *memState) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"nodes": st.nodes, "allocs": st.allocs, "jobs": st.jobs, "deploys": st.deploys}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestTemplatesPlaceNothing(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("a", "dc1", 4000, 8192))
	periodic := testJob("p", api.JobTypeBatch, 1, 100, 64)
	periodic.Periodic = &api.PeriodicConfig{Enabled: true, Spec: "*/5 * * * *"}
	param := testJob("q", api.JobTypeBatch, 1, 100, 64)
	param.ParameterizedJob = &api.ParameterizedJobConfig{}
	child := testJob("q/dispatch-1", api.JobTypeBatch, 1, 100, 64)
	child.ParameterizedJob, child.Dispatched = &api.ParameterizedJobConfig{}, true
	for _, c := range []struct {
		job   *api.Job
		place int
	}{{periodic, 0}, {param, 0}, {child, 1}} {
		st.upsertJob(c.job)
		res, err := Schedule(st, testEval(c.job, 1), Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(res.Plan.NodeAllocation["node-a"]); got != c.place || res.Eval.Status != api.EvalStatusComplete {
			t.Errorf("%s: placed %d (eval %s), want %d", c.job.ID, got, res.Eval.Status, c.place)
		}
	}
}

// TestNewVersionReplacesFailedAllocNow: a failed alloc waits out its
// reschedule delay, but once the job is registered again with other
// tasks (the fix), its replacement runs the new version at once and is
// not a reschedule (no attempt used).
func TestNewVersionReplacesFailedAllocNow(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("a", "dc1", 4000, 8192))
	job := testJob("j", api.JobTypeService, 1, 100, 64)
	job.TaskGroups[0].ReschedulePolicy = &api.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "constant", Unlimited: true}
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	st.apply(res.Plan)
	failed := st.liveAllocs("default", "j")[0].Copy()
	failed.ClientStatus = api.AllocClientStatusFailed
	failed.TaskStates = map[string]*api.TaskState{"server": {State: api.TaskStateDead, Failed: true, FinishedAt: testNow}}
	st.upsertAlloc(failed)

	// The same version: the delay holds (a follow-up eval, nothing placed).
	res, err = Schedule(st, testEval(job, 2), Options{Now: testNow.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	newAllocs := func(res *Result) []*api.Allocation {
		var out []*api.Allocation
		for _, a := range placedOf(res.Plan, "j") {
			if a.ID != failed.ID { // the failed alloc itself is updated with its follow-up eval
				out = append(out, a)
			}
		}
		return out
	}
	if n := len(newAllocs(res)); n != 0 || len(res.FollowUps) != 1 {
		t.Fatalf("same version: placed %d, follow-ups %d; want 0 and 1", n, len(res.FollowUps))
	}
	st.apply(res.Plan)

	fixed := job.Copy()
	fixed.Version, fixed.JobModifyIndex = 1, 10
	fixed.TaskGroups[0].Tasks[0].Config = map[string]any{"command": "/bin/true"}
	st.upsertJob(fixed)
	res, err = Schedule(st, testEval(fixed, 3), Options{Now: testNow.Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	placed := newAllocs(res)
	if len(placed) != 1 {
		t.Fatalf("new version: placed %d, want 1 at once; failures %+v", len(placed), res.Eval.FailedTGAllocs)
	}
	next := placed[0]
	if next.Job.Version != 1 || next.PreviousAllocation != failed.ID {
		t.Errorf("placed version %d prev %q, want version 1 replacing %s", next.Job.Version, next.PreviousAllocation, failed.ID)
	}
	if next.RescheduleTracker != nil && len(next.RescheduleTracker.Events) > 0 {
		t.Errorf("tracker %+v: a new version is not a reschedule", next.RescheduleTracker.Events)
	}
}
