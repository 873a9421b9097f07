package rawexec

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor"
)

func startTask(t *testing.T, d drivers.Driver, cfg *drivers.TaskConfig) *drivers.TaskHandle {
	t.Helper()
	h, err := d.StartTask(context.Background(), cfg)
	if err != nil {
		t.Fatalf("StartTask: %v", err)
	}
	t.Cleanup(func() { _ = d.DestroyTask(context.Background(), cfg.ID, true) })
	return h
}

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := <-ch
	if !ok {
		t.Fatalf("task %s did not exit in 30s", id)
	}
	return r
}

// TestExecutorMemory measures the supervisor's resident memory.
func TestExecutorMemory(t *testing.T) {
	d := newDriver(t)
	cfg := drivertest.NewTaskConfig(t, "idle", map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
	h := startTask(t, d, cfg)
	var st executor.State
	if err := json.Unmarshal(h.DriverState, &st); err != nil {
		t.Fatal(err)
	}
	rss, anon, err := executor.Memory(st.ExecutorPID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("executor memory: RSS %.1f MiB, private (RssAnon) %.1f MiB", float64(rss)/(1<<20), float64(anon)/(1<<20))
	if anon == 0 || anon > rss {
		t.Errorf("executor memory: anon %d, rss %d", anon, rss)
	}
}
