package taskrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/clock"
)

// Store persists a task runner's record (clientstate.DB satisfies it).
type Store interface {
	PutTask(allocID, task string, r *clientstate.TaskRecord) error
}

// Config of a TaskRunner.
type Config struct {
	Alloc  *api.Allocation
	Task   *api.Task
	Driver drivers.Driver
	// AllocDir is the host path DataDir/alloc/<allocID>.
	AllocDir string
	Node     *api.Node
	Region   string
	// MountedDirs: the driver mounts the task dirs (/alloc, /local,
	// /secrets), so the env carries in-task paths.
	MountedDirs bool
	// DoneOnSuccess: a clean exit ends the task (batch jobs, prestart
	// non-sidecar and poststop tasks).
	DoneOnSuccess bool
	Clock         clock.Clock
	Logger        *slog.Logger
	Store         Store
	// Restored is the record saved by an earlier agent process (nil = new).
	Restored *clientstate.TaskRecord
	// OnUpdate is called (from the runner goroutine, without locks held)
	// after every state change.
	OnUpdate func()
	// Services answers the templates' nomadService lookups (nil: none).
	Services ServiceLookup
	// Variables answers the templates' nomadVar and nomadVarList reads,
	// made with the task's workload identity (nil: none).
	Variables VariableReader
	// Identities signs the task's workload identities (nil: none are
	// exposed).
	Identities IdentitySigner
	// NetNS returns the alloc's network namespace, setting it up on first
	// call (nil: the driver's default network).
	NetNS func(ctx context.Context) (string, error)
	// MPS runs the MPS control daemons of GPUs shared in MPS mode (nil: a
	// task given an MPS share fails setup).
	MPS MPSDaemons
}

// TaskRunner runs one task. See the package doc for the concurrency contract.
type TaskRunner struct {
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	policy *api.RestartPolicy

	mu        sync.Mutex
	alloc     *api.Allocation
	task      *api.Task
	state     *api.TaskState
	handle    *drivers.TaskHandle
	tracker   restartTracker
	killEvent *api.TaskEvent
	started   bool // Started at least once (or reattached)
	// restartAt is when a restart the policy delayed is due (zero when
	// none waits); persisted so a restored runner finishes the delay.
	restartAt time.Time
	// reported is the state as last persisted (see ReportedState).
	reported *api.TaskState
	// persistMu orders persistAndNotify calls: records reach the store,
	// and reported, in the order their snapshots were taken.
	persistMu sync.Mutex

	killCh    chan struct{}
	killOnce  sync.Once
	restartCh chan string // a restart's reason ("": the user's)
	// svc caches the templates' service reads; rendered is the env they
	// were last rendered with (under mu); tmplCh wakes the template
	// watcher after a render that read services.
	svc       *ServiceCache
	vars      *VarCache // the templates' variable reads (template_vars.go)
	rendered  map[string]string
	tmplCh    chan struct{}
	startedCh chan struct{}
	startOnce sync.Once
	doneCh    chan struct{}
}

// New builds a task runner; Run drives it.
func New(cfg Config) *TaskRunner {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tr := &TaskRunner{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "taskrunner", "alloc_id", cfg.Alloc.ID, "task", cfg.Task.Name),
		clock:     cfg.Clock,
		alloc:     cfg.Alloc,
		task:      cfg.Task,
		state:     &api.TaskState{State: api.TaskStatePending},
		killCh:    make(chan struct{}),
		restartCh: make(chan string, 1),
		tmplCh:    make(chan struct{}, 1),
		startedCh: make(chan struct{}),
		doneCh:    make(chan struct{}),
	}
	tr.policy = cfg.Task.RestartPolicy
	if tr.policy == nil && cfg.Alloc.Job != nil {
		if tg := cfg.Alloc.Job.LookupTaskGroup(cfg.Alloc.TaskGroup); tg != nil && tg.RestartPolicy != nil {
			tr.policy = tg.RestartPolicy
		} else {
			tr.policy = api.DefaultRestartPolicy(cfg.Alloc.Job.Type)
		}
	}
	tr.tracker = restartTracker{policy: tr.policy, doneOnSuccess: cfg.DoneOnSuccess}
	if r := cfg.Restored; r != nil {
		if r.State != nil {
			tr.state = r.State
		}
		tr.handle = r.Handle
		tr.tracker.count = r.RestartCount
		tr.tracker.windowStart = r.RestartWindowStart
		tr.restartAt = r.RestartAt
		if tr.state.State != api.TaskStatePending {
			tr.started = true
			tr.startOnce.Do(func() { close(tr.startedCh) })
		}
	}
	return tr
}

// Name is the task name.
func (tr *TaskRunner) Name() string { return tr.cfg.Task.Name }

// State returns a copy of the task state.
func (tr *TaskRunner) State() *api.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return copyTaskState(tr.state)
}

// ReportedState returns a copy of the state as last persisted (before the
// first persist: the initial or restored state). It is what may leave the
// client: a task reported running has its handle on disk, so an agent
// killed right after the report reattaches it instead of starting another.
func (tr *TaskRunner) ReportedState() *api.TaskState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.reported != nil {
		return copyTaskState(tr.reported)
	}
	return copyTaskState(tr.state)
}

func copyTaskState(st *api.TaskState) *api.TaskState {
	s := *st
	s.Events = append([]*api.TaskEvent(nil), st.Events...)
	return &s
}

// WaitCh is closed when the runner has finished (the task is dead).
func (tr *TaskRunner) WaitCh() <-chan struct{} { return tr.doneCh }

// StartedCh is closed once the task has started (or was found running).
func (tr *TaskRunner) StartedCh() <-chan struct{} { return tr.startedCh }

// IsDead reports whether the task is dead.
func (tr *TaskRunner) IsDead() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.state.State == api.TaskStateDead
}

// UpdateAlloc replaces the alloc (an in-place job update); the new task
// definition is used from the next (re)start.
func (tr *TaskRunner) UpdateAlloc(a *api.Allocation) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.alloc = a
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			if t := tg.LookupTask(tr.cfg.Task.Name); t != nil {
				tr.task = t
			}
		}
	}
}

// Kill stops the task for good with ev as the reason (nil = a plain
// kill) and waits for the runner to finish or ctx to end. Killing a
// runner that never ran marks it dead once Run is called.
func (tr *TaskRunner) Kill(ctx context.Context, ev *api.TaskEvent) error {
	tr.killOnce.Do(func() {
		tr.mu.Lock()
		tr.killEvent = ev
		tr.mu.Unlock()
		close(tr.killCh)
	})
	select {
	case <-tr.doneCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MarkKilled asks for the kill without waiting.
func (tr *TaskRunner) MarkKilled(ev *api.TaskEvent) {
	tr.killOnce.Do(func() {
		tr.mu.Lock()
		tr.killEvent = ev
		tr.mu.Unlock()
		close(tr.killCh)
	})
}

// Restart restarts a running task in place (not counted against the
// restart policy).
func (tr *TaskRunner) Restart(ctx context.Context) error { return tr.RestartFor(ctx, "") }

// RestartFor is Restart with the reason the task event shows ("": the
// user asked).
func (tr *TaskRunner) RestartFor(ctx context.Context, reason string) error {
	tr.mu.Lock()
	running := tr.state.State == api.TaskStateRunning
	tr.mu.Unlock()
	if !running {
		return fmt.Errorf("restart task %q: %w", tr.Name(), api.Errorf(api.ErrBadRequest, "task is not running"))
	}
	select {
	case tr.restartCh <- reason:
	default:
	}
	return nil
}

// Signal sends a signal to the running task.
func (tr *TaskRunner) Signal(ctx context.Context, sig string) error {
	tr.mu.Lock()
	h := tr.handle
	running := tr.state.State == api.TaskStateRunning
	tr.mu.Unlock()
	if !running || h == nil || h.Config == nil {
		return fmt.Errorf("signal task %q: %w", tr.Name(), api.Errorf(api.ErrBadRequest, "task is not running"))
	}
	s, ok := tr.cfg.Driver.(drivers.Signaler)
	if !ok {
		return fmt.Errorf("signal task %q: %w", tr.Name(), drivers.ErrNotSupported)
	}
	tr.emit(&api.TaskEvent{Type: api.TaskSignaling, DisplayMessage: "Task being sent signal " + sig, Details: map[string]string{"signal": sig}})
	return s.SignalTask(ctx, h.Config.ID, sig)
}

// Stats returns the task's resource usage.
func (tr *TaskRunner) Stats(ctx context.Context) (*api.TaskResourceUsage, error) {
	tr.mu.Lock()
	h := tr.handle
	tr.mu.Unlock()
	if h == nil || h.Config == nil {
		return nil, fmt.Errorf("stats of task %q: %w", tr.Name(), drivers.ErrTaskNotFound)
	}
	s, ok := tr.cfg.Driver.(drivers.Statser)
	if !ok {
		return nil, fmt.Errorf("stats of task %q: %w", tr.Name(), drivers.ErrNotSupported)
	}
	return s.TaskStats(ctx, h.Config.ID)
}

func (tr *TaskRunner) emit(ev *api.TaskEvent) {
	tr.mu.Lock()
	tr.appendEventLocked(ev)
	tr.mu.Unlock()
	tr.persistAndNotify()
}

func (tr *TaskRunner) appendEventLocked(ev *api.TaskEvent) {
	if ev.Time == 0 {
		ev.Time = tr.clock.Now().UnixNano()
	}
	if ev.DisplayMessage == "" {
		ev.DisplayMessage = ev.Message
	}
	if n := len(tr.state.Events); n > 0 && coalesces(tr.state.Events[n-1], ev) {
		// One entry per run of driver progress messages of a kind (the
		// latest, with a count), so image progress cannot push the
		// "Received" and "Task Setup" events out of the bounded list.
		prev := tr.state.Events[n-1]
		count := 1
		if c, err := strconv.Atoi(prev.Details[eventCountDetail]); err == nil && c > 0 {
			count = c
		}
		details := maps.Clone(ev.Details)
		if details == nil {
			details = map[string]string{}
		}
		details[eventCountDetail] = strconv.Itoa(count + 1)
		ev.Details = details
		tr.state.Events[n-1] = ev
		return
	}
	tr.state.Events = append(tr.state.Events, ev)
	if n := len(tr.state.Events); n > MaxEvents { // keep the timeline bounded, as Nomad does
		tr.state.Events = append([]*api.TaskEvent(nil), tr.state.Events[n-MaxEvents:]...)
	}
}

// MaxEvents is how many task events a task keeps (Nomad keeps 10).
// Consecutive "Driver" events of the same kind count as one: see
// coalesces.
const MaxEvents = 10

// eventCountDetail is the Details key of a coalesced driver event: how
// many messages of its kind came in a row (the event is the latest).
const eventCountDetail = "coalesced_count"

// coalesces reports whether next replaces prev in the event list: both
// are driver messages of the same kind, the kind being the message's
// first two words ("pulling layer", "importing image").
func coalesces(prev, next *api.TaskEvent) bool {
	if prev.Type != api.TaskDriverMessage || next.Type != api.TaskDriverMessage {
		return false
	}
	k := eventKind(prev.Message)
	return k != "" && k == eventKind(next.Message)
}

func eventKind(msg string) string {
	f := strings.Fields(msg)
	if len(f) < 2 {
		return ""
	}
	return f[0] + " " + f[1]
}

// persistAndNotify writes the runner's record to the store, then makes its
// state the reported one, then tells the alloc runner.
func (tr *TaskRunner) persistAndNotify() {
	tr.persistMu.Lock()
	tr.mu.Lock()
	rec := &clientstate.TaskRecord{
		State:  copyTaskState(tr.state),
		Handle: tr.handle, RestartCount: tr.tracker.count, RestartWindowStart: tr.tracker.windowStart,
		RestartAt: tr.restartAt,
	}
	tr.mu.Unlock()
	if tr.cfg.Store != nil {
		if err := tr.cfg.Store.PutTask(tr.cfg.Alloc.ID, tr.Name(), rec); err != nil {
			tr.log.Error("persist task state", "error", err)
		}
	}
	tr.mu.Lock()
	tr.reported = rec.State
	tr.mu.Unlock()
	tr.persistMu.Unlock()
	if tr.cfg.OnUpdate != nil {
		tr.cfg.OnUpdate()
	}
}

func (tr *TaskRunner) setDead(failed bool, ev *api.TaskEvent) {
	tr.mu.Lock()
	if ev != nil {
		tr.appendEventLocked(ev)
	}
	tr.state.State = api.TaskStateDead
	tr.state.Failed = tr.state.Failed || failed
	tr.state.FinishedAt = tr.clock.Now()
	tr.handle = nil
	tr.mu.Unlock()
	tr.persistAndNotify()
}

func (tr *TaskRunner) killed() bool {
	select {
	case <-tr.killCh:
		return true
	default:
		return false
	}
}

// Run drives the task until it is dead; the alloc runner owns and waits
// for it. ctx ending (agent shutdown) returns without killing the task,
// so a later agent can reattach.
func (tr *TaskRunner) Run(ctx context.Context) {
	defer close(tr.doneCh)
	defer tr.mpsRelease(ctx) // before doneCh: a dead task's daemons are let go by then
	// Helpers that live as long as the runner: identity renewal and
	// template re-rendering.
	if tr.cfg.Identities != nil {
		defer tr.goWhile(ctx, tr.renewIdentities)()
	}
	if (tr.cfg.Services != nil || tr.cfg.Variables != nil) && len(tr.cfg.Task.Templates) > 0 {
		defer tr.goWhile(ctx, tr.watchTemplates)()
	}
	tr.mu.Lock()
	st := tr.state.State
	h := tr.handle
	tr.mu.Unlock()

	if st == api.TaskStateDead {
		return // a dead task stays dead, across restarts too
	}
	var waitCh <-chan *drivers.ExitResult
	if st == api.TaskStateRunning && h != nil && h.Config != nil {
		// Hold its MPS daemons first, so that they are let go however the
		// reattach ends.
		tr.mpsReattach(ctx)
		err := tr.cfg.Driver.RecoverTask(ctx, h)
		if err == nil {
			waitCh, err = tr.cfg.Driver.WaitTask(ctx, h.Config.ID)
		}
		if err == nil {
			tr.emit(&api.TaskEvent{Type: api.TaskReattached, DisplayMessage: "Reattached to the running task"})
		} else {
			tr.log.Warn("reattach failed", "error", err)
			tr.emit(&api.TaskEvent{Type: api.TaskDriverFailure, DriverError: err.Error(),
				DisplayMessage: "Task could not be reattached after an agent restart: " + err.Error()})
			if !tr.afterExit(ctx, &drivers.ExitResult{ExitCode: -1, Err: err}, nil, h) {
				return
			}
		}
	} else if st == api.TaskStatePending && len(tr.state.Events) == 0 {
		tr.emit(&api.TaskEvent{Type: api.TaskReceived, DisplayMessage: "Task received by client"})
	} else if st == api.TaskStatePending {
		// Restored while a delayed restart was waiting: finish the delay.
		tr.mu.Lock()
		due := tr.restartAt
		tr.mu.Unlock()
		if !due.IsZero() && !tr.waitRestart(ctx, due.Sub(tr.clock.Now())) {
			return
		}
	}

	for {
		if waitCh == nil {
			if tr.killed() {
				tr.setDead(false, tr.killEventOr(api.TaskKilled, "Task killed before it started"))
				return
			}
			var startErr error
			h, waitCh, startErr = tr.start(ctx)
			if ctx.Err() != nil {
				return
			}
			if startErr != nil {
				if errors.Is(startErr, errSetup) {
					tr.setDead(true, nil)
					return
				}
				if !tr.afterExit(ctx, nil, startErr, nil) {
					return
				}
				continue
			}
		}
		select {
		case <-tr.runLimit():
			tr.mu.Lock()
			limit := tr.task.MaxRunDuration
			tr.mu.Unlock()
			tr.emit(&api.TaskEvent{Type: api.TaskMaxRunDuration, FailsTask: true,
				DisplayMessage: "Task ran longer than its max_run_duration of " + limit.String() + ": stopping it, not restarting"})
			tr.stop(ctx, h, waitCh)
			tr.destroy(ctx, h)
			tr.mu.Lock()
			tr.handle = nil
			tr.mu.Unlock()
			tr.setDead(true, nil)
			return
		case res, ok := <-waitCh:
			if !ok { // ctx ended: agent shutdown, leave the task running
				return
			}
			waitCh = nil
			tr.emit(terminatedEvent(res))
			if tr.killed() {
				tr.finishKill(ctx, h)
				return
			}
			if !tr.afterExit(ctx, res, nil, h) {
				return
			}
		case <-tr.killCh:
			tr.stop(ctx, h, waitCh)
			tr.finishKill(ctx, h)
			return
		case reason := <-tr.restartCh:
			msg, why := "User requested task to restart", "user requested"
			if reason != "" {
				msg, why = reason, reason
			}
			tr.emit(&api.TaskEvent{Type: api.TaskRestartSignal, DisplayMessage: msg, RestartReason: why})
			tr.stop(ctx, h, waitCh)
			tr.destroy(ctx, h)
			waitCh = nil
			tr.mu.Lock()
			tr.state.Restarts++
			tr.state.LastRestart = tr.clock.Now()
			tr.mu.Unlock()
		case <-ctx.Done():
			return
		}
	}
}

// goWhile runs f in a goroutine; the returned func cancels it and waits.
func (tr *TaskRunner) goWhile(ctx context.Context, f func(context.Context)) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// runLimit fires when the current run passes the task's max_run_duration
// (counted from its start, which a reattach keeps); nil without one.
func (tr *TaskRunner) runLimit() <-chan time.Time {
	tr.mu.Lock()
	limit, started := tr.task.MaxRunDuration, tr.state.StartedAt
	tr.mu.Unlock()
	if limit <= 0 {
		return nil
	}
	return tr.clock.After(started.Add(limit).Sub(tr.clock.Now()))
}

func (tr *TaskRunner) killEventOr(typ, msg string) *api.TaskEvent {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.killEvent != nil {
		ev := *tr.killEvent
		return &ev
	}
	return &api.TaskEvent{Type: typ, DisplayMessage: msg}
}

// stop sends the kill signal, waits KillTimeout, then the driver kills.
func (tr *TaskRunner) stop(ctx context.Context, h *drivers.TaskHandle, waitCh <-chan *drivers.ExitResult) {
	tr.mu.Lock()
	t := tr.task
	tr.mu.Unlock()
	timeout := t.KillTimeout
	if timeout <= 0 {
		timeout = api.DefaultKillTimeout
	}
	reason := tr.killEventOr(api.TaskKilling, "")
	msg := "Sent interrupt. Waiting " + timeout.String() + " before force killing"
	if reason.Type != api.TaskKilling && reason.Type != api.TaskKilled {
		tr.emit(reason)
	}
	ev := &api.TaskEvent{Type: api.TaskKilling, DisplayMessage: msg, KillTimeout: timeout}
	if why := reason.Details["stop_reason"]; why != "" {
		ev.Details = map[string]string{"stop_reason": why} // as the alloc runner wrote it for the task
	}
	tr.emit(ev)
	if h == nil || h.Config == nil {
		return
	}
	if err := tr.cfg.Driver.StopTask(ctx, h.Config.ID, timeout, t.KillSignal); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		tr.log.Error("stop task", "error", err)
	}
	if waitCh != nil {
		select {
		case res, ok := <-waitCh:
			if ok {
				tr.emit(terminatedEvent(res))
			}
		case <-ctx.Done():
		}
	}
}

func (tr *TaskRunner) destroy(ctx context.Context, h *drivers.TaskHandle) {
	if h == nil || h.Config == nil {
		return
	}
	if err := tr.cfg.Driver.DestroyTask(ctx, h.Config.ID, true); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		tr.log.Warn("destroy task", "error", err)
	}
}

func (tr *TaskRunner) finishKill(ctx context.Context, h *drivers.TaskHandle) {
	tr.destroy(ctx, h)
	tr.setDead(false, &api.TaskEvent{Type: api.TaskKilled, DisplayMessage: "Task successfully killed"})
}

// afterExit applies the restart policy; false means the runner is done.
func (tr *TaskRunner) afterExit(ctx context.Context, res *drivers.ExitResult, startErr error, h *drivers.TaskHandle) bool {
	tr.destroy(ctx, h)
	tr.mu.Lock()
	d := tr.tracker.next(res, startErr, tr.clock.Now())
	tr.handle = nil
	tr.mu.Unlock()
	if !d.Restart {
		if d.Failed {
			tr.setDead(true, &api.TaskEvent{Type: api.TaskNotRestarting, DisplayMessage: "Exceeded allowed attempts, not restarting: " + d.Reason, RestartReason: d.Reason, FailsTask: true})
		} else {
			tr.setDead(false, nil)
		}
		return false
	}
	tr.mu.Lock()
	tr.state.State = api.TaskStatePending
	tr.restartAt = tr.clock.Now().Add(d.Delay)
	tr.mu.Unlock()
	tr.emit(&api.TaskEvent{Type: api.TaskRestarting, DisplayMessage: "Task restarting in " + d.Delay.String(), RestartReason: d.Reason, StartDelay: int64(d.Delay)})
	return tr.waitRestart(ctx, d.Delay)
}

// waitRestart waits out a restart delay (persisted as restartAt); false
// means the runner is done (killed, or ctx ended: the delay goes on
// after an agent restart).
func (tr *TaskRunner) waitRestart(ctx context.Context, delay time.Duration) bool {
	select {
	case <-tr.clock.After(delay):
	case <-tr.killCh:
		tr.mu.Lock()
		tr.restartAt = time.Time{}
		tr.mu.Unlock()
		tr.setDead(false, &api.TaskEvent{Type: api.TaskKilled, DisplayMessage: "Task killed while waiting to restart"})
		return false
	case <-ctx.Done():
		return false
	}
	tr.mu.Lock()
	tr.state.Restarts++
	tr.state.LastRestart = tr.clock.Now()
	tr.restartAt = time.Time{}
	tr.mu.Unlock()
	return true
}

func terminatedEvent(res *drivers.ExitResult) *api.TaskEvent {
	ev := &api.TaskEvent{Type: api.TaskTerminated, ExitCode: res.ExitCode, Signal: res.Signal, OOMKilled: res.OOMKilled,
		Details: map[string]string{"exit_code": fmt.Sprint(res.ExitCode), "signal": fmt.Sprint(res.Signal), "oom_killed": fmt.Sprint(res.OOMKilled)}}
	ev.DisplayMessage = fmt.Sprintf("Exit Code: %d", res.ExitCode)
	if res.Signal != 0 {
		ev.DisplayMessage += fmt.Sprintf(", Signal: %d", res.Signal)
	}
	if res.OOMKilled {
		ev.DisplayMessage += ", OOM Killed"
	}
	if res.Err != nil {
		ev.DisplayMessage += ", Error: " + res.Err.Error()
		ev.DriverError = res.Err.Error()
	}
	return ev
}

var errSetup = errors.New("task setup failed")

// start sets the task up and starts it through the driver.
func (tr *TaskRunner) start(ctx context.Context) (*drivers.TaskHandle, <-chan *drivers.ExitResult, error) {
	tr.mu.Lock()
	alloc, task := tr.alloc, tr.task
	tr.mu.Unlock()
	tcfg, err := tr.setup(ctx, alloc, task)
	if err != nil {
		tr.emit(&api.TaskEvent{Type: api.TaskSetupFailure, DisplayMessage: err.Error(), FailsTask: true})
		return nil, nil, fmt.Errorf("%w: %w", errSetup, err)
	}
	h, err := tr.cfg.Driver.StartTask(ctx, tcfg)
	if err != nil {
		if ctx.Err() != nil {
			// Agent shutdown interrupted the start: not a task failure;
			// the next agent starts the task again.
			return nil, nil, fmt.Errorf("start task %q: %w", task.Name, ctx.Err())
		}
		if errors.Is(err, drivers.ErrInvalidConfig) {
			tr.emit(&api.TaskEvent{Type: api.TaskFailedValidation, DisplayMessage: err.Error(), FailsTask: true})
			return nil, nil, fmt.Errorf("%w: %w", errSetup, err)
		}
		tr.emit(&api.TaskEvent{Type: api.TaskDriverFailure, DisplayMessage: "Failed to start task: " + err.Error(), DriverError: err.Error()})
		return nil, nil, fmt.Errorf("start task %q: %w", task.Name, err)
	}
	waitCh, err := tr.cfg.Driver.WaitTask(ctx, h.Config.ID)
	if err != nil {
		tr.emit(&api.TaskEvent{Type: api.TaskDriverFailure, DisplayMessage: "Failed to wait for task: " + err.Error(), DriverError: err.Error()})
		tr.destroy(ctx, h)
		return nil, nil, fmt.Errorf("wait task %q: %w", task.Name, err)
	}
	tr.mu.Lock()
	tr.handle = h
	tr.state.State = api.TaskStateRunning
	now := tr.clock.Now()
	if tr.state.StartedAt.IsZero() || tr.started {
		tr.state.StartedAt = now
	}
	tr.state.FinishedAt = time.Time{}
	tr.started = true
	tr.appendEventLocked(&api.TaskEvent{Type: api.TaskStarted, DisplayMessage: "Task started by client"})
	tr.mu.Unlock()
	tr.startOnce.Do(func() { close(tr.startedCh) }) // before the notification the alloc runner reacts to
	tr.persistAndNotify()
	return h, waitCh, nil
}

// setup creates the task dirs, builds env and config, renders templates.
func (tr *TaskRunner) setup(ctx context.Context, alloc *api.Allocation, task *api.Task) (*drivers.TaskConfig, error) {
	taskDir := filepath.Join(tr.cfg.AllocDir, task.Name)
	host := HostDirs(tr.cfg.AllocDir, task.Name)
	for _, d := range []struct {
		p    string
		mode os.FileMode
	}{{taskDir, 0o755}, {host.TaskDir, 0o755}, {host.SecretsDir, 0o700}, {host.TmpDir, 0o1777}} {
		if err := os.MkdirAll(d.p, d.mode); err != nil {
			return nil, fmt.Errorf("create task dir: %w", err)
		}
		if err := os.Chmod(d.p, d.mode); err != nil {
			return nil, fmt.Errorf("create task dir: %w", err)
		}
	}
	dirs := host
	if tr.cfg.MountedDirs {
		dirs = MountedDirs()
	}
	res := taskResources(alloc, task)
	mpsDirs, mpsMounts, err := tr.mpsSetup(ctx, res)
	if err != nil {
		return nil, err
	}
	env := BuildEnv(EnvInput{Alloc: alloc, Task: task, Node: tr.cfg.Node, Region: tr.cfg.Region, Dirs: dirs, MPSPipeDirs: mpsDirs})
	if alloc.Job != nil {
		if err := WritePayload(taskDir, task.DispatchPayload, alloc.Job.Payload); err != nil {
			return nil, fmt.Errorf("dispatch payload: %w", err)
		}
	}
	if ids := exposedIdentities(task); len(ids) > 0 {
		if tr.cfg.Identities == nil {
			return nil, fmt.Errorf("workload identity: this client cannot sign identities")
		}
		resp, err := fetchIdentities(ctx, tr.clock, tr.cfg.Identities, alloc.ID, task.Name)
		if err != nil {
			return nil, fmt.Errorf("workload identity: %w", err)
		}
		idEnv, err := WriteIdentities(taskDir, ids, resp)
		if err != nil {
			return nil, fmt.Errorf("workload identity: %w", err)
		}
		maps.Copy(env, idEnv)
	}
	if len(task.Artifacts) > 0 {
		tr.emit(&api.TaskEvent{Type: api.TaskDownloadingArtifacts, DisplayMessage: fmt.Sprintf("Client is downloading %d artifact(s)", len(task.Artifacts))})
		if err := FetchArtifacts(ctx, task.Artifacts, taskDir, env, tr.cfg.Node); err != nil {
			return nil, err
		}
	}
	// Templates are rendered on the host, with the env the task will see.
	if tr.svc == nil && tr.cfg.Services != nil && len(task.Templates) > 0 {
		tr.svc = NewServiceCache(tr.cfg.Services, alloc.Namespace, tr.clock)
	}
	if tr.vars == nil && tr.cfg.Variables != nil && len(task.Templates) > 0 {
		tr.mu.Lock()
		tr.vars = NewVarCache(tr.cfg.Variables, alloc.Namespace, tr.varToken, tr.clock)
		tr.mu.Unlock()
	}
	extra, _, err := renderTemplates(ctx, task.Templates, taskDir, env, tr.cfg.Node, tr.svc, tr.vars)
	if err != nil {
		return nil, fmt.Errorf("render templates: %w", err)
	}
	if tr.svc != nil && len(tr.svc.Names()) > 0 || tr.vars != nil && len(tr.vars.Keys()) > 0 {
		tr.mu.Lock()
		tr.rendered = maps.Clone(env)
		tr.mu.Unlock()
		select {
		case tr.tmplCh <- struct{}{}:
		default:
		}
	}
	maps.Copy(env, extra)
	if !tr.started {
		tr.shareWarnings(res)
	}
	if !tr.started && len(task.Templates) > 0 {
		tr.emit(&api.TaskEvent{Type: api.TaskSetup, DisplayMessage: fmt.Sprintf("Rendered %d template(s)", len(task.Templates))})
	} else if !tr.started {
		tr.emit(&api.TaskEvent{Type: api.TaskSetup, DisplayMessage: "Building Task Directory"})
	}
	config := InterpolateConfig(task.Config, env, tr.cfg.Node)
	if err := tr.cfg.Driver.ValidateConfig(config); err != nil {
		return nil, fmt.Errorf("driver config: %w", err)
	}
	lc := task.LogConfig
	if lc == nil {
		lc = api.DefaultLogConfig()
	}
	var ports []api.AllocatedPort
	if alloc.AllocatedResources != nil {
		ports = alloc.AllocatedResources.Shared.Ports
	}
	cfg := &drivers.TaskConfig{
		ID: alloc.ID + "/" + task.Name + "/" + randHex(4), AllocID: alloc.ID, JobID: alloc.JobID, Group: alloc.TaskGroup,
		Name: task.Name, User: task.User, Config: config, Env: env, Resources: res, Ports: ports,
		AllocDir: tr.cfg.AllocDir, TaskDir: taskDir, LogDir: filepath.Join(tr.cfg.AllocDir, "alloc", "logs"),
		LogMaxFiles: lc.MaxFiles, LogMaxFileSizeMB: lc.MaxFileSizeMB,
		KillSignal: task.KillSignal, KillTimeout: task.KillTimeout, Logger: tr.log,
	}
	if cfg.Mounts, err = VolumeMounts(alloc, task, tr.cfg.Node, env); err != nil {
		return nil, err
	}
	cfg.Mounts = append(cfg.Mounts, mpsMounts...)
	if tr.cfg.NetNS != nil {
		if cfg.NetNS, err = tr.cfg.NetNS(ctx); err != nil {
			return nil, fmt.Errorf("bridge network: %w", err)
		}
	}
	if res != nil {
		cfg.MemoryMaxMB = res.Memory.MemoryMaxMB
		cfg.Devices = GPUDeviceSpecs(res, tr.cfg.Node, "")
	}
	if cfg.KillTimeout <= 0 {
		cfg.KillTimeout = api.DefaultKillTimeout
	}
	return cfg, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
