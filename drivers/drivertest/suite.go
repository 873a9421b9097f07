package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/internal/testproc"
)

// Run runs the conformance suite against the driver h describes.
func Run(t *testing.T, h *Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("drivertest: Harness.New is required")
	}
	tests := []struct {
		name string
		fn   func(*testing.T, *Harness)
	}{
		{"Fingerprint", testFingerprint},
		{"ValidateConfig", testValidateConfig},
		{"StartAndLogs", testStartAndLogs},
		{"Stderr", testStderr},
		{"ExitCodes", testExitCodes},
		{"StopGraceful", testStopGraceful},
		{"KillTimeout", testKillTimeout},
		{"OOM", testOOM},
		{"MemoryLimitVisible", testMemoryLimitVisible},
		{"Exec", testExec},
		{"Stats", testStats},
		{"Signal", testSignal},
		{"ReattachRunning", testReattachRunning},
		{"ReattachCompleted", testReattachCompleted},
		{"Destroy", testDestroy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h.Parallel {
				t.Parallel()
			}
			tc.fn(t, h)
		})
	}
}

func skipIfNil(t *testing.T, ok bool, what string) {
	t.Helper()
	if !ok {
		t.Skipf("harness has no %s", what)
	}
}

// task is one started task plus its driver.
type task struct {
	h   *Harness
	d   drivers.Driver
	cfg *drivers.TaskConfig
	hd  *drivers.TaskHandle
}

func (h *Harness) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout())
	t.Cleanup(cancel)
	return ctx
}

func (h *Harness) start(t *testing.T, name string, dcfg map[string]any, adjust func(*drivers.TaskConfig)) *task {
	t.Helper()
	d := h.New(t)
	cfg := NewTaskConfig(t, name, dcfg)
	if h.Prepare != nil {
		h.Prepare(t, cfg)
	}
	if adjust != nil {
		adjust(cfg)
	}
	if err := d.ValidateConfig(dcfg); err != nil {
		t.Fatalf("ValidateConfig(%v): %v", dcfg, err)
	}
	hd, err := d.StartTask(h.ctx(t), cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	if hd == nil || hd.Config == nil || hd.Config.ID != cfg.ID {
		t.Fatalf("StartTask returned handle %+v, want one for task %q", hd, cfg.ID)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout())
		defer cancel()
		if err := d.DestroyTask(ctx, cfg.ID, true); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
			t.Errorf("cleanup DestroyTask: %v", err)
		}
	})
	return &task{h: h, d: d, cfg: cfg, hd: hd}
}

func (k *task) wait(t *testing.T) *drivers.ExitResult {
	t.Helper()
	return waitOn(t, k.h, k.d, k.cfg.ID)
}

func waitOn(t *testing.T, h *Harness, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx := h.ctx(t)
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatalf("WaitTask: %v", err)
	}
	select {
	case res, ok := <-ch:
		if !ok {
			t.Fatalf("WaitTask channel closed without a result (context: %v)", ctx.Err())
		}
		if res == nil {
			t.Fatal("WaitTask yielded nil")
		}
		return res
	case <-ctx.Done():
		t.Fatalf("task %s did not exit within %s", id, h.timeout())
	}
	return nil
}

// logs returns the task's stream ("stdout"/"stderr") so far.
func (k *task) logs(t *testing.T, stream string) string {
	t.Helper()
	b, err := logging.ReadAll(k.cfg.LogDir, logging.Prefix(k.cfg.Name, stream))
	if err != nil {
		t.Fatalf("read logs: %v", err)
	}
	return string(b)
}

// waitLog polls the task's log (a file: no signal) until it contains s.
func (k *task) waitLog(t *testing.T, stream, s string) {
	t.Helper()
	var got string
	defer func() {
		if t.Failed() {
			t.Logf("%s: %q", stream, got)
		}
	}()
	testproc.Eventually(t, k.h.timeout(), fmt.Sprintf("%s containing %q", stream, s), func() bool {
		got = k.logs(t, stream)
		return strings.Contains(got, s)
	})
}

func testFingerprint(t *testing.T, h *Harness) {
	d := h.New(t)
	fp := d.Fingerprint(h.ctx(t))
	if fp == nil {
		t.Fatal("Fingerprint returned nil")
	}
	if fp.Health != drivers.HealthHealthy {
		t.Fatalf("Fingerprint health = %q (%s), want healthy", fp.Health, fp.HealthDescription)
	}
	if d.Name() == "" {
		t.Error("Name() is empty")
	}
}

func testValidateConfig(t *testing.T, h *Harness) {
	d := h.New(t)
	skipIfNil(t, h.PrintLine != nil, "PrintLine")
	if err := d.ValidateConfig(h.PrintLine("x")); err != nil {
		t.Errorf("ValidateConfig(valid) = %v", err)
	}
	bad := append([]map[string]any{{"no_such_key_xyz": 1}}, h.InvalidConfigs...)
	for _, c := range bad {
		err := d.ValidateConfig(c)
		if !errors.Is(err, drivers.ErrInvalidConfig) {
			t.Errorf("ValidateConfig(%v) = %v, want ErrInvalidConfig", c, err)
		}
	}
	err := d.ValidateConfig(map[string]any{"no_such_key_xyz": 1})
	if err == nil || !strings.Contains(err.Error(), "no_such_key_xyz") {
		t.Errorf("ValidateConfig error %v does not name the unknown key", err)
	}
}

func testStartAndLogs(t *testing.T, h *Harness) {
	skipIfNil(t, h.PrintLine != nil, "PrintLine")
	line := "hello from drover " + RandID(4)
	k := h.start(t, "printer", h.PrintLine(line), nil)
	res := k.wait(t)
	if !res.Successful() {
		t.Fatalf("exit = %+v, want success", res)
	}
	if got := k.logs(t, "stdout"); !strings.Contains(got, line) {
		t.Errorf("stdout = %q, want it to contain %q", got, line)
	}
	// Waiting again yields the same result.
	if res2 := k.wait(t); res2.ExitCode != res.ExitCode || res2.Signal != res.Signal {
		t.Errorf("second wait = %+v, want %+v", res2, res)
	}
}

func testStderr(t *testing.T, h *Harness) {
	skipIfNil(t, h.PrintStderr != nil, "PrintStderr")
	line := "to stderr " + RandID(4)
	k := h.start(t, "errprinter", h.PrintStderr(line), nil)
	if res := k.wait(t); !res.Successful() {
		t.Fatalf("exit = %+v, want success", res)
	}
	if got := k.logs(t, "stderr"); !strings.Contains(got, line) {
		t.Errorf("stderr = %q, want it to contain %q", got, line)
	}
}

func testExitCodes(t *testing.T, h *Harness) {
	skipIfNil(t, h.Exit != nil, "Exit")
	for _, code := range []int{0, 3, 42} {
		k := h.start(t, "exit"+strconv.Itoa(code), h.Exit(code), nil)
		res := k.wait(t)
		if res.ExitCode != code || res.Signal != 0 || res.OOMKilled || res.Err != nil {
			t.Errorf("exit %d: got %+v", code, res)
		}
		if res.Successful() != (code == 0) {
			t.Errorf("exit %d: Successful() = %v", code, res.Successful())
		}
	}
}

func testStopGraceful(t *testing.T, h *Harness) {
	skipIfNil(t, h.Sleep != nil, "Sleep")
	k := h.start(t, "sleeper", h.Sleep(10*time.Minute, 0), nil)
	ch, err := k.d.WaitTask(h.ctx(t), k.cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.d.StopTask(h.ctx(t), k.cfg.ID, h.timeout(), ""); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	select {
	case res := <-ch:
		if res == nil || res.Err != nil {
			t.Fatalf("exit after stop = %+v", res)
		}
		if h.KilledSignal != 0 && res.Signal == h.KilledSignal {
			t.Errorf("task ending on SIGTERM was SIGKILLed: %+v", res)
		}
	case <-time.After(h.timeout()):
		t.Fatal("task did not exit after StopTask returned")
	}
	// Stopping an exited task is not an error.
	if err := k.d.StopTask(h.ctx(t), k.cfg.ID, time.Second, ""); err != nil {
		t.Errorf("StopTask on exited task: %v", err)
	}
}

func testKillTimeout(t *testing.T, h *Harness) {
	skipIfNil(t, h.IgnoreTERM != nil, "IgnoreTERM")
	k := h.start(t, "stubborn", h.IgnoreTERM(), nil)
	k.waitLog(t, "stdout", "ready")
	const grace = 300 * time.Millisecond
	if err := k.d.StopTask(h.ctx(t), k.cfg.ID, grace, "SIGTERM"); err != nil {
		t.Fatalf("StopTask: %v", err)
	}
	res := k.wait(t)
	if res.Successful() {
		t.Fatalf("task ignoring SIGTERM exited cleanly: %+v", res)
	}
	if h.KilledSignal != 0 && res.Signal != h.KilledSignal {
		t.Errorf("signal = %d, want %d (SIGKILL after the kill timeout): %+v", res.Signal, h.KilledSignal, res)
	}
}

func testOOM(t *testing.T, h *Harness) {
	skipIfNil(t, h.UseMemory != nil && h.EnforcesMemory, "UseMemory/EnforcesMemory")
	k := h.start(t, "hog", h.UseMemory(256), func(c *drivers.TaskConfig) {
		c.Resources.Memory.MemoryMB = 32
	})
	res := k.wait(t)
	if !res.OOMKilled {
		t.Fatalf("task using 256 MB with a 32 MB limit: exit %+v, want OOMKilled", res)
	}
	if res.Successful() {
		t.Error("an OOM-killed task is not successful")
	}
}

func testMemoryLimitVisible(t *testing.T, h *Harness) {
	skipIfNil(t, h.PrintMemoryLimit != nil && h.EnforcesMemory, "PrintMemoryLimit/EnforcesMemory")
	k := h.start(t, "limits", h.PrintMemoryLimit(), func(c *drivers.TaskConfig) {
		c.Resources.Memory.MemoryMB = 96
	})
	if res := k.wait(t); !res.Successful() {
		t.Fatalf("exit = %+v; stderr %q", res, k.logs(t, "stderr"))
	}
	want := strconv.Itoa(96 << 20)
	if got := strings.TrimSpace(k.logs(t, "stdout")); !strings.Contains(got, want) {
		t.Errorf("memory limit seen by the task = %q, want %s", got, want)
	}
}

// syncBuffer is a bytes.Buffer safe for the exec copier goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testExec(t *testing.T, h *Harness) {
	skipIfNil(t, h.ExecEcho != nil && h.Sleep != nil, "ExecEcho/Sleep")
	k := h.start(t, "execme", h.Sleep(10*time.Minute, 0), nil)
	ex, ok := k.d.(drivers.Execer)
	if !ok {
		t.Fatalf("driver %T has ExecEcho but is no drivers.Execer", k.d)
	}
	line := "exec says " + RandID(4)
	var out, errb syncBuffer
	res, err := ex.ExecTask(h.ctx(t), k.cfg.ID, &drivers.ExecOptions{Command: h.ExecEcho(line), Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatalf("ExecTask: %v", err)
	}
	if !res.Successful() || !strings.Contains(out.String(), line) {
		t.Errorf("exec = %+v, stdout %q stderr %q; want success and %q", res, out.String(), errb.String(), line)
	}
	if h.ExecExit != nil {
		res, err := ex.ExecTask(h.ctx(t), k.cfg.ID, &drivers.ExecOptions{Command: h.ExecExit(7), Stdout: &out, Stderr: &errb})
		if err != nil || res.ExitCode != 7 {
			t.Errorf("exec exit 7 = %+v, %v", res, err)
		}
	}
	// With a TTY both streams arrive on Stdout.
	var tty syncBuffer
	res, err = ex.ExecTask(h.ctx(t), k.cfg.ID, &drivers.ExecOptions{Command: h.ExecEcho(line), TTY: true, Stdout: &tty})
	if err != nil {
		t.Fatalf("ExecTask with TTY: %v", err)
	}
	if !res.Successful() || !strings.Contains(tty.String(), line) {
		t.Errorf("exec with TTY = %+v, output %q; want %q", res, tty.String(), line)
	}
	if _, err := ex.ExecTask(h.ctx(t), "no-such-task", &drivers.ExecOptions{Command: h.ExecEcho("x"), Stdout: &out}); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("ExecTask(unknown) = %v, want ErrTaskNotFound", err)
	}
}

func testStats(t *testing.T, h *Harness) {
	skipIfNil(t, h.UseMemory != nil, "UseMemory")
	k := h.start(t, "stats", h.UseMemory(24), nil)
	st, ok := k.d.(drivers.Statser)
	if !ok {
		t.Skipf("driver %T is no drivers.Statser", k.d)
	}
	testproc.Eventually(t, h.timeout(), "memory stats reaching 16 MB", func() bool {
		u, err := st.TaskStats(h.ctx(t), k.cfg.ID)
		if err != nil {
			t.Fatalf("TaskStats: %v", err)
		}
		if u == nil || u.ResourceUsage == nil || u.ResourceUsage.MemoryStats == nil || u.ResourceUsage.CpuStats == nil {
			t.Fatalf("TaskStats = %+v, want memory and cpu stats", u)
		}
		if u.Timestamp == 0 {
			t.Error("TaskStats timestamp is zero")
		}
		m := u.ResourceUsage.MemoryStats
		return m.RSS >= 16<<20 || m.Usage >= 16<<20
	})
	if _, err := st.TaskStats(h.ctx(t), "no-such-task"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("TaskStats(unknown) = %v, want ErrTaskNotFound", err)
	}
}

func testSignal(t *testing.T, h *Harness) {
	skipIfNil(t, h.TrapSignal != nil, "TrapSignal")
	line := "got usr1 " + RandID(4)
	k := h.start(t, "trapper", h.TrapSignal("SIGUSR1", line), nil)
	sg, ok := k.d.(drivers.Signaler)
	if !ok {
		t.Fatalf("driver %T has TrapSignal but is no drivers.Signaler", k.d)
	}
	k.waitLog(t, "stdout", "ready")
	if err := sg.SignalTask(h.ctx(t), k.cfg.ID, "SIGUSR1"); err != nil {
		t.Fatalf("SignalTask: %v", err)
	}
	k.waitLog(t, "stdout", line)
	if res := k.wait(t); !res.Successful() {
		t.Errorf("exit after trapped signal = %+v", res)
	}
	if err := sg.SignalTask(h.ctx(t), k.cfg.ID, "SIGNOPE"); err == nil {
		t.Error("SignalTask with an unknown signal name succeeded")
	}
}

// restart drops the driver and recovers the task in a new instance.
func (k *task) restart(t *testing.T) *task {
	t.Helper()
	hd := roundTrip(t, k.hd)
	d2 := k.h.New(t)
	if err := d2.RecoverTask(k.h.ctx(t), hd); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	// A second recover of a known task is harmless.
	if err := d2.RecoverTask(k.h.ctx(t), hd); err != nil {
		t.Fatalf("second RecoverTask: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), k.h.timeout())
		defer cancel()
		_ = d2.DestroyTask(ctx, k.cfg.ID, true)
	})
	return &task{h: k.h, d: d2, cfg: k.cfg, hd: hd}
}

func testReattachRunning(t *testing.T, h *Harness) {
	skipIfNil(t, h.Sleep != nil, "Sleep")
	// The task outlives the first driver instance and exits 5 later.
	k := h.start(t, "survivor", h.Sleep(3*time.Second, 5), nil)
	k2 := k.restart(t)
	res := k2.wait(t)
	if res.ExitCode != 5 || res.Err != nil {
		t.Fatalf("recovered task exit = %+v, want code 5", res)
	}
	if _, err := k2.d.WaitTask(h.ctx(t), "no-such-task"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("WaitTask(unknown) = %v, want ErrTaskNotFound", err)
	}
}

func testReattachCompleted(t *testing.T, h *Harness) {
	skipIfNil(t, h.PrintLine != nil && h.Exit != nil, "PrintLine/Exit")
	k := h.start(t, "finished", h.Exit(9), nil)
	if res := k.wait(t); res.ExitCode != 9 {
		t.Fatalf("exit = %+v, want 9", res)
	}
	// A new instance recovering a completed task reports its result and
	// does not run it again.
	k2 := k.restart(t)
	if res := k2.wait(t); res.ExitCode != 9 {
		t.Fatalf("recovered completed task exit = %+v, want 9", res)
	}
	// A handle whose task is unknown to the runtime fails to recover.
	bogus := roundTrip(t, k.hd)
	bogus.Config.ID = k.cfg.ID + "-gone"
	bogus.DriverState = corrupt(bogus.DriverState)
	if err := h.New(t).RecoverTask(h.ctx(t), bogus); !errors.Is(err, drivers.ErrRecoverFailed) {
		t.Errorf("RecoverTask(bogus) = %v, want ErrRecoverFailed", err)
	}
}

func testDestroy(t *testing.T, h *Harness) {
	skipIfNil(t, h.Sleep != nil, "Sleep")
	k := h.start(t, "doomed", h.Sleep(10*time.Minute, 0), nil)
	if err := k.d.DestroyTask(h.ctx(t), k.cfg.ID, false); err == nil {
		t.Error("DestroyTask(force=false) of a running task succeeded")
	}
	if err := k.d.DestroyTask(h.ctx(t), k.cfg.ID, true); err != nil {
		t.Fatalf("DestroyTask(force): %v", err)
	}
	if _, err := k.d.WaitTask(h.ctx(t), k.cfg.ID); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Errorf("WaitTask after destroy = %v, want ErrTaskNotFound", err)
	}
	if _, err := k.d.WaitTask(h.ctx(t), k.cfg.ID); err == nil {
		t.Error("destroyed task still known")
	}
}

// corrupt makes driver state point at nothing: a copy with its bytes
// reversed is not valid reattach data for any driver.
func corrupt(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	if len(out) == 0 {
		out = []byte("{")
	}
	return out
}
