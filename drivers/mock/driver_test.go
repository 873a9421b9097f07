package mock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/logging"
)

func newDriver(t *testing.T) drivers.Driver {
	d, err := New(drivers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, &drivertest.Harness{
		New:       newDriver,
		Parallel:  true,
		PrintLine: func(line string) map[string]any { return map[string]any{"stdout_string": line + "\n"} },
		Exit:      func(code int) map[string]any { return map[string]any{"exit_code": code} },
		Sleep: func(d time.Duration, code int) map[string]any {
			return map[string]any{"run_for": d.String(), "exit_code": code}
		},
		IgnoreTERM: func() map[string]any {
			return map[string]any{"run_for": "1h", "kill_after": "1h", "stdout_string": "ready\n"}
		},
		KilledSignal: 9,
		InvalidConfigs: []map[string]any{
			{"run_for": 5}, {"run_for": "soon"}, {"exit_code": "1"}, {"exit_code": 1.5},
			{"oom_killed": "yes"}, {"stdout_repeat": -1},
		},
	})
}

func start(t *testing.T, d drivers.Driver, cfg map[string]any) *drivers.TaskConfig {
	t.Helper()
	tc := drivertest.NewTaskConfig(t, "mock", cfg)
	if _, err := d.StartTask(context.Background(), tc); err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	return tc
}

func wait(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := <-ch
	if !ok {
		t.Fatal("no exit result within 10s")
	}
	return r
}

func TestStartErrorAndBlock(t *testing.T) {
	d := newDriver(t)
	tc := drivertest.NewTaskConfig(t, "bad", map[string]any{"start_error": "image missing"})
	if _, err := d.StartTask(context.Background(), tc); err == nil || !strings.Contains(err.Error(), "image missing") {
		t.Errorf("StartTask = %v, want the start_error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tc = drivertest.NewTaskConfig(t, "slow", map[string]any{"start_block_for": "1h"})
	if _, err := d.StartTask(ctx, tc); !errors.Is(err, context.Canceled) {
		t.Errorf("blocked StartTask with a cancelled ctx = %v, want context.Canceled", err)
	}
}

func TestExitShapesAndRepeatedOutput(t *testing.T) {
	d := newDriver(t)
	tc := start(t, d, map[string]any{"exit_signal": 6, "exit_code": 134, "oom_killed": true, "exit_err_msg": "boom",
		"stdout_string": "tick\n", "stdout_repeat": 3, "stdout_repeat_duration": "1ms", "run_for": "50ms"})
	r := wait(t, d, tc.ID)
	if r.ExitCode != 134 || r.Signal != 6 || !r.OOMKilled || r.Err == nil || r.Err.Error() != "boom" {
		t.Errorf("exit = %+v", r)
	}
	b, err := logging.ReadAll(tc.LogDir, "mock.stdout")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "tick\n"); got != 4 {
		t.Errorf("stdout has %d ticks, want 4: %q", got, b)
	}
}

func TestSignals(t *testing.T) {
	d := newDriver(t)
	tc := start(t, d, map[string]any{"run_for": "1h"})
	sg := d.(drivers.Signaler)
	if err := sg.SignalTask(context.Background(), tc.ID, "SIGHUP"); err != nil {
		t.Fatal(err)
	}
	if got := d.(*Driver).Signals(tc.ID); len(got) != 1 || got[0] != "SIGHUP" {
		t.Errorf("signals = %v", got)
	}
	if err := sg.SignalTask(context.Background(), tc.ID, "SIGBOGUS"); err == nil {
		t.Error("unknown signal accepted")
	}
	tc2 := start(t, d, map[string]any{"run_for": "1h", "signal_error": "nope"})
	if err := sg.SignalTask(context.Background(), tc2.ID, "SIGHUP"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("SignalTask = %v, want signal_error", err)
	}
	for _, id := range []string{tc.ID, tc2.ID} {
		if err := d.DestroyTask(context.Background(), id, true); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStopWithKillAfterWithinTimeout(t *testing.T) {
	d := newDriver(t)
	tc := start(t, d, map[string]any{"run_for": "1h", "kill_after": "20ms"})
	if err := d.StopTask(context.Background(), tc.ID, time.Minute, "SIGINT"); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, d, tc.ID); r.Signal != 2 {
		t.Errorf("exit = %+v, want signal 2 (graceful after kill_after)", r)
	}
}

func TestPluginConfigRejected(t *testing.T) {
	if _, err := New(drivers.Options{Config: map[string]any{"x": 1}}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("New with plugin config = %v, want ErrInvalidConfig", err)
	}
}
