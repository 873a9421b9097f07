package allocrunner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/agent/network"
	"github.com/drover/drover/agent/services"
	"github.com/drover/drover/agent/taskrunner"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/clock"
)

// Store persists allocs and task records (clientstate.DB satisfies it).
type Store interface {
	taskrunner.Store
	PutAlloc(a *api.Allocation) error
	Task(allocID, task string) (*clientstate.TaskRecord, error)
}

// Config of an alloc runner.
type Config struct {
	Alloc *api.Allocation
	// AllocDir is DataDir/alloc/<allocID>.
	AllocDir string
	Node     *api.Node
	Region   string
	// Drivers by name; a task naming a missing driver fails setup.
	Drivers map[string]drivers.Driver
	Clock   clock.Clock
	Logger  *slog.Logger
	Store   Store
	// Restore: load task records from Store (agent restart).
	Restore bool
	// OnUpdate is called whenever the client status or a task state changes.
	OnUpdate func(allocID string)
	// Services registers the alloc's native services (nil: none are).
	Services *services.Registrar
	// ServiceLookup answers the templates' nomadService reads.
	ServiceLookup taskrunner.ServiceLookup
	// Variables answers the templates' nomadVar and nomadVarList reads.
	Variables taskrunner.VariableReader
	// Identities signs the tasks' workload identities.
	Identities taskrunner.IdentitySigner
	// Network builds bridge networks (nil: a bridge group fails to start).
	Network *network.Manager
	// MPS runs the MPS daemons of GPUs shared in MPS mode (nil: a task
	// given an MPS share fails setup).
	MPS taskrunner.MPSDaemons
}

// ErrUnknownTask is returned for a task name that is not in the alloc.
var ErrUnknownTask = errors.New("unknown task")

// AllocRunner runs one allocation.
type AllocRunner struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	alloc    *api.Allocation
	runners  map[string]*taskrunner.TaskRunner
	order    []string // task names as in the group
	hooks    map[string]*api.TaskLifecycle
	launched map[string]bool

	killCh   chan struct{}
	killOnce sync.Once
	// killReason is the stop reason KillFor gave (guarded by mu; ""
	// derives it from the alloc, StopReason).
	killReason string
	taskCh     chan struct{}
	svc        *services.Alloc // nil when the alloc registers no service
	svcCh      chan struct{}   // task states changed: services look again
	// netOnce sets the bridge network up once for all tasks; netNS and
	// netErr are its outcome.
	netOnce sync.Once
	netNS   string
	netErr  error
	doneCh  chan struct{}
	wg      sync.WaitGroup
}

// New builds the runner and its task runners; Run starts them.
func New(cfg Config) (*AllocRunner, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	a := cfg.Alloc
	if a.Job == nil {
		return nil, fmt.Errorf("alloc %s: %w", a.ID, api.Errorf(api.ErrBadRequest, "allocation has no job"))
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return nil, fmt.Errorf("alloc %s: %w", a.ID, api.Errorf(api.ErrBadRequest, fmt.Sprintf("group %q not in job", a.TaskGroup)))
	}
	ar := &AllocRunner{
		cfg: cfg, log: cfg.Logger.With("component", "allocrunner", "alloc_id", a.ID),
		alloc: a, runners: map[string]*taskrunner.TaskRunner{}, hooks: map[string]*api.TaskLifecycle{},
		launched: map[string]bool{},
		killCh:   make(chan struct{}), taskCh: make(chan struct{}, 1), doneCh: make(chan struct{}),
		svcCh: make(chan struct{}, 1),
	}
	for _, t := range tg.Tasks {
		// Task runners join the task name to the alloc dir for every
		// path they write: refuse a name that is not one element of it.
		if _, err := TaskDir(cfg.AllocDir, t.Name); err != nil {
			return nil, fmt.Errorf("alloc %s: %w", a.ID, api.Errorf(api.ErrBadRequest, err.Error()))
		}
	}
	for _, t := range tg.Tasks {
		var rec *clientstate.TaskRecord
		if cfg.Restore && cfg.Store != nil {
			r, err := cfg.Store.Task(a.ID, t.Name)
			if err != nil && !errors.Is(err, clientstate.ErrNotFound) {
				return nil, fmt.Errorf("restore alloc %s: %w", a.ID, err)
			}
			rec = r
		}
		d := cfg.Drivers[t.Driver]
		if d == nil {
			d = missingDriver{name: t.Driver}
		}
		done := a.Job.Type == api.JobTypeBatch || a.Job.Type == api.JobTypeSysBatch
		if lc := t.Lifecycle; lc != nil && (lc.Hook == api.TaskLifecycleHookPoststop || !lc.Sidecar) {
			done = true
		}
		ar.runners[t.Name] = taskrunner.New(taskrunner.Config{
			Alloc: a, Task: t, Driver: d, AllocDir: cfg.AllocDir, Node: cfg.Node, Region: cfg.Region,
			MountedDirs: mountsDirs(d), DoneOnSuccess: done, Clock: cfg.Clock, Logger: cfg.Logger,
			Store: cfg.Store, Restored: rec, OnUpdate: ar.notify, Services: cfg.ServiceLookup, Variables: cfg.Variables,
			Identities: cfg.Identities, NetNS: ar.netNSFunc(tg), MPS: cfg.MPS,
		})
		ar.order = append(ar.order, t.Name)
		ar.hooks[t.Name] = t.Lifecycle
	}
	if cfg.Services != nil {
		env := taskrunner.BuildEnv(taskrunner.EnvInput{Alloc: a, Task: tg.Tasks[0], Node: cfg.Node, Region: cfg.Region,
			Dirs: taskrunner.HostDirs(cfg.AllocDir, tg.Tasks[0].Name)})
		svc := services.NewAlloc(services.AllocConfig{Alloc: a, Node: cfg.Node, Registrar: cfg.Services, Logger: cfg.Logger, Clock: cfg.Clock,
			Interpolate: func(v string) string { return taskrunner.Interpolate(v, env, cfg.Node) },
			Exec:        ar.execTarget,
			Restart:     ar.restartUnhealthy,
		})
		if svc.HasServices() {
			ar.svc = svc
		}
	}
	return ar, nil
}

// bridge reports whether the group asks for a bridge network.
func bridge(tg *api.TaskGroup) bool {
	for _, n := range tg.Networks {
		if n != nil && n.Mode == "bridge" {
			return true
		}
	}
	return false
}

// netNSFunc is the tasks' way to the alloc's bridge network (nil for
// groups in the host network).
func (ar *AllocRunner) netNSFunc(tg *api.TaskGroup) func(context.Context) (string, error) {
	if !bridge(tg) {
		return nil
	}
	return func(ctx context.Context) (string, error) {
		ar.netOnce.Do(func() {
			if ar.cfg.Network == nil {
				ar.netErr = errors.New("this client has no bridge networking")
				return
			}
			var ports []api.AllocatedPort
			if r := ar.cfg.Alloc.AllocatedResources; r != nil {
				ports = r.Shared.Ports
			}
			n, err := ar.cfg.Network.Setup(ctx, ar.cfg.Alloc.ID, ports)
			if err != nil {
				ar.netErr = err
				return
			}
			ar.netNS = n.NetNS
		})
		return ar.netNS, ar.netErr
	}
}

// teardownNetwork releases the alloc's bridge network once its tasks are done.
func (ar *AllocRunner) teardownNetwork(ctx context.Context) {
	tg := ar.cfg.Alloc.Job.LookupTaskGroup(ar.cfg.Alloc.TaskGroup)
	if ar.cfg.Network == nil || tg == nil || !bridge(tg) {
		return
	}
	var ports []api.AllocatedPort
	if r := ar.cfg.Alloc.AllocatedResources; r != nil {
		ports = r.Shared.Ports
	}
	if err := ar.cfg.Network.Teardown(ctx, ar.cfg.Alloc.ID, ports); err != nil {
		ar.log.Warn("tear down the bridge network", "error", err)
	}
}

// execTarget is where a script check of task runs.
func (ar *AllocRunner) execTarget(task string) (drivers.Execer, string, error) {
	tr := ar.runners[task]
	if tr == nil {
		return nil, "", fmt.Errorf("script check: %w", api.Errorf(api.ErrNotFound, "unknown task "+task))
	}
	return tr.ExecTarget()
}

// restartUnhealthy restarts a task (every running one for "") whose
// checks stayed unhealthy (check_restart).
func (ar *AllocRunner) restartUnhealthy(ctx context.Context, task, reason string) error {
	msg := "healthcheck: " + reason
	if task != "" {
		if tr := ar.runners[task]; tr != nil {
			return tr.RestartFor(ctx, msg)
		}
		return fmt.Errorf("restart %q: %w", task, api.Errorf(api.ErrNotFound, "unknown task "+task))
	}
	var errs []error
	for _, name := range ar.order {
		if tr := ar.runners[name]; !tr.IsDead() {
			errs = append(errs, tr.RestartFor(ctx, msg))
		}
	}
	return errors.Join(errs...)
}

// Checks returns the latest results of the alloc's service checks.
func (ar *AllocRunner) Checks() map[string]*api.CheckResult {
	if ar.svc == nil {
		return map[string]*api.CheckResult{}
	}
	return ar.svc.Checks()
}

// watchServices registers the services of running tasks until stop.
func (ar *AllocRunner) watchServices(stop <-chan struct{}) {
	defer ar.wg.Done()
	for {
		running := map[string]time.Time{}
		for name, tr := range ar.runners {
			if st := tr.State(); st.State == api.TaskStateRunning {
				running[name] = st.StartedAt
				if st.LastRestart.After(st.StartedAt) {
					running[name] = st.LastRestart
				}
			}
		}
		ar.svc.Update(running)
		select {
		case <-ar.svcCh:
		case <-stop:
			return
		}
	}
}

// mountsDirs: drivers that mount /alloc, /local and /secrets into the
// task (containerd, and exec's chroot) get in-task paths in the env; a
// driver may also say so with a MountsTaskDirs() bool method.
func mountsDirs(d drivers.Driver) bool {
	if m, ok := d.(interface{ MountsTaskDirs() bool }); ok {
		return m.MountsTaskDirs()
	}
	switch d.Name() {
	case "containerd", "exec":
		return true
	}
	return false
}

func (ar *AllocRunner) notify() {
	select {
	case ar.taskCh <- struct{}{}:
	default:
	}
	select {
	case ar.svcCh <- struct{}{}:
	default:
	}
	if ar.cfg.OnUpdate != nil {
		ar.cfg.OnUpdate(ar.cfg.Alloc.ID)
	}
}

// ID is the alloc ID.
func (ar *AllocRunner) ID() string { return ar.cfg.Alloc.ID }

// AllocDir is the host path of the alloc dir.
func (ar *AllocRunner) AllocDir() string { return ar.cfg.AllocDir }

// WaitCh is closed when every task is dead and Run has returned.
func (ar *AllocRunner) WaitCh() <-chan struct{} { return ar.doneCh }

// Alloc returns a copy of the alloc with the client status and the task
// states as persisted (what may be reported to the servers) filled in.
func (ar *AllocRunner) Alloc() *api.Allocation {
	// A shallow copy: allocs from the server are never mutated in place
	// (api.Allocation.Copy would briefly mutate the shared original).
	ar.mu.Lock()
	c := *ar.alloc
	ar.mu.Unlock()
	a := &c
	a.TaskStates = map[string]*api.TaskState{}
	for name, tr := range ar.runners {
		a.TaskStates[name] = tr.ReportedState()
	}
	a.ClientStatus, a.ClientDescription = ClientStatus(a.TaskStates)
	return a
}

// ClientStatus derives an alloc's client status from its task states:
// failed if any task failed; complete when all are dead; running when
// any runs; else pending.
func ClientStatus(states map[string]*api.TaskState) (string, string) {
	var running, dead, failed int
	for _, s := range states {
		switch s.State {
		case api.TaskStateRunning:
			running++
		case api.TaskStateDead:
			dead++
			if s.Failed {
				failed++
			}
		}
	}
	switch {
	case failed > 0 && dead == len(states):
		return api.AllocClientStatusFailed, "Failed tasks"
	case failed > 0 && running == 0:
		return api.AllocClientStatusFailed, "Failed tasks"
	case dead == len(states) && len(states) > 0:
		return api.AllocClientStatusComplete, "All tasks have completed"
	case running > 0:
		return api.AllocClientStatusRunning, "Tasks are running"
	}
	return api.AllocClientStatusPending, "No tasks have started"
}

// Update applies a new version of the alloc from the server: a desired
// stop/evict kills it; otherwise the new job is used from each task's
// next start (in-place update).
func (ar *AllocRunner) Update(a *api.Allocation) {
	ar.mu.Lock()
	old := ar.alloc
	ar.alloc = a
	ar.mu.Unlock()
	if a.Gang != nil && (old == nil || !reflect.DeepEqual(old.Gang, a.Gang)) {
		if err := WriteGangFiles(ar.cfg.AllocDir, a.JobID, a.Gang); err != nil {
			ar.log.Error("write gang files", "error", err)
		}
	}
	if ar.cfg.Store != nil {
		if err := ar.cfg.Store.PutAlloc(a); err != nil {
			ar.log.Error("persist alloc", "error", err)
		}
	}
	if a.DesiredStatus == api.AllocDesiredStatusStop || a.DesiredStatus == api.AllocDesiredStatusEvict {
		ar.Kill()
		return
	}
	for _, tr := range ar.runners {
		tr.UpdateAlloc(a)
	}
}

// Kill asks the runner to stop every task (it returns at once; wait on
// WaitCh). The tasks are told why (stopReason) from the alloc the
// servers last sent.
func (ar *AllocRunner) Kill() { ar.KillFor("") }

// KillFor is Kill for a reason the client knows better than the alloc
// (StopNodeLost when it gave the alloc up while cut off). The first
// kill's reason stands.
func (ar *AllocRunner) KillFor(reason string) {
	ar.killOnce.Do(func() {
		ar.mu.Lock()
		ar.killReason = reason
		ar.mu.Unlock()
		close(ar.killCh)
	})
}

// stopReason is why the killed runner stops: KillFor's reason, else
// StopReason of the alloc.
func (ar *AllocRunner) stopReason() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if ar.killReason != "" {
		return ar.killReason
	}
	return StopReason(ar.alloc)
}

func (ar *AllocRunner) killed() bool {
	select {
	case <-ar.killCh:
		return true
	default:
		return false
	}
}

// Destroy removes the alloc dir; call after WaitCh is closed.
func (ar *AllocRunner) Destroy() error {
	if err := os.RemoveAll(ar.cfg.AllocDir); err != nil {
		return fmt.Errorf("destroy alloc dir: %w", err)
	}
	return nil
}

// Restart restarts one running task, or all running tasks when task is "".
func (ar *AllocRunner) Restart(ctx context.Context, task string) error {
	if task != "" {
		tr := ar.runners[task]
		if tr == nil {
			return fmt.Errorf("restart %q: %w", task, api.Errorf(api.ErrNotFound, "unknown task "+task))
		}
		return tr.Restart(ctx)
	}
	var errs []error
	for _, name := range ar.order {
		if tr := ar.runners[name]; !tr.IsDead() {
			if err := tr.Restart(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Signal signals one task, or every running task when task is "".
func (ar *AllocRunner) Signal(ctx context.Context, task, sig string) error {
	if task != "" {
		tr := ar.runners[task]
		if tr == nil {
			return fmt.Errorf("signal %q: %w", task, api.Errorf(api.ErrNotFound, "unknown task "+task))
		}
		return tr.Signal(ctx, sig)
	}
	var errs []error
	for _, name := range ar.order {
		if tr := ar.runners[name]; !tr.IsDead() {
			if err := tr.Signal(ctx, sig); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Stats gathers the running tasks' resource usage.
func (ar *AllocRunner) Stats(ctx context.Context) (*api.AllocResourceUsage, error) {
	out := &api.AllocResourceUsage{Tasks: map[string]*api.TaskResourceUsage{},
		ResourceUsage: &api.ResourceUsage{MemoryStats: &api.MemoryStats{}, CpuStats: &api.CpuStats{}}}
	for name, tr := range ar.runners {
		if tr.IsDead() {
			continue
		}
		u, err := tr.Stats(ctx)
		if err != nil {
			if errors.Is(err, drivers.ErrNotSupported) || errors.Is(err, drivers.ErrTaskNotFound) {
				continue
			}
			return nil, err
		}
		out.Tasks[name] = u
		if u.Timestamp > out.Timestamp {
			out.Timestamp = u.Timestamp
		}
		if r := u.ResourceUsage; r != nil {
			if m := r.MemoryStats; m != nil {
				out.ResourceUsage.MemoryStats.RSS += m.RSS
				out.ResourceUsage.MemoryStats.Usage += m.Usage
				out.ResourceUsage.MemoryStats.Cache += m.Cache
				out.ResourceUsage.MemoryStats.Swap += m.Swap
			}
			if c := r.CpuStats; c != nil {
				out.ResourceUsage.CpuStats.Percent += c.Percent
				out.ResourceUsage.CpuStats.TotalTicks += c.TotalTicks
				out.ResourceUsage.CpuStats.UserMode += c.UserMode
				out.ResourceUsage.CpuStats.SystemMode += c.SystemMode
			}
		}
	}
	return out, nil
}

// TaskNames lists the tasks in group order.
func (ar *AllocRunner) TaskNames() []string { return append([]string(nil), ar.order...) }

// missingDriver fails every start: the node has no such driver.
type missingDriver struct {
	drivers.Driver
	name string
}

func (m missingDriver) Name() string { return m.name }
func (m missingDriver) ValidateConfig(map[string]any) error {
	return fmt.Errorf("driver %q is not available on this node: %w", m.name, drivers.ErrInvalidConfig)
}
func (m missingDriver) RecoverTask(context.Context, *drivers.TaskHandle) error {
	return fmt.Errorf("driver %q: %w", m.name, drivers.ErrRecoverFailed)
}
func (m missingDriver) DestroyTask(context.Context, string, bool) error {
	return drivers.ErrTaskNotFound
}
