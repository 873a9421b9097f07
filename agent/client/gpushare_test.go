package client

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/agent/gpushare"
	"github.com/drover/drover/agent/gpushare/gpusharetest"
	"github.com/drover/drover/api"
)

// After an agent restart the MPS daemon of a GPU a restored, live task
// holds is kept (its task adopts it); the daemons of GPUs whose tasks are
// dead, or never started, are told to quit.
func TestRestoreMPS(t *testing.T) {
	s := gpusharetest.New(t)
	s.OnPath(t)
	dir := t.TempDir()
	db, err := clientstate.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mpsDir := filepath.Join(dir, "mps")
	ctx := context.Background()

	// The earlier agent's daemons, one per GPU, never released.
	before := gpushare.New(gpushare.Config{Dir: mpsDir})
	for _, gpu := range []string{"GPU-0", "GPU-1", "GPU-2"} {
		if _, err := before.Acquire(ctx, "old/"+gpu, []string{gpu}); err != nil {
			t.Fatal(err)
		}
	}
	daemon := map[string]int{}
	for _, c := range s.Starts(t) {
		daemon[c.Visible] = c.Daemon
	}

	share := &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS}
	alloc := func(id string, gpus map[string]string) *api.Allocation {
		tg := &api.TaskGroup{Name: "g"}
		res := &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{}}
		for task, gpu := range gpus {
			tg.Tasks = append(tg.Tasks, &api.Task{Name: task, Driver: "mock_driver"})
			res.Tasks[task] = &api.AllocatedTaskResources{Devices: []*api.AllocatedDeviceResource{
				{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{gpu}, Share: share}}}
		}
		return &api.Allocation{ID: id, TaskGroup: "g", Job: &api.Job{ID: "j", TaskGroups: []*api.TaskGroup{tg}}, AllocatedResources: res}
	}
	a := alloc("a1", map[string]string{"live": "GPU-0", "done": "GPU-1"})
	b := alloc("a2", map[string]string{"unstarted": "GPU-2"})
	for _, r := range []struct {
		task, state string
	}{{"live", api.TaskStateRunning}, {"done", api.TaskStateDead}} {
		if err := db.PutTask("a1", r.task, &clientstate.TaskRecord{State: &api.TaskState{State: r.state}}); err != nil {
			t.Fatal(err)
		}
	}

	c := &Client{db: db, log: slog.New(slog.DiscardHandler), mps: gpushare.New(gpushare.Config{Dir: mpsDir})}
	c.restoreMPS(ctx, []*api.Allocation{a, b})
	if !gpusharetest.Alive(daemon["GPU-0"]) {
		t.Errorf("GPU-0's daemon (a running task's) stopped by the restore")
	}
	for _, gpu := range []string{"GPU-1", "GPU-2"} {
		if gpusharetest.Alive(daemon[gpu]) {
			t.Errorf("%s's daemon (no live task) still running after the restore", gpu)
		}
	}
	if n := len(s.Quits(t)); n != 2 {
		t.Errorf("%d quits, want 2", n)
	}
}
