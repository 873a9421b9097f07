package qemu

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/executor"
	"github.com/drover/drover/drivers/logging"
)

// Name of the driver in job files.
const Name = "qemu"

const (
	defaultEmulator = "qemu-system-x86_64"
	// handleVersion is the TaskHandle.Version of qemu handles.
	handleVersion = 1
	// maxSocketPath: a unix socket path must fit sun_path (108 bytes with
	// its terminating NUL).
	maxSocketPath = 107
	// startTimeout bounds waiting for a new VM's QMP to say "running".
	startTimeout = 60 * time.Second
	// quitGrace is how long qemu gets to exit after QMP quit before SIGKILL.
	quitGrace = 5 * time.Second
	// powerdownEvery re-presses the power button while waiting: a guest
	// still booting misses an ACPI event sent before it listens.
	powerdownEvery = 2 * time.Second
	// forcedFile marks a VM the driver had to quit or kill.
	forcedFile = "forced"
)

// driverState is the qemu handle's DriverState.
type driverState struct {
	Executor executor.State `json:"executor"`
	// QMPSocket is the monitor socket: in the task dir, or in a short
	// directory when the task dir's path is too long for a unix socket.
	QMPSocket string `json:"qmp_socket"`
	// OwnSocketDir: QMPSocket lives outside the task dir and Destroy
	// removes it.
	OwnSocketDir bool   `json:"own_socket_dir,omitempty"`
	Graceful     bool   `json:"graceful"`
	StateDir     string `json:"state_dir"`
}

// Driver runs QEMU virtual machines under the executor's supervisor.
type Driver struct {
	cfg      *PluginConfig
	logger   *slog.Logger
	bin      string
	stateDir string

	probeOnce sync.Once
	wg        sync.WaitGroup // the version probe

	mu         sync.Mutex // guards version, versionErr
	version    string
	versionErr error

	tasks executor.Supervised[*task]
}

type task struct {
	cfg   *drivers.TaskConfig
	proc  *executor.Process
	qmp   *qmpClient
	state driverState

	stopMu sync.Mutex // one stop sequence at a time
}

func (t *task) Process() *executor.Process { return t.proc }

var (
	_ drivers.Driver  = (*Driver)(nil)
	_ drivers.Statser = (*Driver)(nil)
	_ drivers.Factory = New
)

// New builds the qemu driver. Plugin config: image_paths, args_allowlist,
// vfio_allowlist, executor_path, emulator (see PluginConfig).
func New(opts drivers.Options) (drivers.Driver, error) {
	return NewDriver(opts)
}

// NewDriver is New returning the concrete type.
func NewDriver(opts drivers.Options) (*Driver, error) {
	pc, err := ParsePluginConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: pc, logger: opts.Logger, bin: pc.ExecutorPath}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	d.logger = d.logger.With("component", "driver", "driver", Name)
	if d.bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("qemu: find drover binary: %w", err)
		}
		d.bin = exe
	}
	d.stateDir = opts.DataDir
	if d.stateDir == "" {
		d.stateDir = filepath.Join(os.TempDir(), "drover-qemu")
	}
	return d, nil
}

// Name of the driver.
func (d *Driver) Name() string { return Name }

// Close stops watching the driver's VMs (they keep running, for the next
// driver instance to recover) and waits for its goroutines.
func (d *Driver) Close() error {
	for _, t := range d.tasks.Clear() {
		t.proc.Close()
	}
	d.wg.Wait()
	return nil
}

// ValidateConfig checks a task's config block, including its args
// against the client's args_allowlist.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := d.parse(cfg)
	return err
}

func (d *Driver) parse(cfg map[string]any) (*TaskConfig, error) {
	c, err := ParseTaskConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkArgs(c.Args, d.cfg.ArgsAllowlist); err != nil {
		return nil, err
	}
	if err := checkVFIO(c.VFIODevices, d.cfg.VFIOAllowlist); err != nil {
		return nil, err
	}
	return c, nil
}

// socketPath is TaskDir/qmp.sock, or a path in a short directory when
// that is too long for a unix socket.
func socketPath(taskDir, id string) (path string, own bool) {
	p := filepath.Join(taskDir, "qmp.sock")
	if len(p) <= maxSocketPath {
		return p, false
	}
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(os.TempDir(), "drover-qemu", hex.EncodeToString(sum[:8])+".sock"), true
}

// prepare checks the paths, creates the overlays and returns the VM spec.
func (d *Driver) prepare(ctx context.Context, cfg *drivers.TaskConfig, c *TaskConfig, sock string) (*vmSpec, error) {
	if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
		return nil, fmt.Errorf("task dir: %w", err)
	}
	pol := newPathPolicy(cfg.TaskDir, cfg.AllocDir, d.cfg.ImagePaths)
	v := &vmSpec{
		Name: cfg.Name, Machine: c.Machine, MemoryMB: memoryMB(cfg.Resources), VCPUs: vcpus(cfg.Resources),
		QMPSocket: sock, KernelArgs: c.KernelArgs, Extra: c.Args, VFIO: c.VFIODevices,
	}
	switch c.Accelerator {
	case "":
		v.Accelerator = "tcg"
		if KVMUsable() {
			v.Accelerator = "kvm"
		}
	case "kvm":
		if !KVMUsable() {
			return nil, fmt.Errorf("%w: %q: kvm requested but /dev/kvm is not usable on this node", drivers.ErrInvalidConfig, "accelerator")
		}
		v.Accelerator = "kvm"
	default:
		v.Accelerator = c.Accelerator
	}
	var err error
	if c.Kernel != "" {
		if v.Kernel, err = pol.resolve("kernel", c.Kernel); err != nil {
			return nil, err
		}
		if c.Initrd != "" {
			if v.Initrd, err = pol.resolve("initrd", c.Initrd); err != nil {
				return nil, err
			}
		}
	}
	type img struct {
		key, path, format, iface string
		readonly                 bool
	}
	var imgs []img
	if c.ImagePath != "" {
		imgs = append(imgs, img{key: "image_path", path: c.ImagePath, format: c.ImageFormat})
	}
	for i, dr := range c.Drives {
		imgs = append(imgs, img{key: fmt.Sprintf("drives[%d]", i), path: dr.Path, format: dr.Format, iface: dr.Interface, readonly: dr.Readonly})
	}
	if len(imgs) > 0 {
		qi, err := qemuImg()
		if err != nil {
			return nil, err
		}
		for i, im := range imgs {
			real, err := pol.resolve(im.key, im.path)
			if err != nil {
				return nil, err
			}
			format, err := pol.inspectImage(ctx, qi, im.key, real, im.format)
			if err != nil {
				return nil, err
			}
			// The overlay stays in the task dir: a restarted task boots
			// from the disk its previous run left (its chain is checked
			// again, like any image).
			ov := filepath.Join(cfg.TaskDir, fmt.Sprintf("qemu-disk%d.qcow2", i))
			if _, err := os.Lstat(ov); errors.Is(err, os.ErrNotExist) {
				if err := overlay(ctx, qi, real, format, ov); err != nil {
					return nil, err
				}
			} else if err != nil {
				return nil, err
			} else if _, err := pol.resolve(im.key, ov); err != nil {
				return nil, err
			} else if _, err := pol.inspectImage(ctx, qi, im.key, ov, "qcow2"); err != nil {
				return nil, err
			}
			v.Disks = append(v.Disks, disk{Path: ov, Interface: im.iface, Readonly: im.readonly})
		}
	}
	if v.Forwards, err = forwards(c.PortMap, cfg.Ports); err != nil {
		return nil, err
	}
	return v, nil
}

// StartTask boots the VM under a supervisor and returns once QMP reports
// it running.
func (d *Driver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	c, err := d.parse(cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := d.tasks.CheckNew(cfg.ID); err != nil {
		return nil, err
	}
	emu, err := d.emulator()
	if err != nil {
		return nil, fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	sock, own := socketPath(cfg.TaskDir, cfg.ID)
	spec, err := d.prepare(ctx, cfg, c, sock)
	if err != nil {
		return nil, fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	if own {
		if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
			return nil, fmt.Errorf("start task %q: qmp socket dir: %w", cfg.ID, err)
		}
	}
	_ = os.Remove(sock) // left by an earlier run of the task
	name := executor.CgroupName(cfg.ID)
	stateDir := filepath.Join(d.stateDir, name)
	logDir := cfg.LogDir
	if logDir == "" {
		logDir = filepath.Join(cfg.AllocDir, "alloc", "logs")
	}
	ecfg := &executor.Config{
		TaskName: cfg.Name, Command: emu, Args: spec.args(),
		Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, Cwd: cfg.TaskDir,
		LogDir: logDir, LogMaxFiles: cfg.LogMaxFiles, LogMaxFileSizeMB: cfg.LogMaxFileSizeMB,
		StateDir: stateDir, ExitFile: filepath.Join(stateDir, "exit.json"),
	}
	if executor.CgroupsUsable() == nil {
		// A cgroup without limits: stats and a clean kill of qemu's threads.
		ecfg.Cgroup = &executor.CgroupConfig{Name: name}
	}
	cleanup := func() {
		if ecfg.Cgroup != nil {
			_ = executor.DeleteCgroup(name)
		}
		_ = os.RemoveAll(stateDir)
		_ = os.Remove(sock)
	}
	proc, err := executor.Launch(ctx, d.bin, ecfg)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	q := newQMPClient(sock)
	if err := d.waitRunning(ctx, proc, q); err != nil {
		_ = proc.Signal(syscall.SIGKILL)
		select {
		case <-proc.Done():
		case <-time.After(quitGrace):
		}
		proc.Close()
		q.Close()
		if proc.Exited() {
			if tail := logTail(logDir, cfg.Name, "stderr"); tail != "" {
				err = fmt.Errorf("%w: qemu: %s", err, tail)
			}
		}
		cleanup()
		return nil, fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	st := driverState{Executor: proc.State, QMPSocket: sock, OwnSocketDir: own, Graceful: c.GracefulShutdown, StateDir: stateDir}
	h, err := drivers.NewHandle(handleVersion, cfg, st, time.Now())
	if err != nil {
		return nil, err
	}
	d.tasks.Set(cfg.ID, &task{cfg: cfg, proc: proc, qmp: q, state: st})
	d.logger.Info("vm started", "task", cfg.ID, "pid", proc.State.TaskPID, "accelerator", spec.Accelerator,
		"memory_mb", spec.MemoryMB, "vcpus", spec.VCPUs, "qmp", sock)
	return h, nil
}

// waitRunning polls QMP until the VM runs, qemu exits, or time is up.
func (d *Driver) waitRunning(ctx context.Context, proc *executor.Process, q *qmpClient) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	retry := time.NewTicker(25 * time.Millisecond)
	defer retry.Stop()
	var last error
	for {
		if proc.Exited() {
			return fmt.Errorf("qemu exited before the VM ran (exit %+v)", *proc.Result())
		}
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		status, err := q.Status(sctx)
		scancel()
		switch {
		case err == nil && status == "running":
			return nil
		case err == nil:
			last = fmt.Errorf("vm status %q", status)
		default:
			last = err
		}
		select {
		case <-proc.Done():
		case <-retry.C:
		case <-ctx.Done():
			return fmt.Errorf("vm not running: %w (last: %v)", ctx.Err(), last)
		}
	}
}

// logTail is the end of a task log, for error messages.
func logTail(dir, name, stream string) string {
	b, err := logging.ReadAll(dir, logging.Prefix(name, stream))
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 2048 {
		s = s[len(s)-2048:]
	}
	return s
}

// Exit is the VM's exit. A VM the driver had to quit (after its
// guest ignored the power-down for kill_timeout) reports SIGTERM, one it
// had to kill SIGKILL: neither counts as a clean exit.
func (t *task) Exit() *drivers.ExitResult {
	out := executor.ExitResult(t.proc.Result())
	if out.Signal == 0 && out.Err == nil {
		if _, err := os.Stat(filepath.Join(t.state.StateDir, forcedFile)); err == nil {
			out.Signal, out.ExitCode = int(syscall.SIGTERM), 128+int(syscall.SIGTERM)
		}
	}
	return out
}

// WaitTask yields the VM's exit once.
func (d *Driver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	return d.tasks.WaitTask(ctx, id)
}

// StopTask powers the VM down: an ACPI power-button press over QMP
// (repeated every powerdownEvery; skipped when graceful_shutdown is
// false), then QMP quit once timeout has passed, then SIGKILL after
// quitGrace. signal is ignored: a VM has no signal of its own.
func (d *Driver) StopTask(ctx context.Context, id string, timeout time.Duration, _ string) error {
	t, err := d.tasks.Get(id)
	if err != nil {
		return err
	}
	t.stopMu.Lock()
	defer t.stopMu.Unlock()
	if t.proc.Exited() {
		return nil
	}
	if t.state.Graceful {
		end := time.Now().Add(timeout)
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		press := time.NewTicker(powerdownEvery)
		defer press.Stop()
		for done := false; !done; {
			pctx, cancel := context.WithTimeout(ctx, min(powerdownEvery, time.Until(end)))
			if err := t.qmp.Powerdown(pctx); err != nil && !t.proc.Exited() {
				d.logger.Warn("vm power-down", "task", id, "error", err)
			}
			cancel()
			select {
			case <-t.proc.Done():
				return nil
			case <-ctx.Done():
				return fmt.Errorf("stop task %q: %w", id, ctx.Err())
			case <-deadline.C:
				done = true
			case <-press.C:
			}
		}
		d.logger.Info("vm did not power off in time, quitting", "task", id, "timeout", timeout)
	}
	d.markForced(t)
	qctx, cancel := context.WithTimeout(ctx, quitGrace)
	qerr := t.qmp.Quit(qctx)
	if qerr == nil || t.proc.Exited() {
		select {
		case <-t.proc.Done():
		case <-qctx.Done():
		}
	}
	cancel()
	if t.proc.Exited() {
		return nil
	}
	d.logger.Info("vm did not quit, killing", "task", id, "qmp_error", qerr)
	if err := t.proc.Kill(ctx); err != nil {
		return fmt.Errorf("kill task %q: %w", id, err)
	}
	return nil
}

// markForced marks t's VM as one the driver had to quit or kill (see
// Exit).
func (d *Driver) markForced(t *task) {
	if err := os.WriteFile(filepath.Join(t.state.StateDir, forcedFile), nil, 0o600); err != nil {
		d.logger.Warn("mark vm stop forced", "task", t.cfg.ID, "error", err)
	}
}

// DestroyTask kills a running VM when force, then removes the supervisor
// state, cgroup and QMP socket. The overlays go with the alloc dir.
func (d *Driver) DestroyTask(ctx context.Context, id string, force bool) error {
	return d.tasks.DestroyTask(ctx, id, force, d.markForced, func(t *task) error {
		t.qmp.Close() // qemu is gone: every session has ended
		if err := os.Remove(t.state.QMPSocket); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
}

// RecoverTask reattaches to a VM started by an earlier agent: its
// supervisor through the saved PIDs, the VM through its QMP socket.
func (d *Driver) RecoverTask(ctx context.Context, h *drivers.TaskHandle) error {
	var st driverState
	if known, err := d.tasks.Recover(h, &st); known || err != nil {
		return err
	}
	id := h.Config.ID
	if h.Version != handleVersion {
		return fmt.Errorf("recover task %q: %w: handle version %d, want %d", id, drivers.ErrRecoverFailed, h.Version, handleVersion)
	}
	if st.QMPSocket == "" || st.StateDir == "" {
		return fmt.Errorf("recover task %q: %w: incomplete state", id, drivers.ErrRecoverFailed)
	}
	proc, err := executor.Reattach(st.Executor)
	if err != nil {
		return fmt.Errorf("recover task %q: %w: %v", id, drivers.ErrRecoverFailed, err)
	}
	t := &task{cfg: h.Config, proc: proc, qmp: newQMPClient(st.QMPSocket), state: st}
	if !proc.Exited() {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		status, err := t.qmp.Status(qctx)
		cancel()
		if err != nil {
			// The VM runs: keep it (it can still be killed) rather than fail.
			d.logger.Warn("recovered vm does not answer on qmp", "task", id, "error", err)
		} else {
			d.logger.Info("vm recovered", "task", id, "status", status)
		}
	}
	if !d.tasks.Add(id, t) {
		proc.Close() // recovered meanwhile
	}
	return nil
}

// TaskStats reports the qemu process's memory and CPU use.
func (d *Driver) TaskStats(ctx context.Context, id string) (*api.TaskResourceUsage, error) {
	return d.tasks.TaskStats(ctx, id)
}
