package containerd

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
)

// BenchmarkStartWaitDestroy measures one task's life on a warm daemon with
// the image already unpacked: StartTask (archive import is a no-op then),
// the exit of `true`, DestroyTask.
func BenchmarkStartWaitDestroy(b *testing.B) {
	if daemonErr != nil {
		b.Skip(daemonErr)
	}
	d, err := New(drivers.Options{Config: map[string]any{"address": daemon.Address, "namespace": "drover-bench"}})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	image := busyboxImageB(b)
	ctx := context.Background()
	run := func() {
		cfg := drivertest.NewTaskConfig(b, "bench", map[string]any{"image": image, "command": "/bin/true"})
		if _, err := d.StartTask(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ch, err := d.WaitTask(wctx, cfg.ID)
		if err != nil {
			b.Fatal(err)
		}
		if res := <-ch; res == nil || !res.Successful() {
			b.Fatalf("exit %+v", res)
		}
		cancel()
		if err := d.DestroyTask(ctx, cfg.ID, false); err != nil {
			b.Fatal(err)
		}
	}
	run() // import + unpack once
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
}

// BenchmarkFingerprintNoSocket is the cost of a fingerprint on a node
// without containerd (the goal: well under 100 ms, so agent start-up is not
// held up).
func BenchmarkFingerprintNoSocket(b *testing.B) {
	d, err := New(drivers.Options{Config: map[string]any{"address": filepath.Join(b.TempDir(), "none.sock")}})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if fp := d.Fingerprint(context.Background()); fp.Health != drivers.HealthUnhealthy {
			b.Fatalf("fingerprint %+v", fp)
		}
	}
}
