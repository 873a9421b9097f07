package gpushare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ControlProgram is NVIDIA's MPS control program, looked up on PATH.
const ControlProgram = "nvidia-cuda-mps-control"

// commandTimeout bounds one run of the control program.
const commandTimeout = 30 * time.Second

// ErrNoMPS: the MPS control program is not on this client's PATH.
var ErrNoMPS = errors.New("MPS control program not found")

// Config of a Manager.
type Config struct {
	// Dir holds one directory per shared GPU (the client's DataDir/mps).
	Dir string
	// Program is the control program, a name looked up on PATH or a path
	// (default ControlProgram).
	Program string
	// ReadyTimeout bounds the wait for a started daemon to answer and for
	// a quit one to stop answering (default 10 s).
	ReadyTimeout time.Duration
	Logger       *slog.Logger
}

// Manager runs one MPS control daemon per shared GPU; see the package doc.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	gpus    map[string]*gpu            // by GPU UUID
	holders map[string]map[string]bool // holder -> GPU UUIDs it holds
}

// gpu is one GPU's daemon as this Manager knows it.
type gpu struct {
	mu      sync.Mutex // serialises the GPU's commands; guards held, running
	uuid    string
	held    map[string]bool // holders
	running bool            // started or adopted, not quit since
}

// New returns a Manager; it starts nothing.
func New(cfg Config) *Manager {
	if cfg.Program == "" {
		cfg.Program = ControlProgram
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, log: cfg.Logger.With("component", "gpushare"),
		gpus: map[string]*gpu{}, holders: map[string]map[string]bool{}}
}

// dirName is GPU uuid's directory under Dir: the UUID, any byte but
// [A-Za-z0-9-] replaced by '_' (old MIG UUIDs hold slashes), so it is
// always one path element.
func dirName(uuid string) string {
	b := []byte(uuid)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// PipeDir is the host path of GPU uuid's daemon's pipe directory (what
// CUDA_MPS_PIPE_DIRECTORY names).
func (m *Manager) PipeDir(uuid string) string {
	return filepath.Join(m.cfg.Dir, dirName(uuid), "pipe")
}

// LogDir is the host path of GPU uuid's daemon's log directory.
func (m *Manager) LogDir(uuid string) string {
	return filepath.Join(m.cfg.Dir, dirName(uuid), "log")
}

// DaemonEnv is the environment the control program runs with for GPU
// uuid, besides the agent's own.
func (m *Manager) DaemonEnv(uuid string) []string {
	return []string{"CUDA_MPS_PIPE_DIRECTORY=" + m.PipeDir(uuid), "CUDA_MPS_LOG_DIRECTORY=" + m.LogDir(uuid),
		"CUDA_VISIBLE_DEVICES=" + uuid}
}

func (m *Manager) gpu(uuid string) *gpu {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.gpus[uuid]
	if g == nil {
		g = &gpu{uuid: uuid, held: map[string]bool{}}
		m.gpus[uuid] = g
	}
	return g
}

// Acquire makes holder (one task) a user of the daemons of gpus, making
// sure each answers: one started by an earlier agent is adopted, a
// missing one started. It returns their pipe directories by UUID. A
// holder already holding a GPU is not counted twice. On error holder
// holds none of the GPUs it did not hold before the call.
func (m *Manager) Acquire(ctx context.Context, holder string, gpus []string) (map[string]string, error) {
	dirs := map[string]string{}
	var added []string
	for _, uuid := range gpus {
		if uuid == "" {
			continue
		}
		isNew, err := m.acquire(ctx, holder, uuid)
		if err != nil {
			m.release(ctx, holder, added)
			return nil, fmt.Errorf("MPS daemon of GPU %s: %w", uuid, err)
		}
		if isNew {
			added = append(added, uuid)
		}
		dirs[uuid] = m.PipeDir(uuid)
	}
	return dirs, nil
}

// acquire adds holder to uuid's daemon; isNew: it did not hold it yet.
func (m *Manager) acquire(ctx context.Context, holder, uuid string) (isNew bool, err error) {
	g := m.gpu(uuid)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held[holder] {
		return false, nil
	}
	// Every new holder checks that the daemon answers: it may be one an
	// earlier agent started (adopt it), or it may have died (start again).
	if err := m.ensure(ctx, g); err != nil {
		return false, err
	}
	g.held[holder] = true
	m.mu.Lock()
	if m.holders[holder] == nil {
		m.holders[holder] = map[string]bool{}
	}
	m.holders[holder][uuid] = true
	m.mu.Unlock()
	return true, nil
}

// ensure makes g's daemon answer (under g.mu).
func (m *Manager) ensure(ctx context.Context, g *gpu) error {
	if err := m.makeDirs(g.uuid); err != nil {
		return err
	}
	if m.answers(ctx, g.uuid) {
		if !g.running {
			m.log.Info("adopted a running MPS control daemon", "gpu", g.uuid)
		}
		g.running = true
		return nil
	}
	if g.running {
		m.log.Warn("MPS control daemon stopped answering: starting it again", "gpu", g.uuid)
	}
	g.running = false
	if _, err := m.control(ctx, g.uuid, "", "-d"); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if err := m.wait(ctx, g.uuid, true); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	g.running = true
	m.log.Info("started MPS control daemon", "gpu", g.uuid, "pipe_dir", m.PipeDir(g.uuid))
	return nil
}

// Release drops holder from every daemon it holds; a daemon left with
// no holder is told to quit. Releasing what is not held does nothing.
func (m *Manager) Release(ctx context.Context, holder string) {
	m.mu.Lock()
	var gpus []string
	for uuid := range m.holders[holder] {
		gpus = append(gpus, uuid)
	}
	m.mu.Unlock()
	slices.Sort(gpus)
	m.release(ctx, holder, gpus)
}

func (m *Manager) release(ctx context.Context, holder string, gpus []string) {
	for _, uuid := range gpus {
		g := m.gpu(uuid)
		g.mu.Lock()
		if g.held[holder] {
			delete(g.held, holder)
			if len(g.held) == 0 && g.running {
				m.quit(ctx, g)
			}
		}
		g.mu.Unlock()
		m.mu.Lock()
		delete(m.holders[holder], uuid)
		if len(m.holders[holder]) == 0 {
			delete(m.holders, holder)
		}
		m.mu.Unlock()
	}
}

// quit stops g's daemon and waits until it no longer answers (under
// g.mu). A failure is logged: the next holder's probe finds out.
func (m *Manager) quit(ctx context.Context, g *gpu) {
	g.running = false
	if out, err := m.control(ctx, g.uuid, "quit\n"); err != nil {
		m.log.Warn("quit MPS control daemon", "gpu", g.uuid, "error", err, "output", out)
		return
	}
	if err := m.wait(ctx, g.uuid, false); err != nil {
		m.log.Warn("quit MPS control daemon", "gpu", g.uuid, "error", err)
		return
	}
	m.log.Info("quit MPS control daemon", "gpu", g.uuid)
}

// Holders is how many holders GPU uuid's daemon has.
func (m *Manager) Holders(uuid string) int {
	g := m.gpu(uuid)
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// Restore is called once, before any Acquire, by a client that restarted:
// the daemons under Dir of GPUs keep does not name (no restored task
// holds them) are told to quit. The others are left running for their
// tasks to adopt.
func (m *Manager) Restore(ctx context.Context, keep []string) error {
	entries, err := os.ReadDir(m.cfg.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore MPS daemons: %w", err)
	}
	kept := map[string]bool{}
	for _, uuid := range keep {
		kept[dirName(uuid)] = true
	}
	if _, err := m.program(); err != nil {
		return nil // nothing can be asked, and nothing started by it can run
	}
	for _, e := range entries {
		if !e.IsDir() || kept[e.Name()] {
			continue
		}
		// The GPU is known by its directory name only; a quit needs no
		// more (the pipe directory is what the program talks through).
		g := &gpu{uuid: e.Name(), held: map[string]bool{}}
		if m.answers(ctx, g.uuid) {
			m.log.Info("quitting the MPS control daemon of a GPU no restored task holds", "gpu", g.uuid)
			m.quit(ctx, g)
		}
	}
	return nil
}

// answers reports whether GPU uuid's daemon answers a query.
func (m *Manager) answers(ctx context.Context, uuid string) bool {
	_, err := m.control(ctx, uuid, "get_default_active_thread_percentage\n")
	return err == nil
}

// wait polls until the daemon answers (up) or no longer does (!up). The
// control program offers no signal to wait on; the poll is bounded by
// ReadyTimeout.
func (m *Manager) wait(ctx context.Context, uuid string, up bool) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ReadyTimeout)
	defer cancel()
	interval := 5 * time.Millisecond
	for m.answers(ctx, uuid) != up {
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			if up {
				return fmt.Errorf("daemon does not answer after %s", m.cfg.ReadyTimeout)
			}
			return fmt.Errorf("daemon still answers %s after quit", m.cfg.ReadyTimeout)
		case <-t.C:
		}
		interval = min(2*interval, 200*time.Millisecond)
	}
	return nil
}

// program resolves the control program.
func (m *Manager) program() (string, error) {
	p, err := exec.LookPath(m.cfg.Program)
	if err != nil {
		return "", fmt.Errorf("%w: %s is not on this client's PATH (a task that asks for an MPS share does not run without it)", ErrNoMPS, m.cfg.Program)
	}
	return p, nil
}

// control runs the control program for GPU uuid with stdin and args and
// returns its output. The output goes to a file, not a pipe: with -d the
// daemon it forks may hold the descriptors it inherited.
func (m *Manager) control(ctx context.Context, uuid, stdin string, args ...string) (string, error) {
	prog, err := m.program()
	if err != nil {
		return "", err
	}
	out, err := os.OpenFile(filepath.Join(m.cfg.Dir, dirName(uuid), "control.out"),
		os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("control output: %w", err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = append(os.Environ(), m.DaemonEnv(uuid)...) // the last of a duplicate key wins
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group: a terminal's ^C to the agent does not reach
	// the daemon it forks.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	runErr := cmd.Run()
	b, _ := io.ReadAll(io.NewSectionReader(out, 0, 4096))
	msg := strings.TrimSpace(string(b))
	if runErr != nil {
		if msg != "" {
			return msg, fmt.Errorf("%s %s: %w: %s", m.cfg.Program, strings.Join(append(args, strings.TrimSpace(stdin)), " "), runErr, msg)
		}
		return msg, fmt.Errorf("%s %s: %w", m.cfg.Program, strings.Join(append(args, strings.TrimSpace(stdin)), " "), runErr)
	}
	return msg, nil
}

// makeDirs creates GPU uuid's directories (see the package doc for the
// modes), none through a symbolic link: Dir is the agent's own; below it
// each level is made and opened with O_NOFOLLOW, and its mode set on the
// open descriptor.
func (m *Manager) makeDirs(uuid string) error {
	if err := os.MkdirAll(m.cfg.Dir, 0o711); err != nil {
		return fmt.Errorf("MPS dir: %w", err)
	}
	root, err := unix.Open(m.cfg.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("MPS dir %s: %w", m.cfg.Dir, err)
	}
	defer unix.Close(root)
	if err := unix.Fchmod(root, 0o711); err != nil {
		return fmt.Errorf("MPS dir %s: %w", m.cfg.Dir, err)
	}
	gd, err := mkdirAt(root, dirName(uuid), 0o711)
	if err != nil {
		return err
	}
	defer unix.Close(gd)
	for _, d := range []struct {
		name string
		mode uint32
	}{{"pipe", 0o755}, {"log", 0o700}} {
		fd, err := mkdirAt(gd, d.name, d.mode)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	return nil
}

// mkdirAt makes (or finds) directory name under dirfd, opens it without
// following a link and sets its mode.
func mkdirAt(dirfd int, name string, mode uint32) (int, error) {
	if err := unix.Mkdirat(dirfd, name, mode); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, fmt.Errorf("MPS dir %s: %w", name, err)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("MPS dir %s: %w", name, err)
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("MPS dir %s: %w", name, err)
	}
	return fd, nil
}
