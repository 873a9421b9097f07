package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/executor/supervisor"
	"golang.org/x/sys/unix"
)

// nsenter finds util-linux's nsenter, used to run commands inside an
// exec task's namespaces and chroot.
func nsenter() (string, error) {
	p, err := exec.LookPath("nsenter")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/nsenter"); serr == nil {
			return "/usr/bin/nsenter", nil
		}
		return "", fmt.Errorf("exec into an isolated task needs nsenter (util-linux): %w", err)
	}
	return p, nil
}

// ExecTask runs a command in the task's environment: for exec inside its
// namespaces, chroot and user (via nsenter), for raw_exec in its task
// dir; with TTY on a pseudo-terminal.
func (d *Driver) ExecTask(ctx context.Context, id string, opts *drivers.ExecOptions) (*drivers.ExitResult, error) {
	t, err := d.tasks.Get(id)
	if err != nil {
		return nil, err
	}
	if opts == nil || len(opts.Command) == 0 {
		return nil, fmt.Errorf("exec in task %q: empty command", id)
	}
	if t.proc.Exited() {
		return nil, fmt.Errorf("exec in task %q: task has exited", id)
	}
	env := envList(t.cfg.Env)
	for k, v := range opts.Env {
		env = append(env, k+"="+v)
	}
	var cmd *exec.Cmd
	if t.proc.State.Isolated {
		if !sameProcess(t.proc.State.TaskPID, t.proc.State.TaskStart) {
			return nil, fmt.Errorf("exec in task %q: task process gone", id)
		}
		var files []*os.File
		defer func() {
			for _, f := range files {
				f.Close()
			}
		}()
		if cmd, files, err = d.sandboxedCommand(ctx, t, opts.Command, env); err != nil {
			return nil, fmt.Errorf("exec in task %q: %w", id, err)
		}
	} else {
		path, err := supervisor.LookPath(opts.Command[0], env)
		if err != nil {
			return nil, fmt.Errorf("exec in task %q: %w", id, err)
		}
		cmd = d.command(ctx, t, path, opts.Command[0], opts.Command[1:])
		cmd.Dir = t.cfg.TaskDir
		if t.cfg.User != "" && t.proc.State.Cgroup == "" {
			cred, err := supervisor.LookupUser(t.cfg.User)
			if err != nil {
				return nil, fmt.Errorf("exec in task %q: %w", id, err)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
	}
	if cmd.Env == nil {
		cmd.Env = env
	}
	if opts.TTY {
		err = runTTY(cmd, opts)
	} else {
		err = runPlain(cmd, opts)
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return nil, fmt.Errorf("exec in task %q: %w", id, err)
		}
	}
	res := &drivers.ExitResult{}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		res.ExitCode = ws.ExitStatus()
		if ws.Signaled() {
			res.Signal, res.ExitCode = int(ws.Signal()), 128+int(ws.Signal())
		}
	}
	return res, nil
}

// sandboxedCommand is command run in an exec task: util-linux nsenter
// enters the task's namespaces and chroot (as root) and runs the
// supervisor binary there (handed over open as fd 3: the chroot lacks
// it) as `--sandbox`, which gives command the task's user, bounding set,
// no_new_privs and seccomp filter before it execs it with env (fd 4).
// Everything before the command runs with a clean environment. files
// are the caller's to close once the command ran.
func (d *Driver) sandboxedCommand(ctx context.Context, t *task, command, env []string) (*exec.Cmd, []*os.File, error) {
	user := t.cfg.User
	if user == "" {
		user = "nobody"
	}
	cred, err := supervisor.LookupUser(user)
	if err != nil {
		return nil, nil, err
	}
	filter, err := taskFilter()
	if err != nil {
		return nil, nil, err
	}
	ns, err := nsenter()
	if err != nil {
		return nil, nil, err
	}
	sup := FindSupervisor(d.bin)
	bin, err := os.Open(sup.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("open supervisor binary: %w", err)
	}
	envFile, err := envMemfd(env)
	if err != nil {
		bin.Close()
		return nil, nil, err
	}
	args := []string{"-t", strconv.Itoa(t.proc.State.TaskPID), "-m", "-u", "-i", "-p", "-r", "-w"}
	if t.cfg.NetNS != "" {
		// The init joins the task's network namespace on one thread
		// only: name it, or the command would get the host's.
		args = append(args, "--net="+t.cfg.NetNS)
	}
	args = append(args, "--", fmt.Sprintf("/proc/self/fd/%d", supervisor.SandboxBinaryFD))
	args = append(args, sup.command(supervisor.SandboxFlag)...)
	args = append(args, supervisor.FormatSandboxArgs(cred, filter, command)...)
	cmd := d.command(ctx, t, ns, "nsenter", args)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.ExtraFiles = []*os.File{bin, envFile} // fds 3 and 4
	return cmd, cmd.ExtraFiles, nil
}

// envMemfd returns a memory file holding env NUL-separated, at offset 0.
func envMemfd(env []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("drover-exec-env", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd for the environment: %w", err)
	}
	f := os.NewFile(uintptr(fd), "env")
	var b []byte
	for _, kv := range env {
		b = append(append(b, kv...), 0)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("write the environment: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// command runs path (as argv0 with args) inside the task's cgroup: via
// the supervisor's --join (`drover-executor --join` or `drover executor
// --join`) when the task has one, so that the command
// and everything it forks count against the task's limits.
func (d *Driver) command(ctx context.Context, t *task, path, argv0 string, args []string) *exec.Cmd {
	if t.proc.State.Cgroup == "" {
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Args[0] = argv0
		return cmd
	}
	sup := FindSupervisor(d.bin)
	helper := sup.command(supervisor.JoinFlag, t.proc.State.Cgroup)
	if !t.proc.State.Isolated && t.cfg.User != "" {
		helper = append(helper, "--user", t.cfg.User) // nsenter switches users itself
	}
	return exec.CommandContext(ctx, sup.Path, append(append(helper, "--", path, argv0), args...)...)
}

func runPlain(cmd *exec.Cmd, opts *drivers.ExecOptions) error {
	if opts.Stdin != nil {
		cmd.Stdin = opts.Stdin
	}
	if opts.Stdout != nil {
		cmd.Stdout = opts.Stdout
	}
	if opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	}
	return cmd.Run()
}

// runTTY runs cmd on a new pseudo-terminal: Stdout gets its output,
// Stdin feeds it, Resize sets its size.
func runTTY(cmd *exec.Cmd, opts *drivers.ExecOptions) error {
	attrs := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attrs = *cmd.SysProcAttr
	}
	attrs.Setsid, attrs.Setctty = true, true
	ptmx, err := pty.StartWithAttrs(cmd, nil, attrs)
	if err != nil {
		return err
	}
	defer ptmx.Close()
	var wg sync.WaitGroup
	done := make(chan struct{})
	if opts.Resize != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case sz, ok := <-opts.Resize:
					if !ok {
						return
					}
					_ = pty.Setsize(ptmx, &pty.Winsize{Rows: sz.Height, Cols: sz.Width})
				case <-done:
					return
				}
			}
		}()
	}
	if opts.Stdin != nil {
		// Not waited for: a Read on the caller's Stdin may block forever;
		// it ends on the next read or write error after the pty closes.
		go func() { _, _ = io.Copy(ptmx, opts.Stdin) }()
	}
	out := opts.Stdout
	if out == nil {
		out = io.Discard
	}
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, ptmx); close(copied) }()
	werr := cmd.Wait()
	// Drain what the command wrote before it exited; the read ends with
	// EIO once no process holds the terminal any more.
	<-copied
	close(done)
	wg.Wait()
	return werr
}
