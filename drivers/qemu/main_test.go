package qemu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/drivertest/testimage"
	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/internal/testproc"
)

// droverBin supervises the VMs (`drover executor`).
var droverBin string

func TestMain(m *testing.M) {
	testproc.MainWithBinary(m, &droverBin)
}

// vmTimeout bounds every wait on a VM: a TCG boot takes ~10 s alone and
// much longer on a loaded 2-core machine.
const vmTimeout = 4 * time.Minute

// stateDir is shared by all driver instances, like an agent's data dir
// across restarts.
var stateDir = filepath.Join(os.TempDir(), "drover-qemu-test")

// needQEMU applies drivertest.Need to the emulator and qemu-img.
func needQEMU(t *testing.T) {
	t.Helper()
	drivertest.NeedBinary(t, defaultEmulator)
	drivertest.NeedBinary(t, "qemu-img")
}

// vmImages returns the test kernel, initramfs and their directory.
func vmImages(t *testing.T) (kernel, initrd, dir string) {
	t.Helper()
	k, i := testimage.VMImages(t)
	return k, i, filepath.Dir(k)
}

// newDriver builds a driver allowing images from dirs and the listed args.
func newDriver(t *testing.T, imageDirs []string, allow ...string) *Driver {
	t.Helper()
	dirs := make([]any, len(imageDirs))
	for i, d := range imageDirs {
		dirs[i] = d
	}
	al := make([]any, len(allow))
	for i, a := range allow {
		al[i] = a
	}
	d, err := NewDriver(drivers.Options{DataDir: stateDir, Config: map[string]any{
		"executor_path": droverBin, "image_paths": dirs, "args_allowlist": al,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// waitLog polls the task's stream until it contains s.
func waitLog(t *testing.T, cfg *drivers.TaskConfig, stream, s string, timeout time.Duration) string {
	t.Helper()
	var got string
	defer func() {
		if t.Failed() {
			t.Logf("%s:\n%s", stream, got)
		}
	}()
	testproc.Eventually(t, timeout, fmt.Sprintf("%s containing %q", stream, s), func() bool {
		b, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, stream))
		if err != nil {
			t.Fatalf("read %s log: %v", stream, err)
		}
		got = string(b)
		return strings.Contains(got, s)
	})
	return got
}

func readLog(t *testing.T, cfg *drivers.TaskConfig, stream string) string {
	t.Helper()
	b, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, stream))
	if err != nil {
		t.Fatalf("read %s log: %v", stream, err)
	}
	return string(b)
}
