package allocrunner

import (
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/testproc"
)

// restart simulates an agent restart: the runner stops without killing
// tasks, then a new runner (new driver instance, same "host") restores
// from the same state DB.
func (h *harness) restart() {
	h.t.Helper()
	h.shutdown()
	allocs, err := h.db.Allocs()
	if err != nil || len(allocs) != 1 {
		h.t.Fatalf("stored allocs = %d, err %v", len(allocs), err)
	}
	h.start(allocs[0], true)
}

func TestReattachAfterRestart(t *testing.T) {
	rp := &api.RestartPolicy{Attempts: 3, Interval: 1 << 40, Delay: 1, Mode: api.RestartModeFail}
	h := newHarness(t, newAlloc(api.JobTypeService, rp, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	// One restart before the agent restart, to check the count survives.
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 1})
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatalf("restart timer: %v", err)
	}
	h.clock.Advance(1)
	testproc.Eventually(t, 10*time.Second, "restarted", func() bool { return h.state("main").Restarts == 1 && h.state("main").State == api.TaskStateRunning })
	before := h.procs.Running("main")

	h.restart()
	testproc.Eventually(t, 10*time.Second, "Reattached event", func() bool { return contains(eventTypes(h.state("main")), api.TaskReattached) })
	s := h.state("main")
	if s.State != api.TaskStateRunning || s.Restarts != 1 {
		t.Errorf("after reattach: state %s restarts %d, want running and 1", s.State, s.Restarts)
	}
	if after := h.procs.Running("main"); len(after) != 1 || after[0] != before[0] {
		t.Errorf("running tasks %v -> %v, want the same task", before, after)
	}
	if got := len(callsMatching(h.procs.Calls(), "start")); got != 2 {
		t.Errorf("starts = %d, want 2 (no start on reattach)", got)
	}
	// The exit is still captured after the reattach.
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 7})
	testproc.Eventually(t, 10*time.Second, "exit captured", func() bool {
		for _, e := range h.state("main").Events {
			if e.Type == api.TaskTerminated && e.ExitCode == 7 {
				return true
			}
		}
		return false
	})
}

func TestRestoreGoneTaskFollowsRestartPolicy(t *testing.T) {
	rp := &api.RestartPolicy{Attempts: 1, Interval: 1 << 40, Delay: 5, Mode: api.RestartModeFail}
	h := newHarness(t, newAlloc(api.JobTypeService, rp, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	h.shutdown()
	// The task died while the agent was down.
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 137, Signal: 9})
	allocs, _ := h.db.Allocs()
	h.start(allocs[0], true)
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatalf("restart timer: %v", err)
	}
	h.clock.Advance(5)
	testproc.Eventually(t, 10*time.Second, "restarted", func() bool {
		s := h.state("main")
		return s.State == api.TaskStateRunning && s.Restarts == 1
	})
	if got := eventTypes(h.state("main")); !contains(got, api.TaskDriverFailure) || !contains(got, api.TaskRestarting) {
		t.Errorf("events = %v, want Driver Failure and Restarting", got)
	}
}

func TestRestoreDoesNotRerunCompletedTask(t *testing.T) {
	pre := task("pre", map[string]any{"exit_code": 0})
	pre.Lifecycle = &api.TaskLifecycle{Hook: api.TaskLifecycleHookPrestart}
	h := newHarness(t, newAlloc(api.JobTypeBatch, nil, pre, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	h.restart()
	testproc.Eventually(t, 10*time.Second, "reattached", func() bool { return contains(eventTypes(h.state("main")), api.TaskReattached) })
	h.procs.Exit(t, "main", &drivers.ExitResult{})
	h.waitStatus(api.AllocClientStatusComplete)
	h.restart()
	<-h.ar.WaitCh()
	if got := callsMatching(h.procs.Calls(), "start"); len(got) != 2 {
		t.Errorf("starts = %v, want exactly one start of each task", got)
	}
	if got := h.ar.Alloc().ClientStatus; got != api.AllocClientStatusComplete {
		t.Errorf("status after restore = %s, want complete", got)
	}
}

func TestRestoreStoppedAllocIsNotRevived(t *testing.T) {
	h := newHarness(t, newAlloc(api.JobTypeService, nil, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	a := h.ar.Alloc()
	a.TaskStates = nil
	a.DesiredStatus = api.AllocDesiredStatusStop
	h.ar.Update(a)
	<-h.ar.WaitCh()
	h.restart()
	<-h.ar.WaitCh()
	if got := callsMatching(h.procs.Calls(), "start", "recover"); len(got) != 1 {
		t.Errorf("calls = %v, want the single original start", got)
	}
	if s := h.state("main"); s.State != api.TaskStateDead {
		t.Errorf("state = %s, want dead", s.State)
	}
}

func TestRestoreStoppedWhileDownKillsRunningTask(t *testing.T) {
	h := newHarness(t, newAlloc(api.JobTypeService, nil, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	h.shutdown()
	allocs, _ := h.db.Allocs()
	allocs[0].DesiredStatus = api.AllocDesiredStatusStop
	h.start(allocs[0], true)
	<-h.ar.WaitCh()
	if got := h.procs.Running("main"); len(got) != 0 {
		t.Errorf("running after restore of a stopped alloc = %v, want none", got)
	}
	if got := callsMatching(h.procs.Calls(), "start"); len(got) != 1 {
		t.Errorf("starts = %v, want 1", got)
	}
}

// TestRestoreFinishesRestartDelay: an agent restart while a task waits out
// its restart delay does not start it at once; the restored runner waits
// for the rest of the delay (the due time is persisted).
func TestRestoreFinishesRestartDelay(t *testing.T) {
	const delay = 100 * time.Second
	rp := &api.RestartPolicy{Attempts: 3, Interval: 1 << 40, Delay: delay, Mode: api.RestartModeFail}
	h := newHarness(t, newAlloc(api.JobTypeService, rp, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	h.procs.Exit(t, "main", &drivers.ExitResult{ExitCode: 1})
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatalf("restart timer: %v", err)
	}
	h.clock.Advance(40 * time.Second)

	h.restart()
	// The old runner's timer stays registered with the fake clock; the
	// restored runner adds its own for the remaining 60s.
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 2 }); err != nil {
		t.Fatalf("restored runner waits out the delay: %v", err)
	}
	if in, _ := h.clock.NextIn(); in != delay-40*time.Second {
		t.Errorf("next timer in %s, want the remaining %s", in, delay-40*time.Second)
	}
	if got := len(callsMatching(h.procs.Calls(), "start")); got != 1 {
		t.Fatalf("starts = %d before the delay ended, want 1", got)
	}
	if s := h.state("main"); s.State != api.TaskStatePending || s.Restarts != 0 {
		t.Errorf("while waiting: state %s restarts %d, want pending and 0", s.State, s.Restarts)
	}
	h.clock.Advance(delay - 40*time.Second)
	testproc.Eventually(t, 10*time.Second, "restarted once the delay ended", func() bool {
		s := h.state("main")
		return s.State == api.TaskStateRunning && s.Restarts == 1
	})
	if got := len(callsMatching(h.procs.Calls(), "start")); got != 2 {
		t.Errorf("starts = %d, want 2", got)
	}
}
