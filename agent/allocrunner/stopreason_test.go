package allocrunner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

func TestStopReason(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		edit func(a *api.Allocation)
		want string
	}{
		{"evicted", func(a *api.Allocation) { a.DesiredStatus = api.AllocDesiredStatusEvict }, StopPreempted},
		{"preempted by", func(a *api.Allocation) {
			a.DesiredStatus, a.PreemptedByAllocation = api.AllocDesiredStatusStop, "b"
		}, StopPreempted},
		{"node lost", func(a *api.Allocation) {
			a.DesiredStatus, a.ClientStatus = api.AllocDesiredStatusStop, api.AllocClientStatusLost
		}, StopNodeLost},
		{"node disconnected", func(a *api.Allocation) {
			a.DesiredStatus, a.ClientStatus = api.AllocDesiredStatusStop, api.AllocClientStatusUnknown
		}, StopNodeLost},
		{"drained", func(a *api.Allocation) {
			a.DesiredStatus, a.DesiredTransition.Migrate = api.AllocDesiredStatusStop, &yes
		}, StopDrained},
		{"spot interruption", func(a *api.Allocation) {
			a.DesiredStatus, a.DesiredTransition.Migrate = api.AllocDesiredStatusStop, &yes
			a.DesiredDescription = "alloc is being migrated: " + api.DrainReasonSpot
		}, StopSpotInterrupted},
		{"stopped", func(a *api.Allocation) { a.DesiredStatus = api.AllocDesiredStatusStop }, StopStopped},
		{"still wanted", func(a *api.Allocation) {}, StopInterrupted},
	} {
		a := newAlloc(api.JobTypeBatch, noRestart, shTask("true"))
		tc.edit(a)
		if got := StopReason(a); got != tc.want {
			t.Errorf("%s: StopReason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A preempted alloc's task finds "preempted" in $DROVER_ALLOC_DIR/stop_reason
// when its kill signal arrives: its TERM trap copies the file, and the
// Killing event carries the reason too.
func TestRawExecStopReasonBeforeSignal(t *testing.T) {
	h := newRawHarness(t)
	tk := shTask(`trap 'cp "$DROVER_ALLOC_DIR/stop_reason" "$DROVER_ALLOC_DIR/data/seen" || echo none > "$DROVER_ALLOC_DIR/data/seen"; exit 0' TERM
touch "$DROVER_ALLOC_DIR/data/ready"; while :; do sleep 0.05; done`)
	a := newAlloc(api.JobTypeBatch, noRestart, tk)
	h.run(a, false)
	data := filepath.Join(h.dir, "alloc", a.ID, "alloc", "data")
	testproc.Eventually(t, 10*time.Second, "task set its trap", func() bool {
		_, err := os.Stat(filepath.Join(data, "ready"))
		return err == nil
	})
	if _, err := os.Stat(filepath.Join(h.dir, "alloc", a.ID, "alloc", StopReasonFile)); !os.IsNotExist(err) {
		t.Fatalf("stop_reason exists before any stop: %v", err)
	}
	stopped := a.Copy()
	stopped.DesiredStatus, stopped.PreemptedByAllocation = api.AllocDesiredStatusEvict, "b0b1c2d3-0000-4000-8000-000000000002"
	stopped.DesiredDescription = "preempted by alloc " + stopped.PreemptedByAllocation
	h.ar.Update(stopped)
	<-h.ar.WaitCh()
	seen, err := os.ReadFile(filepath.Join(data, "seen"))
	if err != nil || string(seen) != "preempted\n" {
		t.Errorf("the task read stop_reason %q (%v) in its TERM trap, want %q", seen, err, "preempted\n")
	}
	var killing *api.TaskEvent
	for _, e := range h.state("web").Events {
		if e.Type == api.TaskKilling {
			killing = e
		}
	}
	if killing == nil || killing.Details["stop_reason"] != StopPreempted {
		t.Errorf("Killing event %+v, want details stop_reason=preempted", killing)
	}
}

// KillFor's reason wins over the alloc's, and the first kill's stands.
func TestKillForReason(t *testing.T) {
	h := newRawHarness(t)
	a := newAlloc(api.JobTypeBatch, noRestart, shTask(`while :; do sleep 0.05; done`))
	h.run(a, false)
	testproc.Eventually(t, 10*time.Second, "task running", func() bool { return h.state("web").State == api.TaskStateRunning })
	h.ar.KillFor(StopNodeLost)
	h.ar.Kill()
	<-h.ar.WaitCh()
	got, err := os.ReadFile(filepath.Join(h.dir, "alloc", a.ID, "alloc", StopReasonFile))
	if err != nil || string(got) != "node_lost\n" {
		t.Errorf("stop_reason %q (%v), want %q", got, err, "node_lost\n")
	}
}

// A link a task planted at alloc/stop_reason is replaced, never written
// through.
func TestWriteStopReasonReplacesLink(t *testing.T) {
	dir := t.TempDir()
	if err := BuildAllocDir(dir, []string{"web"}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "alloc", StopReasonFile)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteStopReason(dir, StopDrained); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("link target = %q, want it untouched", b)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("stop_reason: %v, %v; want a regular file", fi, err)
	}
	if b, _ := os.ReadFile(link); string(b) != "drained\n" {
		t.Errorf("stop_reason = %q, want %q", b, "drained\n")
	}
}
