package rawexec

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/executor"
)

// BenchmarkStart100 starts 100 raw_exec tasks at once (as a client placing
// a 100-alloc job would) and reports the time until all run and the
// supervisors' total private memory.
func BenchmarkStart100(b *testing.B) {
	const n = 100
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		d, err := New(drivers.Options{Config: map[string]any{"executor_path": droverBin}, DataDir: stateDir})
		if err != nil {
			b.Fatal(err)
		}
		cfgs := make([]*drivers.TaskConfig, n)
		for j := range cfgs {
			cfgs[j] = drivertest.NewTaskConfig(b, fmt.Sprintf("t%d", j), map[string]any{"command": "/bin/sleep", "args": []any{"600"}})
		}
		handles := make([]*drivers.TaskHandle, n)
		errs := make([]error, n)
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for j := range cfgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				handles[j], errs[j] = d.StartTask(context.Background(), cfgs[j])
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		var anon, rss uint64
		for j, h := range handles {
			if errs[j] != nil {
				b.Fatalf("task %d: %v", j, errs[j])
			}
			var st executor.State
			if err := json.Unmarshal(h.DriverState, &st); err != nil {
				b.Fatal(err)
			}
			r, a, err := executor.Memory(st.ExecutorPID)
			if err != nil {
				b.Fatal(err)
			}
			rss += r
			anon += a
		}
		b.ReportMetric(elapsed.Seconds(), "s/100tasks")
		b.ReportMetric(float64(anon)/(1<<20), "MiB-private-total")
		b.ReportMetric(float64(rss)/(1<<20)/n, "MiB-RSS/executor")
		for _, h := range handles {
			if err := d.DestroyTask(context.Background(), h.Config.ID, true); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
}
