package drivertest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// InCI reports whether CI=true: missing dependencies are failures there.
func InCI() bool { return os.Getenv("CI") == "true" }

// Need skips the test (outside CI) or fails it (CI=true) when ok is false.
func Need(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if InCI() {
		t.Fatalf("missing dependency under CI=true: %s", why)
	}
	t.Skipf("skipping: %s", why)
}

// NeedRoot applies Need to running as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	Need(t, os.Geteuid() == 0, "needs root")
}

// NeedBinary applies Need to a binary on PATH and returns its path.
func NeedBinary(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Need(t, err == nil, name+" not found on PATH")
	return p
}

// RandID returns n random hex bytes.
func RandID(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// NewTaskConfig lays out an alloc dir under a fresh temp dir the way the
// client does (alloc/, alloc/logs, <task>/local, secrets, tmp) and returns
// a TaskConfig for task name with 100 MHz / 256 MB, the given driver config
// and a 5 s kill timeout.
func NewTaskConfig(t testing.TB, name string, cfg map[string]any) *drivers.TaskConfig {
	t.Helper()
	allocID := RandID(8)
	allocDir := filepath.Join(t.TempDir(), allocID)
	taskDir := filepath.Join(allocDir, name)
	for _, d := range []string{
		filepath.Join(allocDir, "alloc", "logs"), filepath.Join(allocDir, "alloc", "data"),
		filepath.Join(taskDir, "local"), filepath.Join(taskDir, "secrets"), filepath.Join(taskDir, "tmp"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// t.TempDir is 0700; tasks run as nobody must reach their dirs.
	for d := allocDir; d != "/" && d != "."; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o011 != 0o011 {
			if d == os.TempDir() {
				break
			}
			_ = os.Chmod(d, st.Mode().Perm()|0o711)
		}
	}
	return &drivers.TaskConfig{
		ID:      allocID + "/" + name + "/" + RandID(4),
		AllocID: allocID,
		JobID:   "conformance",
		Group:   "group",
		Name:    name,
		Config:  cfg,
		Env:     map[string]string{"DROVER_TASK_NAME": name},
		Resources: &api.AllocatedTaskResources{
			Cpu:    api.AllocatedCpuResources{CpuShares: 100},
			Memory: api.AllocatedMemoryResources{MemoryMB: 256},
		},
		AllocDir:         allocDir,
		TaskDir:          taskDir,
		LogDir:           filepath.Join(allocDir, "alloc", "logs"),
		LogMaxFiles:      3,
		LogMaxFileSizeMB: 1,
		KillSignal:       "SIGTERM",
		KillTimeout:      5 * time.Second,
	}
}
