package executor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/drover/drover/drivers/executor/supervisor"
	"golang.org/x/sys/unix"
)

// State is a supervisor's reattach data, persisted in the task handle.
type State struct {
	ExecutorPID   int    `json:"executor_pid"`
	ExecutorStart uint64 `json:"executor_start"`
	// TaskPID is the task (raw) or its namespace init (isolated).
	TaskPID   int    `json:"task_pid"`
	TaskStart uint64 `json:"task_start"`
	Isolated  bool   `json:"isolated"`
	// Cgroup is the task cgroup's name ("" = none).
	Cgroup   string `json:"cgroup,omitempty"`
	StateDir string `json:"state_dir"`
	ExitFile string `json:"exit_file"`
}

// ErrGone: the supervisor is not running and left no exit status.
var ErrGone = errors.New("executor gone without an exit status")

// Process is a supervised task seen from the driver.
type Process struct {
	State State

	done   chan struct{}
	cancel *os.File // closing its peer ends the waiter
	peer   *os.File
	wg     sync.WaitGroup

	mu     sync.Mutex
	result *Result
	// last CPU sample for percentages
	lastCPU  uint64 // ns
	lastWall time.Time
}

// Launch starts a supervisor for cfg, detached
// (own session, stdin /dev/null, output to StateDir/executor.log), and
// returns once the task runs (or failed to start). bin is the drover
// binary or a drover-executor (see FindSupervisor).
func Launch(ctx context.Context, bin string, cfg *Config) (*Process, error) {
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("executor state dir: %w", err)
	}
	cfgPath := filepath.Join(cfg.StateDir, "config.json")
	if err := writeJSONAtomic(cfgPath, cfg); err != nil {
		return nil, fmt.Errorf("write executor config: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(cfg.StateDir, "executor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("executor log: %w", err)
	}
	defer logf.Close()
	startR, startW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer startR.Close()
	sup := FindSupervisor(bin)
	cmd := exec.Command(sup.Path, sup.command(cfgPath)...)
	// No GOGC here: the supervisor lowers it once its task runs; set in
	// the environment it only adds collections to start-up.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GOMAXPROCS=1"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{startW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	launched := time.Now()
	if err := cmd.Start(); err != nil {
		startW.Close()
		return nil, fmt.Errorf("start executor %s: %w", sup.Path, err)
	}
	startW.Close()
	execStart, _ := StartTime(cmd.Process.Pid)
	// Open the pidfd before anything can reap the child.
	pidfd, perr := unix.PidfdOpen(cmd.Process.Pid, 0)

	type line struct {
		s   supervisor.Started
		err error
	}
	lc := make(chan line, 1)
	go func() { // ends when the executor reports or closes the pipe
		var s supervisor.Started
		b, err := bufio.NewReader(startR).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		lc <- line{s, err}
	}()
	var l line
	select {
	case l = <-lc:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if cfg.Cgroup != nil {
			_ = KillCgroup(cfg.Cgroup.Name, time.Now().Add(5*time.Second))
		}
		_ = cmd.Wait()
		startR.Close()
		<-lc
		if perr == nil {
			unix.Close(pidfd)
		}
		return nil, fmt.Errorf("start executor: %w", ctx.Err())
	}
	if l.err != nil || l.s.Err != "" {
		_ = cmd.Wait()
		if perr == nil {
			unix.Close(pidfd)
		}
		if l.s.Err != "" {
			return nil, errors.New(l.s.Err)
		}
		b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "executor.log"))
		return nil, fmt.Errorf("executor failed to start the task: %v: %s", l.err, b)
	}
	taskStart, _ := StartTime(l.s.TaskPID)
	st := State{ExecutorPID: cmd.Process.Pid, ExecutorStart: execStart, TaskPID: l.s.TaskPID, TaskStart: taskStart,
		Isolated: cfg.Isolation != nil, StateDir: cfg.StateDir, ExitFile: cfg.ExitFile}
	if cfg.Cgroup != nil {
		st.Cgroup = cfg.Cgroup.Name
	}
	if perr != nil {
		return nil, fmt.Errorf("pidfd_open executor: %w", perr)
	}
	p, err := newProcess(st, pidfd, cmd)
	if err == nil {
		// No CPU time before the launch: the first stats sample's rate
		// is the task's average since then.
		p.lastWall = launched
	}
	return p, err
}

// Reattach finds a supervisor again from its State. A task that already
// finished yields its recorded Result; ErrGone when there is neither a
// running supervisor nor an exit status.
func Reattach(st State) (*Process, error) {
	if st.ExitFile == "" || st.ExecutorPID <= 0 {
		return nil, fmt.Errorf("reattach: incomplete executor state")
	}
	if res, err := ReadResult(st.ExitFile); err == nil {
		p := &Process{State: st, done: make(chan struct{}), result: res}
		close(p.done)
		return p, nil
	}
	if !sameProcess(st.ExecutorPID, st.ExecutorStart) {
		// It may have finished between the two checks.
		if res, err := ReadResult(st.ExitFile); err == nil {
			p := &Process{State: st, done: make(chan struct{}), result: res}
			close(p.done)
			return p, nil
		}
		// Nothing supervises the task any more: it must not run on,
		// unwatched, beside the new copy a restart policy starts.
		(&Process{State: st}).killOrphans()
		return nil, fmt.Errorf("reattach executor pid %d: %w", st.ExecutorPID, ErrGone)
	}
	pidfd, err := unix.PidfdOpen(st.ExecutorPID, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open executor %d: %w", st.ExecutorPID, err)
	}
	return newProcess(st, pidfd, nil)
}

func newProcess(st State, pidfd int, child *exec.Cmd) (*Process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		unix.Close(pidfd)
		return nil, err
	}
	p := &Process{State: st, done: make(chan struct{}), cancel: r, peer: w}
	p.wg.Add(1)
	go p.wait(pidfd, child)
	return p, nil
}

// wait blocks in poll(2) on the executor's pidfd (no polling loop) until
// it exits or Close is called.
func (p *Process) wait(pidfd int, child *exec.Cmd) {
	defer p.wg.Done()
	defer unix.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}, {Fd: int32(p.cancel.Fd()), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || fds[1].Revents != 0 {
			return // closed: the process is left running
		}
		if fds[0].Revents != 0 {
			break
		}
	}
	if child != nil {
		_ = child.Wait() // reap our own child
	}
	res, err := ReadResult(p.State.ExitFile)
	if err != nil {
		// The supervisor died (killed?) before its task: nothing watches
		// the task any more, so it must not run on unsupervised.
		p.killOrphans()
		res = &Result{ExitCode: -1, Err: fmt.Sprintf("executor exited without an exit status: %v", err)}
	}
	p.mu.Lock()
	p.result = res
	p.mu.Unlock()
	close(p.done)
}

// killOrphans SIGKILLs the task of a supervisor that is gone.
func (p *Process) killOrphans() {
	if sameProcess(p.State.TaskPID, p.State.TaskStart) {
		target := -p.State.TaskPID
		if p.State.Isolated {
			target = p.State.TaskPID // the init: its PID namespace goes with it
		}
		_ = syscall.Kill(target, syscall.SIGKILL)
	}
	if p.State.Cgroup != "" {
		_ = KillCgroup(p.State.Cgroup, time.Now().Add(5*time.Second))
	}
}

// Done is closed when the task has ended and Result is set.
func (p *Process) Done() <-chan struct{} { return p.done }

// Result is the task's exit (nil while running).
func (p *Process) Result() *Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result
}

// Exited reports whether the task has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Close stops watching the supervisor (which keeps running) and waits
// for the waiter goroutine.
func (p *Process) Close() {
	if p.peer != nil {
		p.peer.Close()
		p.wg.Wait()
		p.cancel.Close()
		p.peer = nil
	}
}

// Kill sends SIGKILL and waits until the task has exited or ctx ends
// (then ctx's error).
func (p *Process) Kill(ctx context.Context) error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Signal sends sig to the task: to its process group (raw), or to its
// namespace init which forwards it (isolated; SIGKILL ends the whole
// namespace). A task already gone is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() || !sameProcess(p.State.TaskPID, p.State.TaskStart) {
		if sig == syscall.SIGKILL && p.State.Cgroup != "" && !p.Exited() {
			return KillCgroup(p.State.Cgroup, time.Now().Add(5*time.Second))
		}
		return nil
	}
	target := -p.State.TaskPID
	if p.State.Isolated {
		target = p.State.TaskPID
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal task: %w", err)
	}
	if sig == syscall.SIGKILL && p.State.Cgroup != "" {
		return KillCgroup(p.State.Cgroup, time.Now().Add(5*time.Second))
	}
	return nil
}
