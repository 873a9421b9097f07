package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/drivertest/testimage"
	"github.com/drover/drover/drivers/logging"
)

// droverBin supervises the VMs (`drover executor`).
var droverBin string

func TestMain(m *testing.M) {
	drivertest.MainWithBinary(m, &droverBin)
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
	deadline := time.Now().Add(timeout)
	for {
		b, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, stream))
		if err != nil {
			t.Fatalf("read %s log: %v", stream, err)
		}
		if strings.Contains(string(b), s) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q within %s; got:\n%s", stream, s, timeout, b)
		}
		<-time.After(50 * time.Millisecond)
	}
}

func readLog(t *testing.T, cfg *drivers.TaskConfig, stream string) string {
	t.Helper()
	b, err := logging.ReadAll(cfg.LogDir, logging.Prefix(cfg.Name, stream))
	if err != nil {
		t.Fatalf("read %s log: %v", stream, err)
	}
	return string(b)
}
