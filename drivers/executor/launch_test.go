package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor/supervisor"
	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/internal/testproc"
)

// droverBin is the drover binary the tests run (with drover-executor next
// to it, as make build and testproc.DroverBinary lay them out).
var droverBin string

func TestMain(m *testing.M) {
	testproc.MainWithBinary(m, &droverBin)
}

func TestFindSupervisor(t *testing.T) {
	dir := t.TempDir()
	drover := filepath.Join(dir, "drover")
	helper := filepath.Join(dir, HelperName)
	if err := os.WriteFile(drover, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := func(protocol string) []byte {
		return []byte("#!/bin/sh\n[ \"$1\" = --protocol ] && echo " + protocol + "\n")
	}
	fallback := Supervisor{Path: drover, Args: []string{"executor"}}
	if got := FindSupervisor(drover); !cmp.Equal(got, fallback) {
		t.Errorf("without %s: FindSupervisor = %+v, want %+v", HelperName, got, fallback)
	}
	// Not executable: not used.
	if err := os.WriteFile(helper, script(supervisor.Protocol), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := FindSupervisor(drover); !cmp.Equal(got, fallback) {
		t.Errorf("with a non-executable %s: FindSupervisor = %+v, want %+v", HelperName, got, fallback)
	}
	if err := os.Chmod(helper, 0o755); err != nil {
		t.Fatal(err)
	}
	want := Supervisor{Path: helper}
	if got := FindSupervisor(drover); !cmp.Equal(got, want) {
		t.Errorf("with %s: FindSupervisor = %+v, want %+v", HelperName, got, want)
	}
	// One of another version (another protocol) is not used either.
	if err := os.WriteFile(helper, script("drover-executor/0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(helper, time.Now(), time.Now().Add(time.Hour)); err != nil { // a new mtime: checked again
		t.Fatal(err)
	}
	if got := FindSupervisor(drover); !cmp.Equal(got, fallback) {
		t.Errorf("with %s of another protocol: FindSupervisor = %+v, want %+v", HelperName, got, fallback)
	}
	// executor_path naming the helper itself.
	other := filepath.Join(t.TempDir(), HelperName)
	if got := FindSupervisor(other); got.Path != other || len(got.Args) != 0 {
		t.Errorf("FindSupervisor(%s) = %+v, want it as is", other, got)
	}
}

// TestSupervisorBinary runs tasks through the raw_exec (and, as root with
// cgroups, the exec) driver twice: with drover-executor next to drover,
// where it must be the supervisor, and with drover alone, where `drover
// executor` must do the same work.
func TestSupervisorBinary(t *testing.T) {
	helper := filepath.Join(filepath.Dir(droverBin), HelperName)
	if _, err := os.Stat(helper); err != nil {
		t.Fatalf("%s must lie next to %s (make build, testproc.DroverBinary): %v", HelperName, droverBin, err)
	}
	alone := filepath.Join(t.TempDir(), "drover")
	if err := copyFile(droverBin, alone); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, bin, wantExe string
		wantArgs           []string
	}{
		{"helper", droverBin, helper, nil},
		{"fallback", alone, alone, []string{"executor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolated := []bool{false}
			if CgroupsUsable() == nil {
				isolated = append(isolated, true)
			}
			for _, iso := range isolated {
				name := map[bool]string{false: "raw_exec", true: "exec"}[iso]
				d, err := NewDriver(name, iso, drivers.Options{Config: map[string]any{"executor_path": tc.bin}, DataDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				checkSupervisedTask(t, d, tc.wantExe, tc.wantArgs)
			}
		})
	}
}

func checkSupervisedTask(t *testing.T, d *Driver, wantExe string, wantArgs []string) {
	t.Helper()
	ctx := t.Context()
	cfg := drivertest.NewTaskConfig(t, "sup", map[string]any{"command": "/bin/sh",
		"args": []any{"-c", `echo started; trap 'echo stopping; exit 7' TERM; while :; do sleep 0.05; done`}})
	_, err := d.StartTask(ctx, cfg)
	if err != nil {
		t.Fatalf("%s: StartTask: %v", d.Name(), err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	ch, err := d.WaitTask(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := d.tasks.Get(cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := tk.proc.State.ExecutorPID
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Fatalf("%s: supervisor %d: %v", d.Name(), pid, err)
	}
	if exe != wantExe {
		t.Errorf("%s: supervisor runs %s, want %s", d.Name(), exe, wantExe)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")[1:]
	if want := append(slices.Clip(wantArgs), filepath.Join(tk.proc.State.StateDir, "config.json")); !slices.Equal(args, want) {
		t.Errorf("%s: supervisor args %q, want %q", d.Name(), args, want)
	}
	waitLog(t, cfg, "started")
	// A command run in the task (through --join when it has a cgroup).
	var out strings.Builder
	res, err := d.ExecTask(ctx, cfg.ID, &drivers.ExecOptions{Command: []string{"/bin/sh", "-c", "echo in-task; exit 3"}, Stdout: &out})
	if err != nil || res.ExitCode != 3 || !strings.Contains(out.String(), "in-task") {
		t.Errorf("%s: ExecTask = %+v, %v, output %q; want exit 3 and in-task", d.Name(), res, err, out.String())
	}
	if err := d.StopTask(ctx, cfg.ID, 10*time.Second, "SIGTERM"); err != nil {
		t.Fatalf("%s: StopTask: %v", d.Name(), err)
	}
	select {
	case r := <-ch:
		if r == nil || r.ExitCode != 7 || r.Err != nil {
			t.Errorf("%s: exit = %+v, want code 7", d.Name(), r)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: task did not exit", d.Name())
	}
	waitLog(t, cfg, "stopping")
}

// waitLog polls the task's stdout log for s.
func waitLog(t *testing.T, cfg *drivers.TaskConfig, s string) {
	t.Helper()
	var got string
	defer func() {
		if t.Failed() {
			t.Logf("stdout: %q", got)
		}
	}()
	testproc.Eventually(t, 20*time.Second, fmt.Sprintf("stdout containing %q", s), func() bool {
		b, _ := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, "stdout"))
		got = string(b)
		return strings.Contains(got, s)
	})
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}
