package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor"
	"golang.org/x/sys/unix"
)

// sandboxScript prints what the sandbox checks look at.
const sandboxScript = `grep -E '^(NoNewPrivs|Seccomp|Cap[A-Za-z]+):' /proc/self/status
/probe/probe add_key net
/probe/suid-probe euid
cat /proc/self/mountinfo
`

// checkSandbox checks sandboxScript's output of a process running as
// nobody in an exec task.
func checkSandbox(t *testing.T, out string) {
	t.Helper()
	st := drivertest.StatusFields(out)
	want := map[string]string{
		"NoNewPrivs": "1", "Seccomp": "2", "CapBnd": fmt.Sprintf("%016x", executor.DefaultCapMask()),
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapInh": "0000000000000000", "CapAmb": "0000000000000000",
	}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("/proc/self/status %s = %q, want %q", k, st[k], v)
		}
	}
	// add_key is allowed to any user by the kernel, denied by the filter.
	for _, w := range []string{"add_key=EPERM\n", "net=ok\n", "euid=65534\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	mounts := drivertest.MountOptions(out)
	for _, p := range []string{"/local", "/alloc", "/secrets", "/tmp", "/probe", "/etc/passwd"} {
		if _, ok := mounts[p]; !ok {
			t.Errorf("no mount at %s in the task's mountinfo", p)
		}
	}
	host := 0
	for _, d := range []string{"/usr", "/bin", "/lib", "/sbin"} {
		if _, ok := mounts[d]; ok {
			host++
		}
	}
	if host == 0 {
		t.Errorf("none of /usr, /bin, /lib, /sbin is mounted in the task")
	}
	for p, opts := range mounts {
		if !slices.Contains(opts, "nosuid") {
			t.Errorf("mount %s options %v lack nosuid", p, opts)
		}
		// Device nodes are bound one by one under /dev.
		if p != "/dev" && (!strings.HasPrefix(p, "/dev/") || p == "/dev/shm") && !slices.Contains(opts, "nodev") {
			t.Errorf("mount %s options %v lack nodev", p, opts)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// sandboxTask is a task running script with the probe mounted and an
// identity token written as the client does.
func sandboxTask(t *testing.T, name, script string) *drivers.TaskConfig {
	t.Helper()
	cfg := drivertest.NewTaskConfig(t, name, map[string]any{"command": "/bin/sh", "args": []any{"-c", script}})
	cfg.Mounts = []*drivers.MountSpec{
		{HostPath: drivertest.SandboxProbe(t), TaskPath: "/probe", Readonly: true},
	}
	// As the client writes it before the start: root, 0600, in a 0700 dir.
	secrets := filepath.Join(cfg.TaskDir, "secrets")
	if err := os.Chmod(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "nomad_token"), []byte("tok-"+name), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSandbox: an exec task (user nobody) runs with no_new_privs, the
// default seccomp filter (add_key denied), the default bounding set and
// no other capabilities, nosuid (a setuid-root binary does not make it
// root) and nodev on every mount, and can still do network I/O.
func TestSandbox(t *testing.T) {
	drivertest.NeedRoot(t)
	cfg := sandboxTask(t, "sandbox", sandboxScript+"cat /secrets/nomad_token; echo")
	res, out := run(t, cfg)
	if !res.Successful() {
		t.Fatalf("exit %+v, stdout %q", res, out)
	}
	checkSandbox(t, out)
	if !strings.Contains(out, "tok-sandbox\n") {
		t.Errorf("task cannot read its identity token: %q", out)
	}
}

// TestSecretsOwnedByTaskUser: the secrets dir and the identity file the
// client wrote (root, 0600) become the task user's, unreadable by any
// other user.
func TestSecretsOwnedByTaskUser(t *testing.T) {
	drivertest.NeedRoot(t)
	cfg := sandboxTask(t, "secrets", "cat /secrets/nomad_token")
	res, out := run(t, cfg)
	if !res.Successful() || out != "tok-secrets" {
		t.Fatalf("exit %+v, stdout %q, want the token", res, out)
	}
	for p, mode := range map[string]os.FileMode{"secrets": os.ModeDir | 0o700, "secrets/nomad_token": 0o600} {
		st, err := os.Lstat(filepath.Join(cfg.TaskDir, p))
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 65534 || st.Mode() != mode {
			t.Errorf("%s: uid %d mode %v, want 65534 (nobody) and %v", p, sys.Uid, st.Mode(), mode)
		}
	}
	// daemon (uid 1) cannot read it.
	cat := osexec.Command("cat", filepath.Join(cfg.TaskDir, "secrets", "nomad_token"))
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1, Gid: 1}}
	if b, err := cat.CombinedOutput(); err == nil || strings.Contains(string(b), "tok-") {
		t.Errorf("uid 1 reads the token: %q, %v", b, err)
	}
}

// TestExecTaskSandbox: a command exec'd into a task (alloc exec) gets the
// task's sandbox too, and its environment.
func TestExecTaskSandbox(t *testing.T) {
	drivertest.NeedRoot(t)
	d := newDriver(t)
	cfg := sandboxTask(t, "execsb", "exec sleep 600")
	cfg.Env["FROM_TASK"] = "task-env"
	if _, err := d.StartTask(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	res, err := d.(drivers.Execer).ExecTask(ctx, cfg.ID, &drivers.ExecOptions{
		Command: []string{"/bin/sh", "-c", sandboxScript + `echo "env=$FROM_TASK $FROM_EXEC"; cat /secrets/nomad_token; echo`},
		Env:     map[string]string{"FROM_EXEC": "exec-env"}, Stdout: &out, Stderr: &errOut})
	if err != nil || !res.Successful() {
		t.Fatalf("ExecTask = %+v, %v: %s %s", res, err, out.String(), errOut.String())
	}
	checkSandbox(t, out.String())
	for _, w := range []string{"env=task-env exec-env\n", "tok-execsb\n"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("exec output lacks %q: %s", w, out.String())
		}
	}
}

// TestInitSandboxed: the namespace init, whose PID the driver reports as
// the task's, holds no more than its task: no_new_privs, the filter, the
// default bounding set and of its own capabilities only CAP_KILL
// (StartTask returns once the init has dropped the rest).
func TestInitSandboxed(t *testing.T) {
	drivertest.NeedRoot(t)
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "initsb", map[string]any{"command": "/bin/sh", "args": []any{"-c", "exec sleep 600"}})
	h, err := d.StartTask(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	// Every thread of the init, not only the one that forked the task.
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", st.TaskPID))
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tasks {
		f, err := os.Open(fmt.Sprintf("/proc/%d/task/%s/status", st.TaskPID, tid.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := drivertest.StatusFields(string(b))
		want := map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "CapBnd": fmt.Sprintf("%016x", executor.DefaultCapMask()),
			"CapEff": fmt.Sprintf("%016x", 1<<unix.CAP_KILL), "CapPrm": fmt.Sprintf("%016x", 1<<unix.CAP_KILL), "CapInh": "0000000000000000"}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("init thread %s: %s = %q, want %q", tid.Name(), k, got[k], v)
			}
		}
	}
}
