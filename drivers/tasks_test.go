package drivers

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type tableTask struct{ name string }

func TestTasksTable(t *testing.T) {
	var ts Tasks[*tableTask] // the zero value is ready
	if _, err := ts.Get("a"); !errors.Is(err, ErrTaskNotFound) {
		t.Fatalf("Get of an empty table: %v, want ErrTaskNotFound", err)
	}
	a, b := &tableTask{"a"}, &tableTask{"b"}
	if !ts.Add("a", a) {
		t.Fatal("Add to an empty table refused")
	}
	if ts.Add("a", b) {
		t.Error("Add of a taken ID accepted")
	}
	if err := ts.CheckNew("a"); err == nil {
		t.Error("CheckNew of a running task: no error")
	}
	if err := ts.CheckNew("b"); err != nil {
		t.Errorf("CheckNew of a new task: %v", err)
	}
	if got, err := ts.Get("a"); err != nil || got != a {
		t.Errorf("Get(a) = %v, %v; want the task added first", got, err)
	}
	ts.Remove("a", b) // not the task under "a": stays
	if _, err := ts.Get("a"); err != nil {
		t.Errorf("Remove of another task took a out: %v", err)
	}
	ts.Set("b", b)
	var names []string
	for _, x := range ts.All() {
		names = append(names, x.name)
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("All (-want +got):\n%s", diff)
	}
	ts.Remove("a", a)
	ts.Delete("b")
	if got := ts.Clear(); len(got) != 0 {
		t.Errorf("Clear after removing both = %v, want nothing", got)
	}
}

func TestTasksRecover(t *testing.T) {
	type state struct{ PID int }
	var ts Tasks[*tableTask]
	cfg := &TaskConfig{ID: "a"}
	h, err := NewHandle(3, cfg, state{PID: 7}, time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != 3 || h.Config != cfg || !h.StartedAt.Equal(time.Unix(5, 0)) || string(h.DriverState) != `{"PID":7}` {
		t.Fatalf("NewHandle = %+v", h)
	}
	var st state
	if known, err := ts.Recover(h, &st); known || err != nil || st.PID != 7 {
		t.Errorf("Recover of an unknown task = %v, %v, state %+v; want false, nil, PID 7", known, err, st)
	}
	ts.Set("a", &tableTask{"a"})
	st = state{}
	if known, err := ts.Recover(h, &st); !known || err != nil || st.PID != 0 {
		t.Errorf("Recover of a known task = %v, %v, state %+v; want true, nil, state untouched", known, err, st)
	}
	for name, bad := range map[string]*TaskHandle{
		"nil handle":  nil,
		"no config":   {DriverState: h.DriverState},
		"bad state":   {Config: &TaskConfig{ID: "b"}, DriverState: []byte("{")},
		"empty state": {Config: &TaskConfig{ID: "c"}},
	} {
		if _, err := ts.Recover(bad, &st); !errors.Is(err, ErrRecoverFailed) {
			t.Errorf("Recover of %s: %v, want ErrRecoverFailed", name, err)
		}
	}
}

func TestStopSignal(t *testing.T) {
	cfg := &TaskConfig{KillSignal: "SIGINT"}
	if got := cfg.StopSignal("SIGHUP"); got != "SIGHUP" {
		t.Errorf("StopSignal(SIGHUP) = %q, want the signal given", got)
	}
	if got := cfg.StopSignal(""); got != "SIGINT" {
		t.Errorf("StopSignal(\"\") = %q, want the task's kill_signal", got)
	}
}

func TestWaitExit(t *testing.T) {
	want := &ExitResult{ExitCode: 3}
	done := make(chan struct{})
	ch := WaitExit(context.Background(), done, func() *ExitResult { return want })
	close(done)
	if got, ok := <-ch; !ok || got != want {
		t.Errorf("after done: %v, %v; want the result", got, ok)
	}
	if _, ok := <-ch; ok {
		t.Error("a second result, want the channel closed")
	}

	// A task that ended without a result (nil): closed unsent.
	ch = WaitExit(context.Background(), done, func() *ExitResult { return nil })
	if got, ok := <-ch; ok {
		t.Errorf("no result: got %v, want the channel closed unsent", got)
	}

	// ctx ends first: closed unsent, result never asked for.
	ctx, cancel := context.WithCancel(context.Background())
	ch = WaitExit(ctx, make(chan struct{}), func() *ExitResult { t.Error("result asked for after ctx ended"); return want })
	cancel()
	if got, ok := <-ch; ok {
		t.Errorf("ctx ended: got %v, want the channel closed unsent", got)
	}
}
