package gpushare_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/agent/gpushare"
	"github.com/drover/drover/agent/gpushare/gpusharetest"
	"github.com/drover/drover/internal/testproc"
)

const (
	gpuA = "GPU-aaaaaaaa-0000-4000-8000-000000000001"
	gpuB = "GPU-bbbbbbbb-0000-4000-8000-000000000002"
)

func newManager(t *testing.T) (*gpushare.Manager, *gpusharetest.StandIn, string) {
	t.Helper()
	s := gpusharetest.New(t)
	s.OnPath(t)
	dir := filepath.Join(t.TempDir(), "mps")
	return gpushare.New(gpushare.Config{Dir: dir}), s, dir
}

func startsFor(s *gpusharetest.StandIn, t *testing.T, uuid string) []gpusharetest.Call {
	var out []gpusharetest.Call
	for _, c := range s.Starts(t) {
		if c.Visible == uuid {
			out = append(out, c)
		}
	}
	return out
}

func quitsFor(s *gpusharetest.StandIn, t *testing.T, m *gpushare.Manager, uuid string) int {
	n := 0
	for _, c := range s.Quits(t) {
		if c.PipeDir == m.PipeDir(uuid) {
			n++
		}
	}
	return n
}

// One daemon per GPU, whatever the number of tasks on it, with the GPU's
// own pipe and log dirs and only that GPU visible; it quits when the last
// task on the GPU lets go, not before.
func TestManagerOneDaemonPerGPU(t *testing.T) {
	m, s, dir := newManager(t)
	ctx := context.Background()
	for _, h := range []struct{ holder, gpu string }{{"a1/t", gpuA}, {"a2/t", gpuA}, {"a3/t", gpuB}} {
		dirs, err := m.Acquire(ctx, h.holder, []string{h.gpu})
		if err != nil {
			t.Fatalf("acquire %s for %s: %v", h.gpu, h.holder, err)
		}
		if got, want := dirs[h.gpu], filepath.Join(dir, h.gpu, "pipe"); got != want {
			t.Errorf("%s: pipe dir %q, want %q", h.holder, got, want)
		}
	}
	for _, uuid := range []string{gpuA, gpuB} {
		st := startsFor(s, t, uuid)
		if len(st) != 1 {
			t.Fatalf("GPU %s: %d daemons started, want 1 (calls %+v)", uuid, len(st), s.Calls(t))
		}
		c := st[0]
		if c.PipeDir != filepath.Join(dir, uuid, "pipe") || c.LogDir != filepath.Join(dir, uuid, "log") {
			t.Errorf("GPU %s daemon env: pipe %q log %q, want both under %s", uuid, c.PipeDir, c.LogDir, filepath.Join(dir, uuid))
		}
		if !gpusharetest.Alive(c.Daemon) {
			t.Errorf("GPU %s daemon %d not running", uuid, c.Daemon)
		}
	}
	if n := m.Holders(gpuA); n != 2 {
		t.Errorf("GPU A holders %d, want 2", n)
	}
	for path, want := range map[string]os.FileMode{dir: 0o711, filepath.Join(dir, gpuA): 0o711,
		m.PipeDir(gpuA): 0o755, m.LogDir(gpuA): 0o700} {
		if st, err := os.Lstat(path); err != nil || !st.IsDir() || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want a directory of mode %v", path, st.Mode(), err, want)
		}
	}

	daemonA := startsFor(s, t, gpuA)[0].Daemon
	m.Release(ctx, "a1/t")
	if quitsFor(s, t, m, gpuA) != 0 || !gpusharetest.Alive(daemonA) {
		t.Fatalf("GPU A's daemon quit with a task still on it")
	}
	m.Release(ctx, "a1/t") // released twice: still one holder
	if m.Holders(gpuA) != 1 {
		t.Fatalf("GPU A holders %d after a double release, want 1", m.Holders(gpuA))
	}
	m.Release(ctx, "a2/t")
	if n := quitsFor(s, t, m, gpuA); n != 1 {
		t.Errorf("GPU A's daemon %d: %d quits; want one once its last task left", daemonA, n)
	}
	// Release returns once the daemon stops answering; its process exits
	// right after.
	testproc.Eventually(t, 10*time.Second, "GPU A's daemon gone after its last task left", func() bool { return !gpusharetest.Alive(daemonA) })
	if quitsFor(s, t, m, gpuB) != 0 {
		t.Errorf("GPU B's daemon quit with its task still on it")
	}
	m.Release(ctx, "a3/t")
	if quitsFor(s, t, m, gpuB) != 1 {
		t.Errorf("GPU B's daemon not told to quit after its last task left")
	}
	daemonB := startsFor(s, t, gpuB)[0].Daemon
	testproc.Eventually(t, 10*time.Second, "GPU B's daemon gone after its last task left", func() bool { return !gpusharetest.Alive(daemonB) })
	// A GPU used again gets a daemon again.
	if _, err := m.Acquire(ctx, "a4/t", []string{gpuA}); err != nil {
		t.Fatal(err)
	}
	if n := len(startsFor(s, t, gpuA)); n != 2 {
		t.Errorf("GPU A: %d starts after reuse, want 2", n)
	}
	m.Release(ctx, "a4/t")
}

// A holder acquiring again (a task restarting) is counted once.
func TestManagerAcquireIsIdempotent(t *testing.T) {
	m, s, _ := newManager(t)
	ctx := context.Background()
	for range 2 {
		if _, err := m.Acquire(ctx, "a1/t", []string{gpuA}); err != nil {
			t.Fatal(err)
		}
	}
	if m.Holders(gpuA) != 1 || len(s.Starts(t)) != 1 {
		t.Fatalf("holders %d, starts %d; want 1 and 1", m.Holders(gpuA), len(s.Starts(t)))
	}
	m.Release(ctx, "a1/t")
	if len(s.Quits(t)) != 1 {
		t.Errorf("%d quits after the one holder left, want 1", len(s.Quits(t)))
	}
}

// Without the control program a task asking for MPS gets a clear error,
// and nothing is held.
func TestManagerMissingProgram(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	m := gpushare.New(gpushare.Config{Dir: filepath.Join(t.TempDir(), "mps")})
	_, err := m.Acquire(context.Background(), "a1/t", []string{gpuA})
	if !errors.Is(err, gpushare.ErrNoMPS) || !strings.Contains(err.Error(), "nvidia-cuda-mps-control is not on this client's PATH") {
		t.Fatalf("acquire without the program: %v, want ErrNoMPS naming the program", err)
	}
	if m.Holders(gpuA) != 0 {
		t.Errorf("holders %d after a failed acquire, want 0", m.Holders(gpuA))
	}
}

// A daemon that fails to start fails the acquire with what the program
// said.
func TestManagerStartFailure(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "mps-control")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho 'cannot start: no GPU' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := gpushare.New(gpushare.Config{Dir: filepath.Join(t.TempDir(), "mps"), Program: prog})
	_, err := m.Acquire(context.Background(), "a1/t", []string{gpuA})
	if err == nil || !strings.Contains(err.Error(), "cannot start: no GPU") || !strings.Contains(err.Error(), gpuA) {
		t.Fatalf("acquire with a failing program: %v, want its output and the GPU", err)
	}
	if m.Holders(gpuA) != 0 {
		t.Errorf("holders %d after a failed start, want 0", m.Holders(gpuA))
	}
}

// A multi-GPU acquire that fails half way holds nothing: the daemon it
// started for the first GPU is stopped again.
func TestManagerAcquireRollsBack(t *testing.T) {
	m, s, _ := newManager(t)
	ctx := context.Background()
	// GPU B's pipe dir is taken by a file, so B fails after A started.
	bDir := filepath.Dir(m.PipeDir(gpuB))
	if err := os.MkdirAll(bDir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.PipeDir(gpuB), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := m.Acquire(ctx, "a1/t", []string{gpuA, gpuB})
	if err == nil || !strings.Contains(err.Error(), gpuB) {
		t.Fatalf("acquire with B broken: %v, want an error naming B", err)
	}
	if m.Holders(gpuA) != 0 || quitsFor(s, t, m, gpuA) != 1 {
		t.Errorf("A: holders %d, quits %d after the failed acquire; want 0 and 1 (its daemon stopped again)", m.Holders(gpuA), quitsFor(s, t, m, gpuA))
	}
}

// Dirs are made without following links: a link planted where a GPU's
// dir goes fails the acquire and nothing is created where it points.
func TestManagerRefusesSymlinks(t *testing.T) {
	m, s, dir := newManager(t)
	target := t.TempDir()
	if err := os.MkdirAll(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, gpuA)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Acquire(context.Background(), "a1/t", []string{gpuA}); err == nil {
		t.Fatal("acquire through a symlinked GPU dir succeeded")
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 || len(s.Calls(t)) != 0 {
		t.Errorf("link target holds %d entries, %d control calls; want none", len(ents), len(s.Calls(t)))
	}
}

// After an agent restart a new Manager adopts the daemon of a GPU a
// restored task holds (no second start), quits the daemon of a GPU no
// restored task holds, and starts again a daemon that died.
func TestManagerRestart(t *testing.T) {
	m1, s, dir := newManager(t)
	ctx := context.Background()
	for _, h := range []struct{ holder, gpu string }{{"a1/t", gpuA}, {"a2/t", gpuB}} {
		if _, err := m1.Acquire(ctx, h.holder, []string{h.gpu}); err != nil {
			t.Fatal(err)
		}
	}
	daemonA, daemonB := startsFor(s, t, gpuA)[0].Daemon, startsFor(s, t, gpuB)[0].Daemon
	// The agent goes away without releasing (its tasks keep running);
	// a2's task ends while it is down.
	m2 := gpushare.New(gpushare.Config{Dir: dir})
	if err := m2.Restore(ctx, []string{gpuA}); err != nil {
		t.Fatal(err)
	}
	if n := quitsFor(s, t, m2, gpuB); n != 1 {
		t.Errorf("GPU B's daemon (no restored task): %d quits after Restore, want 1", n)
	}
	testproc.Eventually(t, 10*time.Second, "GPU B's daemon (no restored task) gone after Restore", func() bool { return !gpusharetest.Alive(daemonB) })
	if !gpusharetest.Alive(daemonA) || quitsFor(s, t, m2, gpuA) != 0 {
		t.Fatalf("GPU A's daemon (held by a restored task) stopped by Restore")
	}
	// The restored task reattaches: adopted, not started again.
	if _, err := m2.Acquire(ctx, "a1/t", []string{gpuA}); err != nil {
		t.Fatal(err)
	}
	if n := len(startsFor(s, t, gpuA)); n != 1 || !gpusharetest.Alive(daemonA) {
		t.Errorf("GPU A: %d starts after the restart, daemon alive %v; want the one daemon adopted", n, gpusharetest.Alive(daemonA))
	}
	// The daemon dies under its tasks: the next task starts it again.
	if err := syscall.Kill(daemonA, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 10*time.Second, "the killed daemon gone", func() bool { return !gpusharetest.Alive(daemonA) })
	if _, err := m2.Acquire(ctx, "a3/t", []string{gpuA}); err != nil {
		t.Fatal(err)
	}
	if n := len(startsFor(s, t, gpuA)); n != 2 {
		t.Errorf("GPU A: %d starts after its daemon died, want 2", n)
	}
	m2.Release(ctx, "a1/t")
	m2.Release(ctx, "a3/t")
	if st := startsFor(s, t, gpuA); gpusharetest.Alive(st[len(st)-1].Daemon) {
		t.Errorf("GPU A's daemon alive after its last task left")
	}
}
