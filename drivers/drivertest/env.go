package drivertest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
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

// DroverBinary returns $DROVER_TEST_BIN, or builds github.com/drover/drover
// and drover-executor into a new temp dir (call it once, from TestMain);
// cleanup removes it.
// Binary is the same for tests without a TestMain.
func DroverBinary() (path string, cleanup func(), err error) {
	if p := os.Getenv("DROVER_TEST_BIN"); p != "" {
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "drover-bin-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "drover")
	var out []byte
	// As `make build` builds bin/drover and, next to it, the small task
	// supervisor bin/drover-executor (which the drivers prefer), so
	// benchmarks measure them.
	for _, b := range [][2]string{{path, "github.com/drover/drover"},
		{filepath.Join(dir, "drover-executor"), "github.com/drover/drover/drivers/executor/cmd/drover-executor"}} {
		for try := 0; try < 2; try++ { // concurrent builds of several test packages can trip once
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", b[0], b[1])
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err = cmd.CombinedOutput(); err == nil {
				break
			}
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("build %s: %v: %s", b[1], err, out)
		}
	}
	// The exec driver's tasks (user nobody) never need to read it, but
	// the supervisor runs it as root from here.
	_ = os.Chmod(dir, 0o755)
	return path, func() { os.RemoveAll(dir) }, nil
}

// MainWithBinary is a TestMain for packages whose tests run the drover
// binaries: it sets *bin (see DroverBinary), runs the tests, removes what
// it built and exits with the tests' code.
func MainWithBinary(m *testing.M, bin *string) {
	path, cleanup, err := DroverBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}
