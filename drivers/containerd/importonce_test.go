package containerd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
)

// TestConcurrentStartsImportArchiveOnce: tasks that start together with
// the same archive share one import (and unpack) of it.
func TestConcurrentStartsImportArchiveOnce(t *testing.T) {
	d := newDriver(t, nil)
	var mu sync.Mutex
	var events []string
	d.OnEvent(func(e Event) {
		mu.Lock()
		events = append(events, e.Message)
		mu.Unlock()
	})
	// A file this driver never imported, so the cache cannot answer.
	b, err := os.ReadFile(strings.TrimPrefix(busyboxImage(t), ArchivePrefix))
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "shared.tar")
	if err := os.WriteFile(archive, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 3
	cfgs := make([]*drivers.TaskConfig, n)
	for i := range cfgs {
		cfgs[i] = shTask(t, "exit 0")
		cfgs[i].Config["image"] = ArchivePrefix + archive
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			<-start
			_, errs[i] = d.StartTask(ctx, cfg)
		}()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := d.DestroyTask(ctx, cfg.ID, true); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
				t.Errorf("DestroyTask: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("StartTask %d: %v", i, err)
		}
	}
	for _, cfg := range cfgs {
		if res := waitExit(t, d, cfg.ID, 30*time.Second); !res.Successful() {
			t.Errorf("task %s exit %+v", cfg.ID, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	imports, unpacks := 0, 0
	for _, e := range events {
		if strings.Contains(e, "importing image archive "+archive) {
			imports++
		}
		if strings.HasPrefix(e, "unpacking image ") {
			unpacks++
		}
	}
	if imports != 1 || unpacks > 1 {
		t.Errorf("%d tasks started together: %d imports, %d unpacks, want 1 and at most 1 (events %q)", n, imports, unpacks, events)
	}
}
