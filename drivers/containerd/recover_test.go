package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/internal/testproc"
)

const waitForGo = `echo before; while [ ! -f /local/go ]; do sleep 0.05; done; echo after; exit 5`

func TestRecoverAfterDriverRecreated(t *testing.T) {
	d1 := newDriver(t, nil)
	cfg := shTask(t, waitForGo)
	h := startTask(t, d1, cfg)
	waitForLog(t, cfg, "before", 20*time.Second)

	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var persisted drivers.TaskHandle
	if err := json.Unmarshal(raw, &persisted); err != nil {
		t.Fatal(err)
	}
	d2 := newDriver(t, nil)
	if err := d2.RecoverTask(context.Background(), &persisted); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := waitExit(t, d2, cfg.ID, 20*time.Second); res.ExitCode != 5 {
		t.Fatalf("exit %+v, want 5", res)
	}
	if got := readLog(t, cfg, "stdout"); got != "before\nafter\n" {
		t.Fatalf("stdout = %q, want before+after exactly once", got)
	}
	if err := d2.DestroyTask(context.Background(), cfg.ID, false); err != nil {
		t.Fatalf("DestroyTask: %v", err)
	}
	if err := d2.RecoverTask(context.Background(), &persisted); !errors.Is(err, drivers.ErrRecoverFailed) {
		t.Fatalf("recover destroyed task: %v, want ErrRecoverFailed", err)
	}
}

// TestHelperAgent is not a test: TestRecoverAfterAgentKill runs the test
// binary as a throw-away "agent" process that starts a task, writes the
// handle and blocks until it is killed with SIGKILL.
func TestHelperAgent(t *testing.T) {
	spec := os.Getenv("DROVER_CTRD_HELPER")
	if spec == "" {
		t.Skip("helper process only")
	}
	var in struct {
		Address string
		DataDir string
		Config  *drivers.TaskConfig
		Out     string
	}
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	d, err := New(drivers.Options{Config: map[string]any{"address": in.Address, "namespace": "drover-test"}, DataDir: in.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.StartTask(context.Background(), in.Config)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(h)
	if err := os.WriteFile(in.Out+".tmp", out, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(in.Out+".tmp", in.Out); err != nil {
		t.Fatal(err)
	}
	select {} // until SIGKILL
}

func TestRecoverAfterAgentKill(t *testing.T) {
	dm := needDaemon(t)
	cfg := shTask(t, waitForGo)
	dir := t.TempDir()
	spec, handlePath := filepath.Join(dir, "spec.json"), filepath.Join(dir, "handle.json")
	b, _ := json.Marshal(map[string]any{"Address": dm.Address, "DataDir": dataDir, "Config": cfg, "Out": handlePath})
	if err := os.WriteFile(spec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAgent$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DROVER_CTRD_HELPER="+spec)
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			_ = cmd.Process.Kill()
			t.Logf("helper agent output:\n%s", stderr.String())
		}
	}()
	testproc.Eventually(t, 60*time.Second, "the helper agent's handle", func() bool {
		if _, err := os.Stat(handlePath); err == nil {
			return true
		}
		select {
		case err := <-exited:
			t.Fatalf("helper agent exited early: %v", err)
		default:
		}
		return false
	})
	waitForLog(t, cfg, "before", 20*time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	var h drivers.TaskHandle
	b, err := os.ReadFile(handlePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	d := newDriver(t, nil)
	// The container outlived its agent and is a leftover until recovered.
	left, err := d.Leftovers(context.Background(), nil)
	if err != nil {
		t.Fatalf("Leftovers: %v", err)
	}
	if !slices.Contains(left, ContainerID(cfg.ID)) {
		t.Fatalf("Leftovers = %v, want %s", left, ContainerID(cfg.ID))
	}
	if left, _ := d.Leftovers(context.Background(), []string{cfg.ID}); slices.Contains(left, ContainerID(cfg.ID)) {
		t.Fatalf("Leftovers(known) = %v still lists the known task", left)
	}
	// Output written while no agent runs waits in the FIFO.
	if err := os.WriteFile(filepath.Join(cfg.TaskDir, "local", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.RecoverTask(context.Background(), &h); err != nil {
		t.Fatalf("RecoverTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	if res := waitExit(t, d, cfg.ID, 20*time.Second); res.ExitCode != 5 {
		t.Fatalf("exit %+v, want 5", res)
	}
	if got := readLog(t, cfg, "stdout"); got != "before\nafter\n" {
		t.Fatalf("stdout = %q, want before+after", got)
	}
}

func TestRecoverUnknownContainer(t *testing.T) {
	d := newDriver(t, nil)
	cfg := drivertest.NewTaskConfig(t, "gone", map[string]any{"image": "x"})
	st, _ := json.Marshal(State{ContainerID: "does-not-exist", Namespace: "drover-test"})
	err := d.RecoverTask(context.Background(), &drivers.TaskHandle{Version: 1, Config: cfg, DriverState: st})
	if !errors.Is(err, drivers.ErrRecoverFailed) {
		t.Fatalf("err %v, want ErrRecoverFailed", err)
	}
}
