package allocrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
)

func task(name string, cfg map[string]any) *api.Task {
	return &api.Task{Name: name, Driver: "fake", Config: cfg, KillTimeout: 3 * time.Second, KillSignal: "SIGINT"}
}

func newAlloc(jobType string, rp *api.RestartPolicy, tasks ...*api.Task) *api.Allocation {
	job := &api.Job{ID: "web", Name: "web", Type: jobType, Namespace: "default", Region: "global",
		Meta:       map[string]string{"team": "infra"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: tasks, RestartPolicy: rp}}}
	res := &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{}}
	for _, t := range tasks {
		res.Tasks[t.Name] = &api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 250}, Memory: api.AllocatedMemoryResources{MemoryMB: 128}}
	}
	return &api.Allocation{ID: "a0b1c2d3-0000-4000-8000-000000000001", Name: "web.g[2]", Namespace: "default", JobID: "web", Job: job,
		TaskGroup: "g", DesiredStatus: api.AllocDesiredStatusRun, AllocatedResources: res}
}

type harness struct {
	t     *testing.T
	dir   string
	db    *clientstate.DB
	store Store // db, or a wrapper of it
	procs *procTable
	clock *clock.Fake
	ar    *AllocRunner
	stop  context.CancelFunc
}

func newHarness(t *testing.T, a *api.Allocation) *harness {
	t.Helper()
	return newHarnessStore(t, a, func(db *clientstate.DB) Store { return db })
}

// newHarnessStore runs the alloc with the store wrap returns around the
// harness's client state DB.
func newHarnessStore(t *testing.T, a *api.Allocation, wrap func(*clientstate.DB) Store) *harness {
	t.Helper()
	dir := t.TempDir()
	db, err := clientstate.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &harness{t: t, dir: dir, db: db, store: wrap(db), procs: newProcs(), clock: clock.NewFake(time.Unix(1_700_000_000, 0))}
	h.start(a, false)
	return h
}

func (h *harness) start(a *api.Allocation, restore bool) {
	h.t.Helper()
	ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(h.dir, "alloc", a.ID),
		Node:    &api.Node{ID: "node-1", Name: "n1", Datacenter: "dc1", Attributes: map[string]string{"kernel.name": "linux"}},
		Drivers: map[string]drivers.Driver{"fake": newFake(h.procs)}, Clock: h.clock, Store: h.store, Restore: restore})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.ar, h.stop = ar, cancel
	go ar.Run(ctx)
	h.t.Cleanup(func() {
		ar.Kill()
		<-ar.WaitCh()
		cancel()
	})
}

// shutdown ends the runner as an agent shutdown would (tasks keep running).
func (h *harness) shutdown() {
	h.stop()
	<-h.ar.WaitCh()
}

func (h *harness) state(name string) *api.TaskState { return h.ar.Alloc().TaskStates[name] }

func (h *harness) waitState(name, want string) {
	h.t.Helper()
	testproc.Eventually(h.t, 10*time.Second, name+" "+want, func() bool { return h.state(name).State == want })
}

func (h *harness) waitStatus(want string) {
	h.t.Helper()
	testproc.Eventually(h.t, 10*time.Second, "alloc "+want, func() bool { return h.ar.Alloc().ClientStatus == want })
}

func eventTypes(s *api.TaskState) []string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Type)
	}
	return out
}

func TestLifecycleOrder(t *testing.T) {
	pre := task("pre", map[string]any{"exit_code": 0})
	pre.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart}
	side := task("side", nil)
	side.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart, Sidecar: true}
	post := task("post", map[string]any{"exit_code": 0})
	post.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststart}
	stop := task("cleanup", map[string]any{"exit_code": 0})
	stop.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststop}
	main := task("main", nil)
	h := newHarness(t, newAlloc(api.JobTypeBatch, nil, stop, main, post, side, pre))

	h.waitState("main", api.TaskStateRunning)
	h.waitState("post", api.TaskStateDead)
	if s := h.state("cleanup"); s.State != api.TaskStatePending {
		t.Fatalf("poststop task state = %s before main ended, want pending", s.State)
	}
	h.waitStatus(api.AllocClientStatusRunning)
	h.procs.Exit(t, "main", &drivers.ExitResult{})
	h.waitStatus(api.AllocClientStatusComplete)

	starts := callsMatching(h.procs.Calls(), "start")
	pos := map[string]int{}
	for i, c := range starts {
		pos[strings.TrimPrefix(c, "start ")] = i
	}
	if len(pos) != 5 {
		t.Fatalf("starts = %v, want all 5 tasks started once", starts)
	}
	for _, o := range [][2]string{{"pre", "main"}, {"side", "main"}, {"main", "post"}, {"post", "cleanup"}} {
		if pos[o[0]] > pos[o[1]] {
			t.Errorf("start order %v: %s started after %s", starts, o[0], o[1])
		}
	}
	// The sidecar was stopped when the main task finished, before poststop.
	calls := h.procs.Calls()
	si, ci := -1, -1
	for i, c := range calls {
		if strings.HasPrefix(c, "stop side ") {
			si = i
		}
		if c == "start cleanup" {
			ci = i
		}
	}
	if si < 0 || si > ci {
		t.Errorf("calls %v: want the sidecar stopped before poststop starts", calls)
	}
	a := h.ar.Alloc()
	for name, s := range a.TaskStates {
		if s.State != api.TaskStateDead || s.Failed {
			t.Errorf("task %s: state %s failed %v, want dead and not failed", name, s.State, s.Failed)
		}
	}
	if got := eventTypes(a.TaskStates["side"]); !contains(got, api.TaskMainDead) || !contains(got, api.TaskKilled) {
		t.Errorf("sidecar events = %v, want %q and %q", got, api.TaskMainDead, api.TaskKilled)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestRestartPolicyFailMode(t *testing.T) {
	rp := &api.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: 10 * time.Second, Mode: api.RestartModeFail}
	h := newHarness(t, newAlloc(api.JobTypeService, rp, task("main", nil)))
	for i := 0; i < 2; i++ {
		h.waitState("main", api.TaskStateRunning)
		h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 3})
		if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
			t.Fatalf("restart timer: %v", err)
		}
		if d, _ := h.clock.NextIn(); d != 10*time.Second {
			t.Fatalf("restart delay = %v, want 10s", d)
		}
		if h.state("main").State == api.TaskStateRunning {
			t.Fatal("task restarted before its delay")
		}
		h.clock.Advance(10 * time.Second)
	}
	h.waitState("main", api.TaskStateRunning)
	if got := h.state("main").Restarts; got != 2 {
		t.Errorf("Restarts = %d, want 2", got)
	}
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 3})
	h.waitStatus(api.AllocClientStatusFailed)
	s := h.state("main")
	if !s.Failed || s.State != api.TaskStateDead {
		t.Errorf("state = %s failed=%v, want dead and failed", s.State, s.Failed)
	}
	ev := s.Events[len(s.Events)-1]
	if ev.Type != api.TaskNotRestarting || !ev.FailsTask {
		t.Errorf("last event = %+v, want Not Restarting failing the task", ev)
	}
	var term *api.TaskEvent
	for _, e := range s.Events {
		if e.Type == api.TaskTerminated {
			term = e
		}
	}
	if term == nil || term.ExitCode != 3 {
		t.Errorf("Terminated event = %+v, want exit code 3", term)
	}
	if got := len(callsMatching(h.procs.Calls(), "start")); got != 3 {
		t.Errorf("starts = %d, want 3 (1 + 2 restarts)", got)
	}
}

func TestRestartPolicyDelayMode(t *testing.T) {
	rp := &api.RestartPolicy{Attempts: 1, Interval: 5 * time.Minute, Delay: 10 * time.Second, Mode: api.RestartModeDelay}
	h := newHarness(t, newAlloc(api.JobTypeService, rp, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 1})
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatalf("first restart timer: %v", err)
	}
	h.clock.Advance(10 * time.Second)
	h.waitState("main", api.TaskStateRunning)
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 1})
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatalf("delayed restart timer: %v", err)
	}
	// Attempts exhausted: wait until the 5 minute interval has passed.
	if d, _ := h.clock.NextIn(); d != 5*time.Minute-10*time.Second {
		t.Fatalf("delay = %v, want the rest of the interval (4m50s)", d)
	}
	s := h.state("main")
	if ev := s.Events[len(s.Events)-1]; ev.Type != api.TaskRestarting || time.Duration(ev.StartDelay) != 5*time.Minute-10*time.Second {
		t.Errorf("last event = %+v, want Restarting with the delay", ev)
	}
	h.clock.Advance(5*time.Minute - 10*time.Second)
	h.waitState("main", api.TaskStateRunning)
	if s := h.state("main"); s.Failed {
		t.Error("delay mode failed the task")
	}
}

// A stopped alloc and an evicted (preempted) one end the same way: the
// task's kill_signal, kill_timeout to exit, then the driver's kill, so
// preempted training can checkpoint.
func TestKillSequenceOnStop(t *testing.T) {
	for _, desired := range []string{api.AllocDesiredStatusStop, api.AllocDesiredStatusEvict} {
		t.Run(desired, func(t *testing.T) { killSequence(t, desired) })
	}
}

func killSequence(t *testing.T, desired string) {
	h := newHarness(t, newAlloc(api.JobTypeService, nil, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	a := h.ar.Alloc()
	a.DesiredStatus = desired
	h.ar.Update(a)
	<-h.ar.WaitCh()
	if got, want := callsMatching(h.procs.Calls(), "stop", "destroy"), []string{"stop main SIGINT 3s", "destroy main"}; !cmp.Equal(got, want) {
		t.Errorf("driver calls = %v, want %v", got, want)
	}
	s := h.state("main")
	types := eventTypes(s)
	ki, kd := -1, -1
	for i, e := range s.Events {
		if e.Type == api.TaskKilling {
			ki = i
			if e.KillTimeout != 3*time.Second {
				t.Errorf("Killing event KillTimeout = %v, want 3s", e.KillTimeout)
			}
		}
		if e.Type == api.TaskKilled {
			kd = i
		}
	}
	if ki < 0 || kd < ki {
		t.Errorf("events = %v, want Killing then Killed", types)
	}
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusComplete {
		t.Errorf("client status = %s, want complete", got)
	}
}

func TestLeaderDeathKillsSiblings(t *testing.T) {
	leader := task("leader", nil)
	leader.Leader = true
	h := newHarness(t, newAlloc(api.JobTypeBatch, nil, leader, task("helper", nil)))
	h.waitState("helper", api.TaskStateRunning)
	h.waitState("leader", api.TaskStateRunning)
	h.procs.Exit(t, "leader", &drivers.ExitResult{})
	<-h.ar.WaitCh()
	if got := eventTypes(h.state("helper")); !contains(got, api.TaskLeaderDead) || !contains(got, api.TaskKilled) {
		t.Errorf("helper events = %v, want Leader Task Dead and Killed", got)
	}
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusComplete {
		t.Errorf("client status = %s, want complete", got)
	}
}

func TestSiblingFailureKillsOthers(t *testing.T) {
	rp := &api.RestartPolicy{Attempts: 0, Mode: api.RestartModeFail}
	h := newHarness(t, newAlloc(api.JobTypeService, rp, task("a", nil), task("b", nil)))
	h.waitState("a", api.TaskStateRunning)
	h.waitState("b", api.TaskStateRunning)
	h.procs.Exit(t, "a", &drivers.ExitResult{ExitCode: 2})
	<-h.ar.WaitCh()
	if got := eventTypes(h.state("b")); !contains(got, api.TaskSiblingFailed) {
		t.Errorf("b events = %v, want %q", got, api.TaskSiblingFailed)
	}
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusFailed {
		t.Errorf("client status = %s, want failed", got)
	}
}

func TestPrestartFailureFailsAlloc(t *testing.T) {
	pre := task("pre", map[string]any{"exit_code": 1})
	pre.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart}
	rp := &api.RestartPolicy{Attempts: 0, Mode: api.RestartModeFail}
	h := newHarness(t, newAlloc(api.JobTypeBatch, rp, pre, task("main", nil)))
	<-h.ar.WaitCh()
	if got := callsMatching(h.procs.Calls(), "start"); !cmp.Equal(got, []string{"start pre"}) {
		t.Errorf("starts = %v, want only the prestart task", got)
	}
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusFailed {
		t.Errorf("client status = %s, want failed", got)
	}
	if s := h.state("main"); s.State != api.TaskStateDead {
		t.Errorf("main state = %s, want dead", s.State)
	}
}

func TestSetupEnvAndDirs(t *testing.T) {
	tk := task("web", map[string]any{"command": "/bin/app", "args": []any{"--id=${NOMAD_ALLOC_ID}", "${attr.kernel.name}", "${node.unique.name}"}})
	tk.Env = map[string]string{"GREETING": "hi ${NOMAD_TASK_NAME}"}
	tk.Templates = []*api.Template{{EmbeddedTmpl: `id={{ env "DROVER_ALLOC_ID" }} job=${NOMAD_JOB_NAME}`, DestPath: "local/app.conf", Perms: "0600"}}
	a := newAlloc(api.JobTypeService, nil, tk)
	h := newHarness(t, a)
	h.waitState("web", api.TaskStateRunning)
	ids := h.procs.Running("web")
	if len(ids) != 1 {
		t.Fatalf("running = %v", ids)
	}
	cfg := h.procs.Config(ids[0])
	allocDir := filepath.Join(h.dir, "alloc", a.ID)
	if cfg.AllocDir != allocDir || cfg.TaskDir != filepath.Join(allocDir, "web") || cfg.LogDir != filepath.Join(allocDir, "alloc", "logs") {
		t.Errorf("dirs = %s %s %s", cfg.AllocDir, cfg.TaskDir, cfg.LogDir)
	}
	for _, p := range []string{"alloc/logs", "alloc/data", "alloc/tmp", "web/local", "web/secrets", "web/tmp"} {
		if fi, err := os.Stat(filepath.Join(allocDir, p)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", p, err)
		}
	}
	if fi, _ := os.Stat(filepath.Join(allocDir, "web/secrets")); fi.Mode().Perm() != 0o700 {
		t.Errorf("secrets mode = %v, want 0700", fi.Mode().Perm())
	}
	wantArgs := []any{"--id=" + a.ID, "linux", "n1"}
	if diff := cmp.Diff(wantArgs, cfg.Config["args"]); diff != "" {
		t.Errorf("interpolated args (-want +got):\n%s", diff)
	}
	for k, v := range map[string]string{"DROVER_ALLOC_ID": a.ID, "NOMAD_ALLOC_ID": a.ID, "DROVER_TASK_DIR": filepath.Join(allocDir, "web", "local"),
		"NOMAD_ALLOC_INDEX": "2", "DROVER_NODE_NAME": "n1", "DROVER_CPU_LIMIT": "250", "NOMAD_META_team": "infra", "GREETING": "hi web"} {
		if got := cfg.Env[k]; got != v {
			t.Errorf("env %s = %q, want %q", k, got, v)
		}
	}
	b, err := os.ReadFile(filepath.Join(allocDir, "web", "local", "app.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "id="+a.ID+" job=web"; got != want {
		t.Errorf("template = %q, want %q", got, want)
	}
	if fi, _ := os.Stat(filepath.Join(allocDir, "web", "local", "app.conf")); fi.Mode().Perm() != 0o600 {
		t.Errorf("template perms = %v, want 0600", fi.Mode().Perm())
	}
}

func TestBadDriverConfigFailsTask(t *testing.T) {
	h := newHarness(t, newAlloc(api.JobTypeBatch, nil, task("web", map[string]any{"bogus": 1})))
	<-h.ar.WaitCh()
	s := h.state("web")
	if !s.Failed || !contains(eventTypes(s), api.TaskSetupFailure) {
		t.Errorf("state failed=%v events=%v, want failed with Setup Failure", s.Failed, eventTypes(s))
	}
	if got := callsMatching(h.procs.Calls(), "start"); len(got) != 0 {
		t.Errorf("starts = %v, want none", got)
	}
}

func TestInPlaceUpdateAppliesOnNextStart(t *testing.T) {
	h := newHarness(t, newAlloc(api.JobTypeService, nil, task("main", map[string]any{"command": "v1"})))
	h.waitState("main", api.TaskStateRunning)
	a := h.ar.Alloc()
	a.TaskStates = nil
	job := *a.Job
	tg := *job.TaskGroups[0]
	tk := *tg.Tasks[0]
	tk.Config = map[string]any{"command": "v2"}
	tg.Tasks = []*api.Task{&tk}
	job.TaskGroups = []*api.TaskGroup{&tg}
	job.Version = 1
	a.Job = &job
	a.AllocModifyIndex++
	h.ar.Update(a)
	if got := callsMatching(h.procs.Calls(), "start"); len(got) != 1 {
		t.Fatalf("starts after an in-place update = %v, want no restart", got)
	}
	if err := h.ar.Restart(context.Background(), "main"); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 10*time.Second, "restarted with the new config", func() bool {
		ids := h.procs.Running("main")
		return len(ids) == 1 && h.procs.Config(ids[0]).Config["command"] == "v2"
	})
	stored, err := h.db.Allocs()
	if err != nil || len(stored) != 1 || stored[0].Job.Version != 1 {
		t.Errorf("stored alloc job version = %v (%v), want 1", stored, err)
	}
}

// gatedStore holds the first write of a running task record until
// released, as a slow disk would.
type gatedStore struct {
	Store
	entered, release chan struct{}
	once             sync.Once
}

func (g *gatedStore) PutTask(allocID, task string, r *clientstate.TaskRecord) error {
	if r.State != nil && r.State.State == api.TaskStateRunning {
		g.once.Do(func() {
			close(g.entered)
			<-g.release
		})
	}
	return g.Store.PutTask(allocID, task, r)
}

// A task is reported running only once its record, handle included, is on
// disk: an agent killed right after the report reattaches the task instead
// of starting a second copy.
func TestRunningReportedOnlyWhenPersisted(t *testing.T) {
	gate := &gatedStore{entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarnessStore(t, newAlloc(api.JobTypeService, nil, task("web", nil)), func(db *clientstate.DB) Store {
		gate.Store = db
		return gate
	})
	<-gate.entered // started, running in memory, its record not yet written
	if got := h.procs.Running("web"); len(got) != 1 {
		t.Fatalf("running processes = %v, want the started task", got)
	}
	if s := h.state("web"); s.State == api.TaskStateRunning {
		t.Errorf("reported %s before the record with the handle was written", s.State)
	}
	if st := h.ar.Alloc().ClientStatus; st == api.AllocClientStatusRunning {
		t.Errorf("alloc reported %s before the task's record was written", st)
	}
	close(gate.release)
	h.waitState("web", api.TaskStateRunning)
	rec, err := h.db.Task(h.ar.Alloc().ID, "web")
	if err != nil || rec == nil || rec.Handle == nil || rec.State.State != api.TaskStateRunning {
		t.Fatalf("record once reported running = %+v, %v; want running with a handle", rec, err)
	}
}
