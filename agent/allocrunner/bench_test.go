package allocrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/mock"
	"github.com/drover/drover/drivers/rawexec"
)

// BenchmarkStart100Allocs starts 100 single-task allocs on the mock
// driver (state persisted in bbolt) and waits until all run.
func BenchmarkStart100Allocs(b *testing.B) {
	d, _ := mock.New(drivers.Options{})
	bench100(b, d, mockTask("main", map[string]any{"run_for": "1h"}))
}

// BenchmarkStart100RawExec is the same with real raw_exec processes
// (a supervisor and a shell each).
func BenchmarkStart100RawExec(b *testing.B) {
	bin := os.Getenv("DROVER_TEST_BIN")
	if bin == "" {
		b.Skip("set DROVER_TEST_BIN")
	}
	d, err := rawexec.New(drivers.Options{Config: map[string]any{"executor_path": bin}, DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	tk := &api.Task{Name: "main", Driver: rawexec.Name, KillTimeout: time.Second,
		Config: map[string]any{"command": "/bin/sleep", "args": []any{"3600"}}}
	bench100(b, d, tk)
}

func bench100(b *testing.B, d drivers.Driver, tk *api.Task) {
	for b.Loop() {
		dir := b.TempDir()
		db, err := clientstate.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var runners []*AllocRunner
		for i := 0; i < 100; i++ {
			a := newAlloc(api.JobTypeService, nil, tk)
			a.ID = fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
			ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(dir, "alloc", a.ID), Node: &api.Node{ID: "n"},
				Drivers: map[string]drivers.Driver{d.Name(): d}, Store: db})
			if err != nil {
				b.Fatal(err)
			}
			runners = append(runners, ar)
			go ar.Run(ctx)
		}
		for _, ar := range runners {
			tick := time.NewTicker(time.Millisecond)
			for ar.Alloc().ClientStatus != api.AllocClientStatusRunning {
				<-tick.C
			}
			tick.Stop()
		}
		b.StopTimer()
		for _, ar := range runners {
			ar.Kill()
		}
		for _, ar := range runners {
			<-ar.WaitCh()
		}
		cancel()
		db.Close()
		b.StartTimer()
	}
}
