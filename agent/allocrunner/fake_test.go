package allocrunner

// An in-test fake driver, used until drivers/mock exists: tasks exit
// when the test says so (or at once with config exit_code), and every
// call is recorded so tests can check order and kill parameters.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// procTable is the "host": tasks outlive a driver instance (agent restart).
type procTable struct {
	mu    sync.Mutex
	tasks map[string]*fakeTask
	calls []string
}

type fakeTask struct {
	cfg  *drivers.TaskConfig
	done chan struct{}
	res  *drivers.ExitResult
}

func newProcs() *procTable { return &procTable{tasks: map[string]*fakeTask{}} }

func (p *procTable) record(s string) {
	p.mu.Lock()
	p.calls = append(p.calls, s)
	p.mu.Unlock()
}

func (p *procTable) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

type fakeDriver struct {
	procs *procTable
	// known: task IDs this instance started or recovered.
	mu    sync.Mutex
	known map[string]bool
}

func newFake(p *procTable) *fakeDriver { return &fakeDriver{procs: p, known: map[string]bool{}} }

var _ drivers.Driver = (*fakeDriver)(nil)

func (d *fakeDriver) Name() string { return "fake" }
func (d *fakeDriver) Fingerprint(context.Context) *drivers.Fingerprint {
	return &drivers.Fingerprint{Health: drivers.HealthHealthy}
}
func (d *fakeDriver) ValidateConfig(cfg map[string]any) error {
	for k := range cfg {
		switch k {
		case "exit_code", "command", "args", "start_error":
		default:
			return fmt.Errorf("unknown key %q: %w", k, drivers.ErrInvalidConfig)
		}
	}
	return nil
}

func (d *fakeDriver) StartTask(ctx context.Context, cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if msg, ok := cfg.Config["start_error"].(string); ok {
		d.procs.record("starterr " + cfg.Name)
		return nil, fmt.Errorf("fake: %s", msg)
	}
	t := &fakeTask{cfg: cfg, done: make(chan struct{})}
	d.procs.mu.Lock()
	d.procs.tasks[cfg.ID] = t
	d.procs.calls = append(d.procs.calls, "start "+cfg.Name)
	d.procs.mu.Unlock()
	d.mu.Lock()
	d.known[cfg.ID] = true
	d.mu.Unlock()
	if code, ok := cfg.Config["exit_code"]; ok {
		c := 0
		switch v := code.(type) {
		case int:
			c = v
		case float64:
			c = int(v)
		}
		d.procs.exit(cfg.ID, &drivers.ExitResult{ExitCode: c})
	}
	st, _ := json.Marshal(map[string]string{"id": cfg.ID})
	return &drivers.TaskHandle{Version: 1, Config: cfg, DriverState: st, StartedAt: time.Now()}, nil
}

func (p *procTable) exit(id string, res *drivers.ExitResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.tasks[id]
	if t == nil || t.res != nil {
		return
	}
	t.res = res
	close(t.done)
}

// Exit ends the newest running task named name.
func (p *procTable) Exit(t *testing.T, name string, res *drivers.ExitResult) {
	t.Helper()
	p.mu.Lock()
	var id string
	for tid, ft := range p.tasks {
		if ft.cfg.Name == name && ft.res == nil {
			id = tid
		}
	}
	p.mu.Unlock()
	if id == "" {
		t.Fatalf("no running task %q", name)
	}
	p.exit(id, res)
}

// Running lists the IDs of running tasks named name.
func (p *procTable) Running(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id, ft := range p.tasks {
		if ft.cfg.Name == name && ft.res == nil {
			out = append(out, id)
		}
	}
	return out
}

func (p *procTable) Config(id string) *drivers.TaskConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.tasks[id]; t != nil {
		return t.cfg
	}
	return nil
}

func (d *fakeDriver) task(id string) (*fakeTask, error) {
	d.mu.Lock()
	ok := d.known[id]
	d.mu.Unlock()
	d.procs.mu.Lock()
	defer d.procs.mu.Unlock()
	t := d.procs.tasks[id]
	if !ok || t == nil {
		return nil, fmt.Errorf("fake %s: %w", id, drivers.ErrTaskNotFound)
	}
	return t, nil
}

func (d *fakeDriver) WaitTask(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	t, err := d.task(id)
	if err != nil {
		return nil, err
	}
	out := make(chan *drivers.ExitResult, 1)
	go func() {
		select {
		case <-t.done:
			out <- t.res
		case <-ctx.Done():
			close(out)
		}
	}()
	return out, nil
}

func (d *fakeDriver) StopTask(ctx context.Context, id string, timeout time.Duration, signal string) error {
	t, err := d.task(id)
	if err != nil {
		return err
	}
	if signal == "" {
		signal = "SIGTERM"
	}
	d.procs.record(fmt.Sprintf("stop %s %s %s", t.cfg.Name, signal, timeout))
	d.procs.exit(id, &drivers.ExitResult{Signal: 15})
	return nil
}

func (d *fakeDriver) DestroyTask(ctx context.Context, id string, force bool) error {
	t, err := d.task(id)
	if err != nil {
		return err
	}
	d.procs.exit(id, &drivers.ExitResult{Signal: 9})
	d.procs.record("destroy " + t.cfg.Name)
	return nil
}

func (d *fakeDriver) RecoverTask(ctx context.Context, h *drivers.TaskHandle) error {
	d.procs.mu.Lock()
	t := d.procs.tasks[h.Config.ID]
	d.procs.mu.Unlock()
	if t == nil || t.res != nil {
		return fmt.Errorf("fake %s: %w", h.Config.ID, drivers.ErrRecoverFailed)
	}
	d.mu.Lock()
	d.known[h.Config.ID] = true
	d.mu.Unlock()
	d.procs.record("recover " + h.Config.Name)
	return nil
}

func (d *fakeDriver) SignalTask(ctx context.Context, id, sig string) error {
	t, err := d.task(id)
	if err != nil {
		return err
	}
	d.procs.record("signal " + t.cfg.Name + " " + sig)
	return nil
}

func (d *fakeDriver) TaskStats(ctx context.Context, id string) (*api.TaskResourceUsage, error) {
	if _, err := d.task(id); err != nil {
		return nil, err
	}
	return &api.TaskResourceUsage{Timestamp: 1, ResourceUsage: &api.ResourceUsage{
		MemoryStats: &api.MemoryStats{RSS: 1 << 20}, CpuStats: &api.CpuStats{Percent: 1.5}}}, nil
}

// callsMatching filters calls by prefix words.
func callsMatching(calls []string, prefixes ...string) []string {
	var out []string
	for _, c := range calls {
		for _, p := range prefixes {
			if strings.HasPrefix(c, p+" ") {
				out = append(out, c)
				break
			}
		}
	}
	return out
}
