package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/errdefs"
	"github.com/moby/sys/signal"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/logging"
)

// handleVersion is the TaskHandle.Version this driver writes.
const handleVersion = 1

// logDrainTimeout bounds the wait for a task's last output after it exited
// (a background process may keep the stream open).
const logDrainTimeout = 5 * time.Second

// State is the driver's reattach data (TaskHandle.DriverState).
type State struct {
	ContainerID string `json:"ContainerID"`
	Namespace   string `json:"Namespace"`
	Stdout      string `json:"Stdout"` // FIFO paths
	Stderr      string `json:"Stderr"`
}

// taskState is one task this driver instance owns.
type taskState struct {
	drv       *Driver
	id        string
	cfg       *drivers.TaskConfig
	st        State
	container containerd.Container
	task      containerd.Task
	io        cio.IO
	logs      []*logging.Writer

	cancel context.CancelFunc // ends the owner goroutine (detach)
	owned  chan struct{}      // closed when the owner goroutine returned

	mu        sync.Mutex
	done      chan struct{} // closed once result is set
	result    *drivers.ExitResult
	detached  bool
	signalled bool
	lastCPU   cpuSample
}

// detach stops the owner goroutine; the container keeps running.
func (ts *taskState) detach() {
	ts.mu.Lock()
	ts.detached = true
	ts.mu.Unlock()
	ts.cancel()
}

func (ts *taskState) exited() bool {
	select {
	case <-ts.done:
		return true
	default:
		return false
	}
}

// live maps container IDs to the taskState that reads their FIFOs in
// this process, so a Driver recreated in the same process (tests, a
// reloaded client) takes them over instead of splitting the output.
var (
	liveMu sync.Mutex
	live   = map[string]*taskState{}
)

// fifoDir is where a task's log FIFOs live: the driver's data dir (it
// outlives agent restarts and is not served by the alloc fs API, where a
// reader would steal the output), else the task dir.
func (d *Driver) fifoDir(cfg *drivers.TaskConfig) string {
	if d.dataDir != "" {
		return filepath.Join(d.dataDir, "fifo", ContainerID(cfg.ID))
	}
	if cfg.TaskDir != "" {
		return filepath.Join(cfg.TaskDir, ".containerd")
	}
	return filepath.Join(os.TempDir(), "drover-containerd", ContainerID(cfg.ID))
}

func openLogs(cfg *drivers.TaskConfig) ([]*logging.Writer, error) {
	var ws []*logging.Writer
	for _, stream := range []string{"stdout", "stderr"} {
		w, err := logging.Open(logging.Config{
			Dir:           cfg.LogDir,
			Prefix:        logging.Prefix(cfg.Name, stream),
			MaxFiles:      cfg.LogMaxFiles,
			MaxFileSizeMB: cfg.LogMaxFileSizeMB,
		})
		if err != nil {
			for _, o := range ws {
				o.Close()
			}
			return nil, fmt.Errorf("open %s log: %w", stream, err)
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// attachIO opens (creating if needed) the task's FIFOs and copies them
// into the log writers.
func attachIO(st State, logs []*logging.Writer) cio.Attach {
	return func(*cio.FIFOSet) (cio.IO, error) {
		fifos := cio.NewFIFOSet(cio.Config{Stdout: st.Stdout, Stderr: st.Stderr}, nil)
		return cio.NewAttach(cio.WithStreams(nil, logs[0], logs[1]))(fifos)
	}
}

// ownSecrets hands the task's secrets dir to the user its container
// runs as (known once the spec is built: the image's or the task's
// user); see drivers.OwnSecrets.
func ownSecrets(ctx context.Context, container containerd.Container, cfg *drivers.TaskConfig) error {
	if cfg.TaskDir == "" {
		return nil
	}
	spec, err := container.Spec(ctx)
	if err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	if spec.Process == nil {
		return nil
	}
	return drivers.OwnSecrets(filepath.Join(cfg.TaskDir, "secrets"), int(spec.Process.User.UID), int(spec.Process.User.GID))
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	tc, err := ParseTaskConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := d.cfg.checkAllowed(tc); err != nil {
		return nil, err
	}
	c, err := d.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("start task %q: %w", cfg.Name, err)
	}
	ctx = d.nsCtx(ctx)
	img, err := d.image(ctx, c, cfg, tc)
	if err != nil {
		return nil, fmt.Errorf("start task %q: %w", cfg.Name, err)
	}
	cid := ContainerID(cfg.ID)
	specOpts, err := d.specOpts(cfg, tc, img, cid)
	if err != nil {
		return nil, fmt.Errorf("start task %q: %w", cfg.Name, err)
	}
	container, err := c.NewContainer(ctx, cid,
		containerd.WithImage(img),
		containerd.WithSnapshotter(Snapshotter),
		containerd.WithNewSnapshot(cid, img),
		containerd.WithRuntime(d.cfg.Runtime, nil),
		containerd.WithContainerLabels(map[string]string{
			LabelTaskID: cfg.ID, LabelAllocID: cfg.AllocID, LabelJob: cfg.JobID, LabelTask: cfg.Name,
		}),
		containerd.WithNewSpec(specOpts...))
	if err != nil {
		return nil, fmt.Errorf("start task %q: create container: %w", cfg.Name, err)
	}
	fail := func(err error) (*drivers.TaskHandle, error) {
		cleanup, cancel := context.WithTimeout(d.nsCtx(context.WithoutCancel(ctx)), 10*time.Second)
		defer cancel()
		if derr := container.Delete(cleanup, containerd.WithSnapshotCleanup); derr != nil {
			d.logger.Warn("delete container after failed start", "container", cid, "error", derr)
		}
		return nil, fmt.Errorf("start task %q: %w", cfg.Name, err)
	}
	if err := ownSecrets(ctx, container, cfg); err != nil {
		return fail(err)
	}
	dir := d.fifoDir(cfg)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	st := State{
		ContainerID: cid, Namespace: d.cfg.Namespace,
		Stdout: filepath.Join(dir, "stdout.fifo"), Stderr: filepath.Join(dir, "stderr.fifo"),
	}
	logs, err := openLogs(cfg)
	if err != nil {
		return fail(err)
	}
	attach := attachIO(st, logs)
	task, err := container.NewTask(ctx, func(string) (cio.IO, error) { return attach(nil) })
	if err != nil {
		closeAll(logs)
		return fail(fmt.Errorf("create task: %w", err))
	}
	ts := d.newTaskState(cfg, st, container, task, logs)
	ownerCtx := d.nsCtx(context.Background())
	ownerCtx, ts.cancel = context.WithCancel(ownerCtx)
	exitCh, err := task.Wait(ownerCtx)
	if err == nil {
		err = task.Start(ctx)
	}
	if err != nil {
		ts.cancel()
		if _, derr := task.Delete(d.nsCtx(context.WithoutCancel(ctx)), containerd.WithProcessKill); derr != nil {
			d.logger.Warn("delete task after failed start", "container", cid, "error", derr)
		}
		task.IO().Cancel()
		closeAll(logs)
		return fail(fmt.Errorf("start: %w", err))
	}
	waitExec(ctx, task.Pid())
	d.own(ts, ownerCtx, exitCh)
	d.logger.Info("task started", "task_id", cfg.ID, "container", cid, "pid", task.Pid())
	return drivers.NewHandle(handleVersion, cfg, st, time.Now())
}

func closeAll(ws []*logging.Writer) {
	for _, w := range ws {
		w.Close()
	}
}

func (d *Driver) newTaskState(cfg *drivers.TaskConfig, st State, container containerd.Container, task containerd.Task, logs []*logging.Writer) *taskState {
	return &taskState{
		drv: d, id: cfg.ID, cfg: cfg, st: st, container: container, task: task, io: task.IO(), logs: logs,
		owned: make(chan struct{}), done: make(chan struct{}),
	}
}

// own registers ts and starts its owner goroutine, which waits for the
// exit (or a detach), drains the logs and publishes the result.
func (d *Driver) own(ts *taskState, ctx context.Context, exitCh <-chan containerd.ExitStatus) {
	d.tasks.Set(ts.id, ts)
	liveMu.Lock()
	live[ts.st.ContainerID] = ts
	liveMu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(ts.owned)
		st, ok := <-exitCh
		if !ok || ctx.Err() != nil {
			// detached: stop copying, leave the FIFOs for the next reader.
			ts.io.Cancel()
			ts.io.Wait()
			closeAll(ts.logs)
			return
		}
		drained := make(chan struct{})
		go func() { ts.io.Wait(); close(drained) }()
		timer := time.NewTimer(logDrainTimeout)
		select {
		case <-drained:
		case <-timer.C:
			ts.io.Cancel()
			<-drained
		}
		timer.Stop()
		closeAll(ts.logs)
		res := d.exitResult(ts, st)
		ts.mu.Lock()
		ts.result = res
		ts.mu.Unlock()
		close(ts.done)
		d.logger.Info("task exited", "task_id", ts.id, "exit_code", res.ExitCode, "signal", res.Signal, "oom_killed", res.OOMKilled)
	}()
}

func (d *Driver) exitResult(ts *taskState, st containerd.ExitStatus) *drivers.ExitResult {
	code, _, err := st.Result()
	if err != nil {
		return &drivers.ExitResult{ExitCode: -1, Err: fmt.Errorf("wait for container %s: %w", ts.st.ContainerID, err)}
	}
	res := &drivers.ExitResult{ExitCode: int(code)}
	ts.mu.Lock()
	signalled := ts.signalled
	ts.mu.Unlock()
	if signalled && code > 128 && code < 128+65 {
		res.Signal = int(code) - 128
	}
	res.OOMKilled = oomKilled(ts.st.ContainerID)
	return res
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	ts, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	// owned closes once the exit is published, or on a detach without one.
	return drivers.WaitExit(ctx, ts.owned, func() *drivers.ExitResult {
		if !ts.exited() {
			return nil
		}
		ts.mu.Lock()
		defer ts.mu.Unlock()
		return ts.result
	}), nil
}

func parseSignal(s string) (syscall.Signal, error) {
	if s == "" {
		return syscall.SIGTERM, nil
	}
	sig, err := signal.ParseSignal(s)
	if err != nil {
		return 0, fmt.Errorf("%w: signal %q: %v", drivers.ErrInvalidConfig, s, err)
	}
	return sig, nil
}

// StopTask implements drivers.Driver: signal (default the task's
// kill_signal, else SIGTERM), then SIGKILL after timeout.
func (d *Driver) StopTask(ctx context.Context, taskID string, timeout time.Duration, sigName string) error {
	ts, err := d.tasks.Get(taskID)
	if err != nil {
		return err
	}
	sig, err := parseSignal(ts.cfg.StopSignal(sigName))
	if err != nil {
		return err
	}
	if ts.exited() {
		return nil
	}
	ctx = d.nsCtx(ctx)
	// The task is PID 1 of its namespace: the kernel drops a signal it has
	// no handler for, so a shell that has not reached its `trap` yet would
	// miss the stop signal. When the signal surely went unhandled (no
	// handler before and after sending) it is sent again once PID 1
	// catches it; it is never delivered twice.
	pending, err := d.sendStop(ctx, ts, sig)
	if err != nil {
		return fmt.Errorf("stop task %q: %w", taskID, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
wait:
	for {
		select {
		case <-ts.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stop task %q: %w", taskID, ctx.Err())
		case <-timer.C:
			break wait
		case <-poll.C:
			if pending && catches(ts.task.Pid(), sig) {
				if pending, err = d.sendStop(ctx, ts, sig); err != nil {
					return fmt.Errorf("stop task %q: %w", taskID, err)
				}
			}
		}
	}
	d.logger.Info("task did not stop in time, killing", "task_id", taskID, "timeout", timeout)
	if err := d.kill(ctx, ts, syscall.SIGKILL); err != nil {
		return fmt.Errorf("stop task %q: %w", taskID, err)
	}
	select {
	case <-ts.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %q: %w", taskID, ctx.Err())
	}
}

func (d *Driver) kill(ctx context.Context, ts *taskState, sig syscall.Signal) error {
	ts.mu.Lock()
	ts.signalled = true
	ts.mu.Unlock()
	var opts []containerd.KillOpts
	if sig == syscall.SIGKILL {
		opts = append(opts, containerd.WithKillAll)
	}
	err := ts.task.Kill(ctx, sig, opts...)
	if err != nil && (errdefs.IsNotFound(err) || ts.exited()) {
		return nil
	}
	return err
}

// SignalTask implements drivers.Signaler.
func (d *Driver) SignalTask(ctx context.Context, taskID string, sigName string) error {
	ts, err := d.tasks.Get(taskID)
	if err != nil {
		return err
	}
	sig, err := parseSignal(sigName)
	if err != nil {
		return err
	}
	if err := ts.task.Kill(d.nsCtx(ctx), sig); err != nil {
		return fmt.Errorf("signal task %q: %w", taskID, err)
	}
	return nil
}

// DestroyTask implements drivers.Driver: deletes the task, the container
// and its snapshot. A running task is refused unless force.
func (d *Driver) DestroyTask(ctx context.Context, taskID string, force bool) error {
	ts, err := d.tasks.Get(taskID)
	if err != nil {
		return err
	}
	ctx = d.nsCtx(ctx)
	if !ts.exited() {
		if !force {
			return fmt.Errorf("destroy task %q: task is still running (stop it or use force)", taskID)
		}
		if err := d.kill(ctx, ts, syscall.SIGKILL); err != nil {
			return fmt.Errorf("destroy task %q: %w", taskID, err)
		}
		select {
		case <-ts.done:
		case <-ctx.Done():
			return fmt.Errorf("destroy task %q: %w", taskID, ctx.Err())
		}
	}
	<-ts.owned
	if _, err := ts.task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("destroy task %q: delete task: %w", taskID, err)
	}
	if err := ts.container.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("destroy task %q: delete container: %w", taskID, err)
	}
	_ = os.RemoveAll(filepath.Dir(ts.st.Stdout))
	d.tasks.Delete(taskID)
	liveMu.Lock()
	if live[ts.st.ContainerID] == ts {
		delete(live, ts.st.ContainerID)
	}
	liveMu.Unlock()
	return nil
}

// RecoverTask implements drivers.Driver: reattaches to the container
// named in the handle and resumes copying its FIFOs into the logs.
func (d *Driver) RecoverTask(ctx context.Context, h *drivers.TaskHandle) error {
	var st State
	if known, err := d.tasks.Recover(h, &st); known || err != nil {
		return err
	}
	cfg := h.Config
	if st.ContainerID == "" {
		return fmt.Errorf("%w: task %q: bad driver state: no container ID", drivers.ErrRecoverFailed, cfg.ID)
	}
	c, err := d.conn(ctx)
	if err != nil {
		return fmt.Errorf("%w: task %q: %v", drivers.ErrRecoverFailed, cfg.ID, err)
	}
	ctx = d.nsCtx(ctx)
	container, err := c.LoadContainer(ctx, st.ContainerID)
	if err != nil {
		return fmt.Errorf("%w: task %q: load container %s: %v", drivers.ErrRecoverFailed, cfg.ID, st.ContainerID, err)
	}
	// Another instance in this process reading the FIFOs gives them up.
	liveMu.Lock()
	prev := live[st.ContainerID]
	liveMu.Unlock()
	if prev != nil {
		prev.detach()
		<-prev.owned
		prev.drv.tasks.Remove(prev.id, prev)
	}
	logs, err := openLogs(cfg)
	if err != nil {
		return fmt.Errorf("%w: task %q: %v", drivers.ErrRecoverFailed, cfg.ID, err)
	}
	task, err := container.Task(ctx, nil)
	if err != nil {
		closeAll(logs)
		return fmt.Errorf("%w: task %q: load task: %v", drivers.ErrRecoverFailed, cfg.ID, err)
	}
	status, err := task.Status(ctx)
	if err != nil {
		closeAll(logs)
		return fmt.Errorf("%w: task %q: status: %v", drivers.ErrRecoverFailed, cfg.ID, err)
	}
	if status.Status == containerd.Stopped {
		// No writer will open the FIFOs again: take what they still hold.
		drainFIFO(st.Stdout, logs[0])
		drainFIFO(st.Stderr, logs[1])
		task, err = container.Task(ctx, func(*cio.FIFOSet) (cio.IO, error) { return nopIO{}, nil })
	} else {
		task, err = container.Task(ctx, attachIO(st, logs))
	}
	if err != nil {
		closeAll(logs)
		return fmt.Errorf("%w: task %q: load task: %v", drivers.ErrRecoverFailed, cfg.ID, err)
	}
	ts := d.newTaskState(cfg, st, container, task, logs)
	ownerCtx, cancel := context.WithCancel(d.nsCtx(context.Background()))
	ts.cancel = cancel
	exitCh, err := task.Wait(ownerCtx)
	if err != nil {
		cancel()
		task.IO().Cancel()
		closeAll(logs)
		return fmt.Errorf("%w: task %q: wait: %v", drivers.ErrRecoverFailed, cfg.ID, err)
	}
	d.own(ts, ownerCtx, exitCh)
	d.logger.Info("task recovered", "task_id", cfg.ID, "container", st.ContainerID)
	return nil
}

// Leftovers lists the containers in the driver's namespace that belong to
// none of the known task IDs (or container IDs). They are reported, never
// removed: the client logs them.
func (d *Driver) Leftovers(ctx context.Context, known []string) ([]string, error) {
	c, err := d.conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("list leftover containers: %w", err)
	}
	isKnown := make(map[string]bool, len(known))
	for _, k := range known {
		isKnown[k] = true
	}
	ctrs, err := c.Containers(d.nsCtx(ctx))
	if err != nil {
		return nil, fmt.Errorf("list leftover containers: %w", err)
	}
	var out []string
	for _, ct := range ctrs {
		labels, err := ct.Labels(d.nsCtx(ctx))
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return nil, fmt.Errorf("list leftover containers: %w", err)
		}
		if isKnown[ct.ID()] || (labels != nil && isKnown[labels[LabelTaskID]]) {
			continue
		}
		out = append(out, ct.ID())
	}
	return out, nil
}

// nopIO is the IO of a recovered task that had already exited.
type nopIO struct{}

func (nopIO) Config() cio.Config { return cio.Config{} }
func (nopIO) Cancel()            {}
func (nopIO) Wait()              {}
func (nopIO) Close() error       { return nil }

// drainFIFO copies what a FIFO still buffers into w without blocking: a
// non-blocking read returns EAGAIN when it is empty and 0 when no writer
// is left.
func drainFIFO(path string, w io.Writer) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer syscall.Close(fd)
	buf := make([]byte, 32<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
		}
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return
		}
	}
}

// sendStop sends sig to the task and reports whether it certainly went
// unhandled by PID 1 (no handler before and after the kill).
func (d *Driver) sendStop(ctx context.Context, ts *taskState, sig syscall.Signal) (unhandled bool, err error) {
	pid := ts.task.Pid()
	if sig == syscall.SIGKILL || catches(pid, sig) {
		return false, d.kill(ctx, ts, sig)
	}
	// No handler yet. Frozen, the task cannot install one between the
	// check and the signal, so the check tells for sure whether the
	// kernel dropped it (a task that starts its handler in that window
	// would otherwise look handled and wait for the kill timeout).
	perr := ts.task.Pause(ctx)
	if perr == nil {
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if rerr := ts.task.Resume(rctx); rerr != nil && err == nil {
				err = fmt.Errorf("resume after the stop signal: %w", rerr)
			}
		}()
		handled := catches(pid, sig)
		return !handled, d.kill(ctx, ts, sig)
	}
	d.logger.Debug("freeze for the stop signal failed", "task_id", ts.cfg.ID, "error", perr)
	// Not frozen: resent only when surely unhandled (no handler after the
	// signal either); a handler that appeared in between may have missed it.
	if err := d.kill(ctx, ts, sig); err != nil {
		return false, err
	}
	return !catches(pid, sig), nil
}

// catches reports whether process pid has a handler for sig (SigCgt of
// /proc/<pid>/status; false while it is still runc's init); true when
// unknown, so nothing is resent.
func catches(pid uint32, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		// Until runc's init has exec'd the task, a signal it catches is
		// lost with it.
		if v, ok := strings.CutPrefix(line, "Name:"); ok && strings.HasPrefix(strings.TrimSpace(v), "runc:") {
			return false
		}
		if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return true
			}
			return mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return true
}

// waitExec returns once process pid is no longer runc's init (it has
// exec'd the task, or exited), or after a short bound: runc start returns
// just before that exec, and a signal sent in between would be lost.
func waitExec(ctx context.Context, pid uint32) {
	path := fmt.Sprintf("/proc/%d/comm", pid)
	deadline := time.NewTimer(2 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(b), "runc:") {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
