package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/executor/supervisor"
	"golang.org/x/sys/unix"
)

// handleVersion is the TaskHandle.Version of exec and raw_exec handles.
const handleVersion = 1

// DefaultPidsLimit caps an exec task's processes unless the plugin
// config sets pids_limit (0 there = no limit).
const DefaultPidsLimit = 4096

// ErrTaskRunning: DestroyTask without force on a running task.
var ErrTaskRunning = errors.New("task is still running")

// Driver is the drivers.Driver of exec (Isolated) and raw_exec: both run
// tasks under a supervisor process.
type Driver struct {
	name     string
	isolated bool
	logger   *slog.Logger
	bin      string
	stateDir string
	pids     int64
	// denied users (exec only): the client option user.denylist.
	denied map[string]bool

	tasks Supervised[*task]
}

type task struct {
	cfg  *drivers.TaskConfig
	proc *Process
}

func (t *task) Process() *Process         { return t.proc }
func (t *task) Exit() *drivers.ExitResult { return ExitResult(t.proc.Result()) }

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Statser  = (*Driver)(nil)
	_ drivers.Signaler = (*Driver)(nil)
	_ drivers.Execer   = (*Driver)(nil)
)

// NewDriver builds the exec (isolated) or raw_exec driver. Plugin config
// keys: executor_path (the drover binary; default os.Executable()) and,
// for exec, pids_limit.
func NewDriver(name string, isolated bool, opts drivers.Options) (*Driver, error) {
	d := &Driver{name: name, isolated: isolated, logger: opts.Logger, pids: DefaultPidsLimit}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	d.logger = d.logger.With("component", "driver", "driver", name)
	for k, v := range opts.Config {
		switch k {
		case "executor_path":
			s, ok := v.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("%s plugin config: %w: executor_path must be a non-empty string", name, drivers.ErrInvalidConfig)
			}
			d.bin = s
		case "pids_limit":
			n, ok := drivers.Int(v)
			if !ok || n < 0 {
				return nil, fmt.Errorf("%s plugin config: %w: pids_limit must be a number >= 0", name, drivers.ErrInvalidConfig)
			}
			d.pids = n
		default:
			return nil, fmt.Errorf("%s plugin config: %w: unknown key %q", name, drivers.ErrInvalidConfig, k)
		}
	}
	if isolated {
		d.denied = UserDenylist(opts.ClientOptions)
	}
	if d.bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%s: find drover binary: %w", name, err)
		}
		d.bin = exe
	}
	d.stateDir = opts.DataDir
	if d.stateDir == "" {
		d.stateDir = filepath.Join(os.TempDir(), "drover-"+name)
	}
	d.stateDir = filepath.Join(d.stateDir, name)
	return d, nil
}

// Name of the driver.
func (d *Driver) Name() string { return d.name }

// Fingerprint: exec needs root, usable cgroups and the drover binary;
// raw_exec only the binary (whether it is enabled is the client's call).
func (d *Driver) Fingerprint(_ context.Context) *drivers.Fingerprint {
	fp := &drivers.Fingerprint{Attributes: map[string]string{}}
	if _, err := os.Stat(d.bin); err != nil {
		fp.Health, fp.HealthDescription = drivers.HealthUnhealthy, fmt.Sprintf("executor binary: %v", err)
		return fp
	}
	if d.isolated {
		if err := CgroupsUsable(); err != nil {
			fp.Health, fp.HealthDescription = drivers.HealthUnhealthy, fmt.Sprintf("exec driver needs root and cgroups: %v", err)
			return fp
		}
		if CgroupsV2() {
			fp.Attributes["driver.exec.cgroup"] = "v2"
		} else {
			fp.Attributes["driver.exec.cgroup"] = "v1"
		}
	}
	fp.Health, fp.HealthDescription = drivers.HealthHealthy, "healthy"
	fp.Attributes["driver."+d.name] = "1"
	return fp
}

// ValidateConfig checks a task's config block.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := ParseTaskConfig(cfg)
	return err
}

// StartTask starts the task under a new supervisor.
func (d *Driver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	opts, err := ParseTaskConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	if err := d.tasks.CheckNew(cfg.ID); err != nil {
		return nil, err
	}
	ecfg, err := d.executorConfig(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	proc, err := Launch(ctx, d.bin, ecfg)
	if err != nil {
		if ecfg.Cgroup != nil {
			_ = DeleteCgroup(ecfg.Cgroup.Name)
		}
		_ = os.RemoveAll(ecfg.StateDir)
		return nil, fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	h, err := drivers.NewHandle(handleVersion, cfg, proc.State, time.Now())
	if err != nil {
		return nil, err
	}
	d.tasks.Set(cfg.ID, &task{cfg: cfg, proc: proc})
	d.logger.Debug("task started", "task", cfg.ID, "pid", proc.State.TaskPID, "executor_pid", proc.State.ExecutorPID)
	return h, nil
}

func (d *Driver) executorConfig(cfg *drivers.TaskConfig, opts *TaskOptions) (*Config, error) {
	name := CgroupName(cfg.ID)
	stateDir := filepath.Join(d.stateDir, name)
	ecfg := &Config{
		TaskName: cfg.Name, Command: opts.Command, Args: opts.Args, Env: envList(cfg.Env),
		LogDir: cfg.LogDir, LogMaxFiles: cfg.LogMaxFiles, LogMaxFileSizeMB: cfg.LogMaxFileSizeMB,
		StateDir: stateDir, ExitFile: filepath.Join(stateDir, "exit.json"), User: cfg.User,
	}
	if ecfg.LogDir == "" {
		ecfg.LogDir = filepath.Join(cfg.AllocDir, "alloc", "logs")
	}
	cgUsable := CgroupsUsable() == nil
	if !d.isolated {
		ecfg.Cwd = cfg.TaskDir
		if cgUsable {
			// raw_exec: a cgroup without limits, for stats and clean kills.
			ecfg.Cgroup = &CgroupConfig{Name: name}
		}
		if cfg.User != "" && cfg.TaskDir != "" {
			// A raw_exec task run as another user reads its secrets too.
			cred, err := supervisor.LookupUser(cfg.User)
			if err != nil {
				return nil, err
			}
			if err := ownSecrets(cfg.TaskDir, cred); err != nil {
				return nil, err
			}
		}
		return ecfg, nil
	}
	if !cgUsable {
		return nil, fmt.Errorf("exec driver: %w", CgroupsUsable())
	}
	filter, err := taskFilter()
	if err != nil {
		return nil, fmt.Errorf("exec driver: %w", err)
	}
	if ecfg.User == "" {
		ecfg.User = "nobody"
	}
	cred, err := supervisor.LookupUser(ecfg.User)
	if err != nil {
		return nil, err
	}
	if err := d.checkUser(ecfg.User, cred.Uid); err != nil {
		return nil, err
	}
	for _, sub := range []string{"local", "tmp"} {
		p := filepath.Join(cfg.TaskDir, sub)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s: %w", p, err)
		}
	}
	if err := ownSecrets(cfg.TaskDir, cred); err != nil {
		return nil, err
	}
	ecfg.Isolation = &Isolation{AllocDir: cfg.AllocDir, TaskDir: cfg.TaskDir, Hostname: cfg.Name,
		SharePID: opts.PIDMode == "host", ShareIPC: opts.IPCMode == "host", NetNS: cfg.NetNS, Seccomp: filter}
	for _, m := range cfg.Mounts {
		ecfg.Isolation.Mounts = append(ecfg.Isolation.Mounts, Mount{HostPath: m.HostPath, TaskPath: m.TaskPath, Readonly: m.Readonly})
	}
	var devs []Device
	for _, dv := range cfg.Devices {
		devs = append(devs, Device{HostPath: dv.HostPath, TaskPath: dv.TaskPath, Permissions: dv.Permissions})
	}
	ecfg.Isolation.Devices = devs
	cg := &CgroupConfig{Name: name, PidsLimit: d.pids, RestrictDevices: true, Devices: devs, MemoryMaxMB: cfg.MemoryMaxMB}
	if r := cfg.Resources; r != nil {
		cg.CPUShares = r.Cpu.CpuShares
		cg.ReservedCores = r.Cpu.ReservedCores
		cg.MemoryMB = r.Memory.MemoryMB
		if r.Memory.MemoryMaxMB > cg.MemoryMaxMB || r.Memory.MemoryMaxMB < 0 {
			cg.MemoryMaxMB = r.Memory.MemoryMaxMB // -1: no ceiling
		}
	}
	ecfg.Cgroup = cg
	return ecfg, nil
}

// ownSecrets makes taskDir/secrets (created 0700 if missing) the task
// user's; see drivers.OwnSecrets.
func ownSecrets(taskDir string, cred *syscall.Credential) error {
	p := filepath.Join(taskDir, "secrets")
	if err := os.MkdirAll(p, 0o700); err != nil {
		return err
	}
	return drivers.OwnSecrets(p, int(cred.Uid), int(cred.Gid))
}

// envList turns the task env into sorted KEY=VALUE pairs with a PATH.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env)+1)
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	if _, ok := env["PATH"]; !ok {
		out = append(out, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	sort.Strings(out)
	return out
}

// WaitTask yields the task's exit once.
func (d *Driver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	return d.tasks.WaitTask(ctx, id)
}

// ParseSignal turns "SIGTERM" / "TERM" / "sigterm" into a signal.
func ParseSignal(name string) (syscall.Signal, error) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if n == "" {
		return syscall.SIGTERM, nil
	}
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	s := unix.SignalNum(n)
	if s == 0 {
		return 0, fmt.Errorf("unknown signal %q", name)
	}
	return s, nil
}

// StopTask sends signal (default the task's KillSignal, else SIGTERM),
// waits up to timeout, then SIGKILLs the whole task.
func (d *Driver) StopTask(ctx context.Context, id string, timeout time.Duration, signal string) error {
	t, err := d.tasks.Get(id)
	if err != nil {
		return err
	}
	sig, err := ParseSignal(t.cfg.StopSignal(signal))
	if err != nil {
		return fmt.Errorf("stop task %q: %w", id, err)
	}
	if err := t.proc.Signal(sig); err != nil {
		return fmt.Errorf("stop task %q: %w", id, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-t.proc.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %q: %w", id, ctx.Err())
	case <-timer.C:
	}
	d.logger.Info("task did not stop in time, killing", "task", id, "timeout", timeout)
	if err := t.proc.Kill(ctx); err != nil {
		return fmt.Errorf("kill task %q: %w", id, err)
	}
	return nil
}

// DestroyTask kills a running task when force, then removes its cgroup
// and supervisor state.
func (d *Driver) DestroyTask(ctx context.Context, id string, force bool) error {
	return d.tasks.DestroyTask(ctx, id, force, nil, nil)
}

// RecoverTask reattaches to a supervisor started by an earlier agent.
func (d *Driver) RecoverTask(_ context.Context, h *drivers.TaskHandle) error {
	var st State
	if known, err := d.tasks.Recover(h, &st); known || err != nil {
		return err
	}
	proc, err := Reattach(st)
	if err != nil {
		return fmt.Errorf("recover task %q: %w: %v", h.Config.ID, drivers.ErrRecoverFailed, err)
	}
	if !d.tasks.Add(h.Config.ID, &task{cfg: h.Config, proc: proc}) {
		proc.Close() // recovered meanwhile
	}
	return nil
}

// TaskStats reports memory and CPU usage.
func (d *Driver) TaskStats(ctx context.Context, id string) (*api.TaskResourceUsage, error) {
	return d.tasks.TaskStats(ctx, id)
}

// SignalTask sends a signal to the running task.
func (d *Driver) SignalTask(_ context.Context, id string, signal string) error {
	t, err := d.tasks.Get(id)
	if err != nil {
		return err
	}
	sig, err := ParseSignal(signal)
	if err != nil {
		return fmt.Errorf("signal task %q: %w", id, err)
	}
	return t.proc.Signal(sig)
}
