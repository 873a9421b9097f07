package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/logging"
)

func startTask(t *testing.T, d *Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := d.StartTask(ctx, cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.DestroyTask(ctx, cfg.ID, true); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
			t.Errorf("DestroyTask: %v", err)
		}
	})
	return h
}

func waitExit(t *testing.T, d *Driver, id string, timeout time.Duration) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatalf("WaitTask: %v", err)
	}
	res, ok := <-ch
	if !ok {
		t.Fatalf("task %s did not exit within %s", id, timeout)
	}
	return res
}

func readLog(t *testing.T, cfg *drivers.TaskConfig, stream string) string {
	t.Helper()
	b, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, stream))
	if err != nil {
		t.Fatalf("read %s: %v", stream, err)
	}
	return string(b)
}

func shTask(t *testing.T, script string) *drivers.TaskConfig {
	return drivertest.NewTaskConfig(t, "web", map[string]any{
		"image": busyboxImage(t), "command": "/bin/sh", "args": []any{"-c", script},
	})
}

func TestStartLogsAndExitCode(t *testing.T) {
	// Without a data dir the FIFOs live in the task dir.
	needDaemon(t)
	d, err := New(drivers.Options{Config: map[string]any{"address": daemon.Address, "namespace": "drover-test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	cfg := shTask(t, `echo hello $DROVER_TASK_NAME; echo oops >&2; ls -d /alloc /local /secrets; exit 3`)
	startTask(t, d, cfg)
	res := waitExit(t, d, cfg.ID, 30*time.Second)
	if res.ExitCode != 3 || res.OOMKilled || res.Err != nil {
		t.Fatalf("exit = %+v, want code 3", res)
	}
	if got, want := readLog(t, cfg, "stdout"), "hello web\n/alloc\n/local\n/secrets\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := readLog(t, cfg, "stderr"), "oops\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, ".containerd", "stdout.fifo")); err != nil {
		t.Errorf("fifo not in the task dir: %v", err)
	}
	if err := d.DestroyTask(context.Background(), cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, ".containerd")); !os.IsNotExist(err) {
		t.Errorf("fifo dir left after destroy: %v", err)
	}
}

func TestFIFOsInDataDir(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, "echo x")
	startTask(t, d, cfg)
	waitExit(t, d, cfg.ID, 30*time.Second)
	fifo := filepath.Join(dataDir, "fifo", ContainerID(cfg.ID), "stdout.fifo")
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("stat %s: %v", fifo, err)
	}
	if _, err := os.Stat(filepath.Join(cfg.TaskDir, ".containerd")); !os.IsNotExist(err) {
		t.Errorf("fifos in the task dir too: %v", err)
	}
	if err := d.DestroyTask(context.Background(), cfg.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(fifo)); !os.IsNotExist(err) {
		t.Errorf("fifo dir left after destroy: %v", err)
	}
}

func TestAllocDirsMounted(t *testing.T) {
	d := newDriver(t, nil)
	cfg := shTask(t, `echo shared > /alloc/data/x && echo mine > /local/y && cat /secrets/s`)
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "secrets", "s"), []byte("top\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startTask(t, d, cfg)
	if res := waitExit(t, d, cfg.ID, 30*time.Second); !res.Successful() {
		t.Fatalf("exit = %+v, stderr %q", res, readLog(t, cfg, "stderr"))
	}
	for path, want := range map[string]string{
		filepath.Join(cfg.AllocDir, "alloc", "data", "x"): "shared\n",
		filepath.Join(cfg.TaskDir, "local", "y"):          "mine\n",
	} {
		b, err := os.ReadFile(path)
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", path, b, err, want)
		}
	}
	if got := readLog(t, cfg, "stdout"); got != "top\n" {
		t.Errorf("stdout = %q, want secret", got)
	}
}
