package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor"
	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/internal/testproc"
)

func run(t *testing.T, cfg *drivers.TaskConfig) (*drivers.ExitResult, string) {
	t.Helper()
	return runOn(t, newDriver(t), cfg)
}

func runOn(t *testing.T, d drivers.Driver, cfg *drivers.TaskConfig) (*drivers.ExitResult, string) {
	t.Helper()
	if _, err := d.StartTask(context.Background(), cfg); err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := <-ch
	if !ok {
		t.Fatal("task did not exit within 30s")
	}
	out, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errOut, _ := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stderr"))
	if len(errOut) > 0 {
		t.Logf("stderr: %s", errOut)
	}
	return res, string(out)
}

// TestIsolation checks what an exec task sees: its own PID namespace,
// hostname, user nobody, a read-only root with writable task dirs, a
// fresh /proc and a minimal /dev.
func TestIsolation(t *testing.T) {
	drivertest.NeedRoot(t)
	script := `
echo "pid=$$"
echo "user=$(id -un)"
echo "host=$(hostname)"
echo "cwd=$(pwd)"
touch /usr/drover-test 2>/dev/null && echo "usr=writable" || echo "usr=readonly"
touch /etc/drover-test 2>/dev/null && echo "etc=writable" || echo "etc=readonly"
echo hi > /local/f && echo "local=writable"
echo hi > /alloc/data/f && echo "alloc=writable"
echo hi > /tmp/f && echo "tmp=writable"
echo "procs=$(ls /proc | grep -c '^[0-9]')"
echo "dev=$(ls /dev | tr '\n' ,)"
test -e /etc/shadow && echo shadow=visible || echo shadow=hidden
echo "data=$(cat /data/in)"
touch /data/out 2>/dev/null && echo "data=writable" || echo "data=readonly"
echo "init=$(tr '\0' ' ' < /proc/1/cmdline)"
`
	cfg := drivertest.NewTaskConfig(t, "iso", map[string]any{"command": "/bin/sh", "args": []any{"-c", script}})
	// The shared alloc dir is writable by the task's group members only
	// when the client makes it so; here make alloc/data world-writable.
	if err := os.Chmod(filepath.Join(cfg.AllocDir, "alloc", "data"), 0o777); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "in"), []byte("mounted"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o777); err != nil { // only the read-only mount stops writes
		t.Fatal(err)
	}
	cfg.Mounts = []*drivers.MountSpec{{HostPath: data, TaskPath: "/data", Readonly: true}}
	res, out := run(t, cfg)
	if !res.Successful() {
		t.Fatalf("exit %+v, stdout %q", res, out)
	}
	for _, want := range []string{"data=mounted\n", "data=readonly\n", "user=nobody\n", "host=iso\n", "cwd=/\n", "usr=readonly\n", "etc=readonly\n",
		"local=writable\n", "alloc=writable\n", "tmp=writable\n", "shadow=hidden\n", "init=/", "executor --init"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Only our init, the shell and its helpers are in the PID namespace
	// (PIDs are small: the init's threads take the first few).
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "pid="); ok && len(v) > 2 {
			t.Errorf("task shell has PID %s, want a small PID in a new namespace", v)
		}
		if v, ok := strings.CutPrefix(line, "procs="); ok && len(v) > 1 {
			t.Errorf("task sees %s processes, want a handful", v)
		}
		if v, ok := strings.CutPrefix(line, "dev="); ok {
			for _, n := range strings.Split(strings.TrimSuffix(v, ","), ",") {
				switch n {
				case "null", "zero", "full", "random", "urandom", "tty", "shm", "fd", "stdin", "stdout", "stderr":
				default:
					t.Errorf("unexpected /dev entry %q", n)
				}
			}
		}
	}
	// The file written to /local landed in the host task dir.
	if b, err := os.ReadFile(filepath.Join(cfg.TaskDir, "local", "f")); err != nil || string(b) != "hi\n" {
		t.Errorf("host task dir local/f = %q, %v", b, err)
	}
}

// TestUserAndHostPIDMode: Task.User is honoured; pid_mode host shares the
// host's PID namespace.
func TestUserAndHostPIDMode(t *testing.T) {
	drivertest.NeedRoot(t)
	cfg := drivertest.NewTaskConfig(t, "hostpid", map[string]any{"command": "/bin/sh",
		"args": []any{"-c", `echo "user=$(id -u)"; echo "procs=$(ls /proc | grep -c '^[0-9]')"`}, "pid_mode": "host"})
	cfg.User = "daemon"
	res, out := run(t, cfg)
	if !res.Successful() {
		t.Fatalf("exit %+v, stdout %q", res, out)
	}
	if !strings.Contains(out, "user=1\n") {
		t.Errorf("want uid 1 (daemon): %q", out)
	}
	if strings.Contains(out, "procs=1\n") || strings.Contains(out, "procs=2\n") || strings.Contains(out, "procs=3\n") {
		t.Errorf("pid_mode=host task sees few processes: %q", out)
	}
}

// TestCgroupLimits reads the limits back from the host's cgroup files
// while the task runs, and checks the device node is in the chroot.
func TestCgroupLimits(t *testing.T) {
	drivertest.NeedRoot(t)
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "limited", map[string]any{"command": "/bin/sh",
		"args": []any{"-c", `test -c /dev/kmsg && echo device=present; echo ready; exec sleep 600`}})
	cfg.Resources.Cpu.CpuShares = 250
	cfg.Resources.Cpu.ReservedCores = []uint16{0}
	cfg.Resources.Memory.MemoryMB = 64
	cfg.MemoryMaxMB = 128
	cfg.Devices = []*drivers.DeviceSpec{{HostPath: "/dev/kmsg", TaskPath: "/dev/kmsg", Permissions: "r"}}
	h, err := d.StartTask(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	var out []byte
	testproc.Eventually(t, 30*time.Second, "the task ready", func() bool {
		out, _ = logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
		return strings.Contains(string(out), "ready")
	})
	if !strings.Contains(string(out), "device=present") {
		t.Errorf("/dev/kmsg not in the chroot: %q", out)
	}
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	read := func(ctrl, file string) string {
		b, err := os.ReadFile(filepath.Join(executor.CgroupDir(st.Cgroup, ctrl), file))
		if err != nil {
			t.Errorf("read %s/%s: %v", ctrl, file, err)
		}
		return strings.TrimSpace(string(b))
	}
	if executor.CgroupsV2() {
		for file, want := range map[string]string{"memory.max": "134217728", "memory.low": "67108864",
			"cpu.max": "100000 100000", "pids.max": "4096", "cpuset.cpus": "0"} {
			if got := read("", file); got != want {
				t.Errorf("%s = %q, want %q", file, got, want)
			}
		}
		return
	}
	for _, c := range []struct{ ctrl, file, want string }{
		{"memory", "memory.limit_in_bytes", "134217728"},
		{"memory", "memory.soft_limit_in_bytes", "67108864"},
		{"cpu", "cpu.shares", "250"},
		{"cpu", "cpu.cfs_quota_us", "100000"},
		{"cpu", "cpu.cfs_period_us", "100000"},
		{"cpuset", "cpuset.cpus", "0"},
		{"pids", "pids.max", "4096"},
	} {
		if got := read(c.ctrl, c.file); got != c.want {
			t.Errorf("%s/%s = %q, want %q", c.ctrl, c.file, got, c.want)
		}
	}
	devs := read("devices", "devices.list")
	if strings.Contains(devs, "a *:* rwm") || !strings.Contains(devs, "c 1:11 r") || !strings.Contains(devs, "c 1:3 rwm") {
		t.Errorf("devices.list = %q, want the allow-list with c 1:11 r", devs)
	}
	// The task's processes are in the cgroup.
	if pids := executor.CgroupPids(st.Cgroup); len(pids) < 2 {
		t.Errorf("cgroup holds %v, want the init and the task", pids)
	}
}

// TestExecJoinsTaskCgroup: commands run by ExecTask count against the
// task's cgroup, as the task user.
func TestExecJoinsTaskCgroup(t *testing.T) {
	drivertest.NeedRoot(t)
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "execcg", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	h, err := d.StartTask(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res, err := d.(drivers.Execer).ExecTask(context.Background(), cfg.ID, &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", "id -un; cat /proc/self/cgroup"}, Stdout: &out, Stderr: &out})
	if err != nil || !res.Successful() {
		t.Fatalf("ExecTask = %+v, %v: %s", res, err, out.String())
	}
	want := ":/drover/" + st.Cgroup + "\n"
	if executor.CgroupsV2() {
		want = "0::/drover.slice/" + st.Cgroup + ".scope\n"
	}
	if !strings.Contains(out.String(), want) || !strings.HasPrefix(out.String(), "nobody\n") {
		t.Errorf("exec output %q, want user nobody and cgroup %q", out.String(), want)
	}
}

// TestRootTaskCapabilities: even a task running as root gets only the
// default capability bounding set, so it cannot mount.
func TestRootTaskCapabilities(t *testing.T) {
	drivertest.NeedRoot(t)
	cfg := drivertest.NewTaskConfig(t, "rooty", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`grep -E 'CapBnd|NoNewPrivs' /proc/self/status; mount -t tmpfs none /tmp 2>/dev/null && echo mount=ok || echo mount=denied`}})
	cfg.User = "root"
	// root is denied by default (user.denylist): allow it explicitly.
	res, out := runOn(t, newDriverWith(t, map[string]string{"user.denylist": ""}), cfg)
	if !res.Successful() {
		t.Fatalf("exit %+v: %q", res, out)
	}
	want := fmt.Sprintf("CapBnd:\t%016x\n", executor.DefaultCapMask())
	if !strings.Contains(out, want) || !strings.Contains(out, "mount=denied\n") || !strings.Contains(out, "NoNewPrivs:\t1\n") {
		t.Errorf("output %q, want %q, NoNewPrivs 1 and mount=denied", out, want)
	}
}
