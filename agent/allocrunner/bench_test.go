package allocrunner

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/mock"
)

// BenchmarkStart100Allocs starts 100 single-task allocs on the mock
// driver (state persisted in bbolt) and waits until all run.
func BenchmarkStart100Allocs(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		db, err := clientstate.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		d, _ := mock.New(drivers.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		var runners []*AllocRunner
		for i := 0; i < 100; i++ {
			a := newAlloc(api.JobTypeService, nil, mockTask("main", map[string]any{"run_for": "1h"}))
			a.ID = fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
			ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(dir, "alloc", a.ID), Node: &api.Node{ID: "n"},
				Drivers: map[string]drivers.Driver{mock.Name: d}, Store: db})
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
