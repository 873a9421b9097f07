package allocrunner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
)

// A task past its max_run_duration is stopped the way a stop is (kill
// signal, kill timeout, destroy) and fails without a restart, even when
// its restart policy would restart it.
func TestMaxRunDurationStopsAndFails(t *testing.T) {
	rp := &api.RestartPolicy{Attempts: 5, Interval: time.Hour, Delay: time.Second, Mode: api.RestartModeFail}
	tk := task("main", nil)
	tk.MaxRunDuration = time.Hour
	h := newHarness(t, newAlloc(api.JobTypeBatch, rp, tk))
	h.waitState("main", api.TaskStateRunning)
	if err := h.clock.WaitPending(10*time.Second, func(n int) bool { return n == 1 }); err != nil {
		t.Fatalf("run limit timer: %v", err)
	}
	if d, _ := h.clock.NextIn(); d != time.Hour {
		t.Fatalf("run limit in %v, want 1h", d)
	}
	h.clock.Advance(59 * time.Minute)
	if st := h.state("main").State; st != api.TaskStateRunning {
		t.Fatalf("state before the limit = %s, want running", st)
	}
	h.clock.Advance(time.Minute)
	h.waitStatus(api.AllocClientStatusFailed)
	s := h.state("main")
	if !s.Failed || s.State != api.TaskStateDead {
		t.Errorf("state = %s failed=%v, want dead and failed", s.State, s.Failed)
	}
	if got, want := callsMatching(h.procs.Calls(), "start", "stop", "destroy"), []string{"start main", "stop main SIGINT 3s", "destroy main"}; !cmp.Equal(got, want) {
		t.Errorf("driver calls = %v, want %v (no restart)", got, want)
	}
	var seen bool
	for _, e := range s.Events {
		if e.Type == api.TaskMaxRunDuration && e.FailsTask {
			seen = true
		}
	}
	if !seen {
		t.Errorf("events = %v, want a failing %q event", eventTypes(s), api.TaskMaxRunDuration)
	}
}

// Without max_run_duration no run-limit timer is armed.
func TestNoMaxRunDurationNoTimer(t *testing.T) {
	h := newHarness(t, newAlloc(api.JobTypeBatch, nil, task("main", nil)))
	h.waitState("main", api.TaskStateRunning)
	if n := h.clock.Pending(); n != 0 {
		t.Errorf("timers = %d, want 0", n)
	}
}
