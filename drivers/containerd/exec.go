package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"

	"github.com/drover/drover/drivers"
)

// ExecTask implements drivers.Execer: runs opts.Command in the task's
// container with the task's process spec (user, env, caps), optionally
// on a TTY with resizes.
func (d *Driver) ExecTask(ctx context.Context, taskID string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	ts, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	if opts == nil || len(opts.Command) == 0 {
		return nil, fmt.Errorf("exec in task %q: %w: empty command", taskID, drivers.ErrInvalidConfig)
	}
	if ts.exited() {
		return nil, fmt.Errorf("exec in task %q: task is not running", taskID)
	}
	ctx = d.nsCtx(ctx)
	spec, err := ts.container.Spec(ctx)
	if err != nil {
		return nil, fmt.Errorf("exec in task %q: %w", taskID, err)
	}
	pspec := *spec.Process
	pspec.Args = opts.Command
	pspec.Terminal = opts.TTY
	pspec.Env = append(append([]string(nil), pspec.Env...), envList(nil, opts.Env)...)

	// At EOF of Stdin the process's stdin is closed through the shim
	// (closing our FIFO end alone does not reach the process).
	var stdin io.Reader
	procReady := make(chan containerd.Process, 1)
	finished := make(chan struct{})
	defer close(finished)
	if opts.Stdin != nil {
		stdin = &stdinCloser{r: opts.Stdin, onEOF: func() {
			select {
			case p := <-procReady:
				if err := p.CloseIO(ctx, containerd.WithStdinCloser); err != nil {
					d.logger.Debug("close exec stdin", "task_id", taskID, "error", err)
				}
			case <-finished:
			case <-ctx.Done():
			}
		}}
	}
	var stdout, stderr io.Writer = io.Discard, io.Discard
	if opts.Stdout != nil {
		stdout = opts.Stdout
	}
	if opts.Stderr != nil {
		stderr = opts.Stderr
	}
	cioOpts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(filepath.Dir(ts.st.Stdout))}
	if opts.TTY {
		cioOpts = append(cioOpts, cio.WithTerminal)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	execID := "exec-" + hex.EncodeToString(b)
	proc, err := ts.task.Exec(ctx, execID, &pspec, cio.NewCreator(cioOpts...))
	if err != nil {
		return nil, fmt.Errorf("exec in task %q: %w", taskID, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(d.nsCtx(context.WithoutCancel(ctx)), 10*time.Second)
		defer cancel()
		if _, err := proc.Delete(dctx, containerd.WithProcessKill); err != nil {
			d.logger.Debug("delete exec process", "task_id", taskID, "exec", execID, "error", err)
		}
	}()
	statusC, err := proc.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("exec in task %q: %w", taskID, err)
	}
	if err := proc.Start(ctx); err != nil {
		return nil, fmt.Errorf("exec in task %q: start: %w", taskID, err)
	}
	procReady <- proc
	resizeDone := make(chan struct{})
	stopResize := make(chan struct{})
	go func() {
		defer close(resizeDone)
		if opts.Resize == nil || !opts.TTY {
			return
		}
		for {
			select {
			case sz, ok := <-opts.Resize:
				if !ok {
					return
				}
				if err := proc.Resize(ctx, uint32(sz.Width), uint32(sz.Height)); err != nil {
					d.logger.Debug("resize exec tty", "task_id", taskID, "error", err)
				}
			case <-stopResize:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	var st containerd.ExitStatus
	select {
	case st = <-statusC:
	case <-ctx.Done():
		close(stopResize)
		<-resizeDone
		return nil, fmt.Errorf("exec in task %q: %w", taskID, ctx.Err())
	}
	close(stopResize)
	<-resizeDone
	drained := make(chan struct{})
	go func() { proc.IO().Wait(); close(drained) }()
	timer := time.NewTimer(logDrainTimeout)
	select {
	case <-drained:
	case <-timer.C:
		proc.IO().Cancel()
		<-drained
	}
	timer.Stop()
	code, _, err := st.Result()
	if err != nil {
		return nil, fmt.Errorf("exec in task %q: %w", taskID, err)
	}
	return &drivers.ExitResult{ExitCode: int(code)}, nil
}

// stdinCloser calls onEOF once when the reader is exhausted.
type stdinCloser struct {
	r     io.Reader
	onEOF func()
	once  sync.Once
}

func (s *stdinCloser) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.once.Do(s.onEOF)
	}
	return n, err
}
