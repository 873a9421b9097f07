package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/testproc"
)

// waitForLog polls the task's stdout until it contains want.
func waitForLog(t *testing.T, cfg *drivers.TaskConfig, want string, timeout time.Duration) {
	t.Helper()
	var got string
	defer func() {
		if t.Failed() {
			t.Logf("stdout: %q", got)
		}
	}()
	testproc.Eventually(t, timeout, fmt.Sprintf("stdout containing %q", want), func() bool {
		got = readLog(t, cfg, "stdout")
		return strings.Contains(got, want)
	})
}

func TestStopKillSignalAndTimeout(t *testing.T) {
	d := newDriver(t, nil)
	t.Run("graceful", func(t *testing.T) {
		cfg := shTask(t, `trap 'echo got-term; exit 0' TERM; echo ready; while true; do sleep 0.1; done`)
		startTask(t, d, cfg)
		waitForLog(t, cfg, "ready", 20*time.Second)
		if err := d.StopTask(context.Background(), cfg.ID, 10*time.Second, ""); err != nil {
			t.Fatalf("StopTask: %v", err)
		}
		res := waitExit(t, d, cfg.ID, 10*time.Second)
		if res.ExitCode != 0 || !strings.Contains(readLog(t, cfg, "stdout"), "got-term") {
			t.Fatalf("exit %+v, stdout %q; want a clean exit after SIGTERM", res, readLog(t, cfg, "stdout"))
		}
	})
	t.Run("kill_signal", func(t *testing.T) {
		cfg := shTask(t, `trap 'echo got-usr1; exit 0' USR1; echo ready; while true; do sleep 0.1; done`)
		cfg.KillSignal = "SIGUSR1"
		startTask(t, d, cfg)
		waitForLog(t, cfg, "ready", 20*time.Second)
		if err := d.StopTask(context.Background(), cfg.ID, 10*time.Second, ""); err != nil {
			t.Fatalf("StopTask: %v", err)
		}
		if res := waitExit(t, d, cfg.ID, 10*time.Second); !res.Successful() {
			t.Fatalf("exit %+v", res)
		}
		if got := readLog(t, cfg, "stdout"); !strings.Contains(got, "got-usr1") {
			t.Fatalf("stdout %q, want got-usr1", got)
		}
	})
	t.Run("late_trap_pid1", func(t *testing.T) {
		// PID 1 installs its handler only after the stop signal was sent:
		// the kernel drops that first signal, the driver resends it.
		cfg := shTask(t, `sleep 0.5; trap 'echo got-term; exit 0' TERM; while true; do sleep 0.1; done`)
		startTask(t, d, cfg)
		// A SIGKILL after the 30 s timeout would fail the checks below.
		if err := d.StopTask(context.Background(), cfg.ID, 30*time.Second, "SIGTERM"); err != nil {
			t.Fatalf("StopTask: %v", err)
		}
		res := waitExit(t, d, cfg.ID, 10*time.Second)
		if !res.Successful() || !strings.Contains(readLog(t, cfg, "stdout"), "got-term") {
			t.Fatalf("exit %+v stdout %q, want the trap to run", res, readLog(t, cfg, "stdout"))
		}
	})
	t.Run("timeout_kills", func(t *testing.T) {
		cfg := shTask(t, `trap '' TERM; echo ready; while true; do sleep 0.1; done`)
		startTask(t, d, cfg)
		waitForLog(t, cfg, "ready", 20*time.Second)
		start := time.Now()
		if err := d.StopTask(context.Background(), cfg.ID, 300*time.Millisecond, "SIGTERM"); err != nil {
			t.Fatalf("StopTask: %v", err)
		}
		res := waitExit(t, d, cfg.ID, 10*time.Second)
		if res.Signal != int(syscall.SIGKILL) || res.Successful() {
			t.Fatalf("exit %+v, want killed by SIGKILL", res)
		}
		if el := time.Since(start); el < 300*time.Millisecond {
			t.Fatalf("killed after %s, before the kill timeout", el)
		}
	})
}

func TestSignalTask(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, `trap 'echo hup; exit 4' HUP; echo ready; while true; do sleep 0.1; done`)
	startTask(t, d, cfg)
	waitForLog(t, cfg, "ready", 20*time.Second)
	if err := d.SignalTask(context.Background(), cfg.ID, "SIGHUP"); err != nil {
		t.Fatalf("SignalTask: %v", err)
	}
	if res := waitExit(t, d, cfg.ID, 10*time.Second); res.ExitCode != 4 {
		t.Fatalf("exit %+v, want 4", res)
	}
	if err := d.SignalTask(context.Background(), cfg.ID, "SIGNOPE"); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Fatalf("bad signal: err %v, want ErrInvalidConfig", err)
	}
}

func TestOOMKilled(t *testing.T) {
	d := newDriver(t, nil)
	// 64 MB limit; the shell builds a string far larger than that.
	cfg := shTask(t, `x=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; while true; do x="$x$x"; done`)
	cfg.Resources.Memory.MemoryMB = 64
	startTask(t, d, cfg)
	res := waitExit(t, d, cfg.ID, 60*time.Second)
	if !res.OOMKilled || res.Successful() {
		t.Fatalf("exit %+v, want OOMKilled", res)
	}
}

// cgroupOf returns the host path of the task's cgroup for controller.
func cgroupOf(t *testing.T, pid uint32, controller string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return filepath.Join(cgroupRoot, controller, parts[2])
			}
		}
		if parts[1] == "" && isCgroup2() {
			return filepath.Join(cgroupRoot, parts[2])
		}
	}
	t.Fatalf("no %s cgroup for pid %d in %q", controller, pid, b)
	return ""
}

func isCgroup2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(b))
}

func TestResourceLimitsEnforced(t *testing.T) {
	if isCgroup2() {
		t.Skip("checks cgroup v1 files; this host is cgroup v2")
	}
	d := newDriver(t, nil)
	cfg := shTask(t, `echo ready; while true; do sleep 0.1; done`)
	cfg.Config["pids_limit"] = 50
	cfg.Config["cpu_hard_limit"] = true
	cfg.Resources.Cpu.CpuShares = 500
	cfg.Resources.Memory.MemoryMB = 128
	cfg.Resources.Memory.MemoryMaxMB = 192
	startTask(t, d, cfg)
	waitForLog(t, cfg, "ready", 20*time.Second)
	ts, err := d.tasks.Get(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := ts.task.Pid()
	mem := cgroupOf(t, pid, "memory")
	if !strings.HasSuffix(mem, CgroupParent+"/"+ts.st.ContainerID) {
		t.Errorf("memory cgroup %s, want under %s", mem, CgroupParent)
	}
	checks := map[string]string{
		filepath.Join(mem, "memory.limit_in_bytes"):                 strconv.Itoa(192 << 20),
		filepath.Join(mem, "memory.soft_limit_in_bytes"):            strconv.Itoa(128 << 20),
		filepath.Join(cgroupOf(t, pid, "cpu"), "cpu.shares"):        "500",
		filepath.Join(cgroupOf(t, pid, "pids"), "pids.max"):         "50",
		filepath.Join(cgroupOf(t, pid, "cpu"), "cpu.cfs_period_us"): "100000",
	}
	for path, want := range checks {
		if got := readTrim(t, path); got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if d.mhzPerCore > 0 {
		want := max(int64(500)*cfsPeriod/d.mhzPerCore, 1000)
		if got := readTrim(t, filepath.Join(cgroupOf(t, pid, "cpu"), "cpu.cfs_quota_us")); got != strconv.FormatInt(want, 10) {
			t.Errorf("cpu.cfs_quota_us = %s, want %d", got, want)
		}
	}
}

func TestStatsReportUsage(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, `echo ready; while true; do :; done`)
	startTask(t, d, cfg)
	waitForLog(t, cfg, "ready", 20*time.Second)
	ctx := context.Background()
	first, err := d.TaskStats(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("TaskStats: %v", err)
	}
	if first.ResourceUsage.MemoryStats.Usage == 0 {
		t.Errorf("memory usage 0, want > 0: %+v", first.ResourceUsage.MemoryStats)
	}
	// The busy loop burns cpu: a later sample shows a positive percentage.
	testproc.Eventually(t, 10*time.Second, "a cpu percent above 1", func() bool {
		s, err := d.TaskStats(ctx, cfg.ID)
		if err != nil {
			t.Fatalf("TaskStats: %v", err)
		}
		return s.ResourceUsage.CpuStats.Percent > 1
	})
	if _, err := d.TaskStats(ctx, "nope"); !errors.Is(err, drivers.ErrTaskNotFound) {
		t.Fatalf("unknown task: %v, want ErrTaskNotFound", err)
	}
}

func TestReservedCores(t *testing.T) {
	if isCgroup2() {
		t.Skip("checks cgroup v1 files; this host is cgroup v2")
	}
	d := newDriver(t, nil)
	cfg := shTask(t, `echo ready; while true; do sleep 0.1; done`)
	cfg.Resources.Cpu.ReservedCores = []uint16{0}
	startTask(t, d, cfg)
	waitForLog(t, cfg, "ready", 20*time.Second)
	ts, err := d.tasks.Get(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := ts.task.Pid()
	if got := readTrim(t, filepath.Join(cgroupOf(t, pid, "cpuset"), "cpuset.cpus")); got != "0" {
		t.Errorf("cpuset.cpus = %s, want 0", got)
	}
	if got := readTrim(t, filepath.Join(cgroupOf(t, pid, "cpu"), "cpu.cfs_quota_us")); got != "100000" {
		t.Errorf("cpu.cfs_quota_us = %s, want one core", got)
	}
}
