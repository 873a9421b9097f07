package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/logging"
)

// Name of the driver in job files.
const Name = "mock_driver"

// ErrTaskRunning: DestroyTask without force on a running task.
var ErrTaskRunning = errors.New("task is still running")

// killedSignal is reported when a task is killed after the stop timeout.
const killedSignal = 9

// Driver is the mock driver.
type Driver struct {
	logger *slog.Logger
	tasks  drivers.Tasks[*task]
}

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Statser  = (*Driver)(nil)
	_ drivers.Signaler = (*Driver)(nil)
	_ drivers.Factory  = New
)

// New builds a mock driver. It takes no plugin config.
func New(opts drivers.Options) (drivers.Driver, error) {
	if len(opts.Config) > 0 {
		for k := range opts.Config {
			return nil, fmt.Errorf("mock plugin config: %w: unknown key %q", drivers.ErrInvalidConfig, k)
		}
	}
	l := opts.Logger
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &Driver{logger: l.With("component", "driver", "driver", Name)}, nil
}

// state is the mock's DriverState.
type state struct {
	StartedAt int64 `json:"started_at"` // Unix ns
}

type task struct {
	cfg  *drivers.TaskConfig
	mc   *TaskConfig
	stop chan int // stop signal number
	kill chan struct{}
	once sync.Once
	done chan struct{}
	res  *drivers.ExitResult

	mu      sync.Mutex
	signals []string
}

// Name of the driver.
func (d *Driver) Name() string { return Name }

// Fingerprint is always healthy.
func (d *Driver) Fingerprint(context.Context) *drivers.Fingerprint {
	return &drivers.Fingerprint{Health: drivers.HealthHealthy, HealthDescription: "healthy",
		Attributes: map[string]string{"driver.mock_driver": "1"}}
}

// ValidateConfig checks the config block.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	_, err := ParseConfig(cfg)
	return err
}

// StartTask starts a fake task.
func (d *Driver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	mc, err := ParseConfig(cfg.Config)
	if err != nil {
		return nil, err
	}
	if mc.StartBlockFor > 0 {
		t := time.NewTimer(mc.StartBlockFor)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("start task %q: %w", cfg.ID, ctx.Err())
		}
	}
	if mc.StartError != "" {
		return nil, fmt.Errorf("start task %q: %s", cfg.ID, mc.StartError)
	}
	now := time.Now()
	h, err := drivers.NewHandle(1, cfg, state{StartedAt: now.UnixNano()}, now)
	if err != nil {
		return nil, err
	}
	if err := d.launch(cfg, mc, mc.RunFor, true); err != nil {
		return nil, err
	}
	return h, nil
}

func (d *Driver) launch(cfg *drivers.TaskConfig, mc *TaskConfig, runFor time.Duration, output bool) error {
	if err := d.tasks.CheckNew(cfg.ID); err != nil {
		return err
	}
	out, err := logging.Open(logging.Config{Dir: cfg.LogDir, Prefix: logging.Prefix(cfg.Name, "stdout"),
		MaxFiles: cfg.LogMaxFiles, MaxFileSizeMB: cfg.LogMaxFileSizeMB})
	if err != nil {
		return fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	errw, err := logging.Open(logging.Config{Dir: cfg.LogDir, Prefix: logging.Prefix(cfg.Name, "stderr"),
		MaxFiles: cfg.LogMaxFiles, MaxFileSizeMB: cfg.LogMaxFileSizeMB})
	if err != nil {
		out.Close()
		return fmt.Errorf("start task %q: %w", cfg.ID, err)
	}
	t := &task{cfg: cfg, mc: mc, stop: make(chan int, 1), kill: make(chan struct{}), done: make(chan struct{})}
	if !d.tasks.Add(cfg.ID, t) { // started meanwhile
		errw.Close()
		out.Close()
		return fmt.Errorf("start task %q: already running", cfg.ID)
	}
	go t.run(out, errw, runFor, output)
	return nil
}

// run is the task: output, then exit after runFor, a stop or a kill.
func (t *task) run(out, errw io.WriteCloser, runFor time.Duration, output bool) {
	defer close(t.done)
	defer errw.Close()
	defer out.Close()
	mc := t.mc
	left := 0
	if output && mc.StdoutString != "" {
		_, _ = io.WriteString(out, mc.StdoutString)
		left = mc.StdoutRepeat
	}
	var repeat <-chan time.Time
	if left > 0 && mc.StdoutRepeatDuration > 0 {
		tk := time.NewTicker(mc.StdoutRepeatDuration)
		defer tk.Stop()
		repeat = tk.C
	} else {
		for ; left > 0; left-- {
			_, _ = io.WriteString(out, mc.StdoutString)
		}
	}
	end := time.NewTimer(max(runFor, 0))
	defer end.Stop()
	var stopped <-chan time.Time
	stopSig := 0
	for {
		select {
		case <-end.C:
			t.res = &drivers.ExitResult{ExitCode: mc.ExitCode, Signal: mc.ExitSignal, OOMKilled: mc.OOMKilled}
			if mc.ExitErrMsg != "" {
				t.res.Err = errors.New(mc.ExitErrMsg)
			}
			return
		case <-repeat:
			_, _ = io.WriteString(out, mc.StdoutString)
			if left--; left == 0 {
				repeat = nil
			}
		case sig := <-t.stop:
			if stopSig != 0 {
				continue
			}
			stopSig = sig
			if mc.KillAfter <= 0 {
				t.res = &drivers.ExitResult{ExitCode: 128 + sig, Signal: sig}
				return
			}
			st := time.NewTimer(mc.KillAfter)
			defer st.Stop()
			stopped = st.C
		case <-stopped:
			t.res = &drivers.ExitResult{ExitCode: 128 + stopSig, Signal: stopSig}
			return
		case <-t.kill:
			t.res = &drivers.ExitResult{ExitCode: 128 + killedSignal, Signal: killedSignal}
			return
		}
	}
}

// WaitTask yields the exit once.
func (d *Driver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	t, err := d.tasks.Get(id)
	if err != nil {
		return nil, err
	}
	return drivers.WaitExit(ctx, t.done, func() *drivers.ExitResult { r := *t.res; return &r }), nil
}

func signalNumber(name string) (int, error) {
	switch name {
	case "", "SIGTERM", "TERM":
		return 15, nil
	case "SIGINT", "INT":
		return 2, nil
	case "SIGKILL", "KILL":
		return 9, nil
	case "SIGHUP", "HUP":
		return 1, nil
	case "SIGQUIT", "QUIT":
		return 3, nil
	case "SIGUSR1", "USR1":
		return 10, nil
	case "SIGUSR2", "USR2":
		return 12, nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}

// StopTask delivers the stop signal; the task exits after kill_after, or
// is killed (signal 9) when that exceeds timeout.
func (d *Driver) StopTask(ctx context.Context, id string, timeout time.Duration, signal string) error {
	t, err := d.tasks.Get(id)
	if err != nil {
		return err
	}
	sig, err := signalNumber(t.cfg.StopSignal(signal))
	if err != nil {
		return fmt.Errorf("stop task %q: %w", id, err)
	}
	select {
	case t.stop <- sig:
	default:
	}
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %q: %w", id, ctx.Err())
	case <-tm.C:
	}
	t.once.Do(func() { close(t.kill) })
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop task %q: %w", id, ctx.Err())
	}
}

// DestroyTask forgets the task, killing it first when force.
func (d *Driver) DestroyTask(ctx context.Context, id string, force bool) error {
	t, err := d.tasks.Get(id)
	if err != nil {
		return err
	}
	select {
	case <-t.done:
	default:
		if !force {
			return fmt.Errorf("destroy task %q: %w", id, ErrTaskRunning)
		}
		t.once.Do(func() { close(t.kill) })
		select {
		case <-t.done:
		case <-ctx.Done():
			return fmt.Errorf("destroy task %q: %w", id, ctx.Err())
		}
	}
	d.tasks.Delete(id)
	return nil
}

// RecoverTask recreates a task from its handle: it runs for what is left
// of run_for (a finished one exits at once) and writes no output again.
func (d *Driver) RecoverTask(_ context.Context, h *drivers.TaskHandle) error {
	var st state
	if known, err := d.tasks.Recover(h, &st); known || err != nil {
		return err
	}
	if st.StartedAt == 0 {
		return fmt.Errorf("recover task %q: %w: bad driver state", h.Config.ID, drivers.ErrRecoverFailed)
	}
	mc, err := ParseConfig(h.Config.Config)
	if err != nil {
		return fmt.Errorf("recover task %q: %w: %v", h.Config.ID, drivers.ErrRecoverFailed, err)
	}
	left := mc.RunFor - time.Since(time.Unix(0, st.StartedAt))
	if err := d.launch(h.Config, mc, left, false); err != nil {
		return fmt.Errorf("recover task %q: %w: %v", h.Config.ID, drivers.ErrRecoverFailed, err)
	}
	return nil
}

// TaskStats reports a fixed small usage (1 MiB, 1 %).
func (d *Driver) TaskStats(_ context.Context, id string) (*api.TaskResourceUsage, error) {
	if _, err := d.tasks.Get(id); err != nil {
		return nil, err
	}
	return &api.TaskResourceUsage{
		ResourceUsage: &api.ResourceUsage{
			MemoryStats: &api.MemoryStats{RSS: 1 << 20, Usage: 1 << 20, Measured: []string{"RSS", "Usage"}},
			CpuStats:    &api.CpuStats{Percent: 1, Measured: []string{"Percent"}},
		},
		Timestamp: time.Now().UnixNano(),
	}, nil
}

// SignalTask records the signal (see Signals) or fails with signal_error.
func (d *Driver) SignalTask(_ context.Context, id string, signal string) error {
	t, err := d.tasks.Get(id)
	if err != nil {
		return err
	}
	if _, err := signalNumber(signal); err != nil {
		return fmt.Errorf("signal task %q: %w", id, err)
	}
	if t.mc.SignalError != "" {
		return fmt.Errorf("signal task %q: %s", id, t.mc.SignalError)
	}
	t.mu.Lock()
	t.signals = append(t.signals, signal)
	t.mu.Unlock()
	return nil
}

// Signals returns the signals a task received through SignalTask.
func (d *Driver) Signals(id string) []string {
	t, err := d.tasks.Get(id)
	if err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.signals...)
}
