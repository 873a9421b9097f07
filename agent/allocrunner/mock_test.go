package allocrunner

// The same runner scenarios on the real drivers/mock driver (time-driven
// tasks writing real rotated log files).

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/mock"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/internal/testproc"
)

type mockHarness struct {
	t     *testing.T
	dir   string
	db    *clientstate.DB
	clock clock.Clock
	ar    *AllocRunner
	stop  context.CancelFunc
}

func newMockHarness(t *testing.T, a *api.Allocation, clk clock.Clock) *mockHarness {
	t.Helper()
	dir := t.TempDir()
	db, err := clientstate.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h := &mockHarness{t: t, dir: dir, db: db, clock: clk}
	h.start(a, false)
	return h
}

func (h *mockHarness) start(a *api.Allocation, restore bool) {
	h.t.Helper()
	d, err := mock.New(drivers.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(h.dir, "alloc", a.ID), Node: &api.Node{ID: "n"},
		Drivers: map[string]drivers.Driver{d.Name(): d}, Clock: h.clock, Store: h.db, Restore: restore})
	if err != nil {
		h.t.Fatal(err)
	}
	h.launch(ar)
}

func (h *mockHarness) launch(ar *AllocRunner) {
	ctx, cancel := context.WithCancel(context.Background())
	h.ar, h.stop = ar, cancel
	go ar.Run(ctx)
	h.t.Cleanup(func() {
		ar.Kill()
		<-ar.WaitCh()
		cancel()
	})
}

func (h *mockHarness) state(n string) *api.TaskState { return h.ar.Alloc().TaskStates[n] }

func mockTask(name string, cfg map[string]any) *api.Task {
	return &api.Task{Name: name, Driver: mock.Name, Config: cfg, KillTimeout: 50 * time.Millisecond, KillSignal: "SIGINT"}
}

func TestMockRestartPolicy(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	rp := &api.RestartPolicy{Attempts: 2, Interval: time.Hour, Delay: 15 * time.Second, Mode: api.RestartModeFail}
	h := newMockHarness(t, newAlloc(api.JobTypeService, rp, mockTask("main", map[string]any{"exit_code": 3})), clk)
	for i := 0; i < 2; i++ {
		if err := clk.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
			t.Fatalf("restart timer: %v", err)
		}
		clk.Advance(15 * time.Second)
	}
	<-h.ar.WaitCh()
	s := h.state("main")
	if !s.Failed || s.Restarts != 2 {
		t.Errorf("failed=%v restarts=%d, want failed after 2 restarts", s.Failed, s.Restarts)
	}
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusFailed {
		t.Errorf("client status %s, want failed", got)
	}
}

// Stopped and evicted (preempted) allocs get the kill signal, then SIGKILL
// after kill_timeout.
func TestMockKillSequence(t *testing.T) {
	for _, desired := range []string{api.AllocDesiredStatusStop, api.AllocDesiredStatusEvict} {
		t.Run(desired, func(t *testing.T) { mockKillSequence(t, desired) })
	}
}

func mockKillSequence(t *testing.T, desired string) {
	// kill_after beyond KillTimeout: the signal is ignored, then SIGKILL.
	stubborn := mockTask("stubborn", map[string]any{"run_for": "1h", "kill_after": "1h"})
	polite := mockTask("polite", map[string]any{"run_for": "1h"})
	h := newMockHarness(t, newAlloc(api.JobTypeService, nil, stubborn, polite), nil)
	testproc.Eventually(t, 10*time.Second, "running", func() bool {
		return h.ar.Alloc().ClientStatus == api.AllocClientStatusRunning && h.state("polite").State == api.TaskStateRunning
	})
	a := h.ar.Alloc()
	a.DesiredStatus = desired
	h.ar.Update(a)
	<-h.ar.WaitCh()
	sig := func(name string) int {
		for _, e := range h.state(name).Events {
			if e.Type == api.TaskTerminated {
				return e.Signal
			}
		}
		return -1
	}
	if got := sig("stubborn"); got != 9 {
		t.Errorf("stubborn task exit signal %d, want 9 (killed after the timeout)", got)
	}
	if got := sig("polite"); got != 2 {
		t.Errorf("polite task exit signal %d, want 2 (SIGINT, the kill signal)", got)
	}
	for _, n := range []string{"stubborn", "polite"} {
		types := eventTypes(h.state(n))
		if !contains(types, api.TaskKilling) || !contains(types, api.TaskKilled) {
			t.Errorf("%s events %v, want Killing and Killed", n, types)
		}
	}
}

func TestMockLifecycle(t *testing.T) {
	pre := mockTask("pre", map[string]any{"stdout_string": "init\n"})
	pre.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart}
	side := mockTask("side", map[string]any{"run_for": "1h"})
	side.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart, Sidecar: true}
	post := mockTask("post", nil)
	post.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststart}
	stop := mockTask("stop", nil)
	stop.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPoststop}
	main := mockTask("main", map[string]any{"run_for": "100ms"})
	h := newMockHarness(t, newAlloc(api.JobTypeBatch, nil, stop, post, main, side, pre), nil)
	<-h.ar.WaitCh()
	st := h.ar.Alloc().TaskStates
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusComplete {
		t.Fatalf("client status %s, want complete (%v)", got, st)
	}
	before := func(a, b time.Time, what string) {
		if a.After(b) {
			t.Errorf("%s: %v after %v", what, a, b)
		}
	}
	before(st["pre"].FinishedAt, st["main"].StartedAt, "prestart finished before main started")
	before(st["side"].StartedAt, st["main"].StartedAt, "sidecar started before main")
	before(st["main"].StartedAt, st["post"].StartedAt, "poststart after main started")
	before(st["main"].FinishedAt, st["side"].FinishedAt, "sidecar stopped after main ended")
	before(st["side"].FinishedAt, st["stop"].StartedAt, "poststop after the sidecar stopped")
	if !contains(eventTypes(st["side"]), api.TaskMainDead) {
		t.Errorf("sidecar events %v, want %q", eventTypes(st["side"]), api.TaskMainDead)
	}
}

func TestMockReattach(t *testing.T) {
	a := newAlloc(api.JobTypeBatch, nil, mockTask("long", map[string]any{"run_for": "1h"}), mockTask("short", map[string]any{"run_for": "300ms", "exit_code": 4}))
	h := newMockHarness(t, a, nil)
	testproc.Eventually(t, 10*time.Second, "both running", func() bool {
		return h.state("long").State == api.TaskStateRunning && h.state("short").State == api.TaskStateRunning
	})
	h.stop()
	<-h.ar.WaitCh()
	// "short" finishes while the agent is down; a new driver instance
	// recovers both from their handles.
	allocs, _ := h.db.Allocs()
	h.start(allocs[0], true)
	testproc.Eventually(t, 10*time.Second, "long reattached", func() bool { return contains(eventTypes(h.state("long")), api.TaskReattached) })
	testproc.Eventually(t, 10*time.Second, "short's exit captured", func() bool {
		for _, e := range h.state("short").Events {
			if e.Type == api.TaskTerminated && e.ExitCode == 4 {
				return true
			}
		}
		return false
	})
	if s := h.state("long"); s.State != api.TaskStateRunning || s.Restarts != 0 {
		t.Errorf("long after reattach: %s restarts %d", s.State, s.Restarts)
	}
}
