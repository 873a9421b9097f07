package drivertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// SandboxProbe builds testdata/probe, a static program that tests a
// task's sandbox from inside, into a new temp dir of t and returns that
// dir, which holds it as "probe" and, setuid root, as "suid-probe" (mount
// it into the task). See its doc comment for the checks.
func SandboxProbe(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/drover/drover/drivers/drivertest").Output()
	if err != nil {
		t.Fatalf("find drivertest: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "testdata", "probe")
	dir := t.TempDir()
	// Tasks running as nobody run it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"probe", "suid-probe"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build probe: %v: %s", err, b)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "suid-probe"), 0o4755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// StatusFields parses /proc/<pid>/status lines ("Key:\tvalue") found in
// out; other lines are ignored.
func StatusFields(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ":\t")
		if ok && !strings.ContainsAny(k, " /") {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// MountOptions parses the /proc/<pid>/mountinfo lines in out into mount
// point -> per-mount options (rw/ro, nosuid, nodev, noexec, atime); the
// last mount of a point wins, as it is the visible one.
func MountOptions(out string) map[string][]string {
	m := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || !strings.Contains(line, " - ") {
			continue
		}
		m[f[4]] = strings.Split(f[5], ",")
	}
	return m
}
