package containerd

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/containerd/ctrtest"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/drivertest/testimage"
)

// daemon is the package's private containerd (nil when it cannot run).
var (
	daemon    *ctrtest.Daemon
	daemonErr error
	// dataDir is the driver data dir shared by all instances, like an
	// agent's across restarts.
	dataDir string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		daemonErr = fmt.Errorf("-short: no containerd daemon")
		return m.Run()
	}
	if os.Getenv("DROVER_CTRD_HELPER") != "" {
		// The throw-away agent of TestRecoverAfterAgentKill uses the
		// parent's daemon and dies by SIGKILL: it must not start one.
		daemonErr = fmt.Errorf("helper process: no daemon of its own")
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "ctrd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	dataDir = dir + "/data"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	daemon, daemonErr = ctrtest.Start(ctx, dir)
	cancel()
	if daemon != nil {
		defer daemon.Stop(context.Background())
	}
	return m.Run()
}

// needDaemon skips (outside CI) or fails (CI=true) without containerd.
func needDaemon(t *testing.T) *ctrtest.Daemon {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a containerd daemon; -short")
	}
	drivertest.Need(t, daemonErr == nil, fmt.Sprint("containerd: ", daemonErr))
	return daemon
}

// newDriver builds a driver against the test daemon.
func newDriver(t *testing.T, extra map[string]any) *Driver {
	t.Helper()
	dm := needDaemon(t)
	cfg := map[string]any{"address": dm.Address, "namespace": "drover-test"}
	for k, v := range extra {
		cfg[k] = v
	}
	d, err := New(drivers.Options{Config: cfg, Logger: testLogger(t), DataDir: dataDir})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// busyboxImage is the image setting for the test archive.
func busyboxImage(t *testing.T) string {
	return ArchivePrefix + testimage.BusyboxArchive(t)
}

func busyboxImageB(b *testing.B) string {
	return ArchivePrefix + testimage.BusyboxArchive(b)
}
