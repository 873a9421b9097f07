package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/broker"
	"github.com/drover/drover/server/scheduler"
)

// schedulerTypes are the eval types the workers take.
var schedulerTypes = []string{api.JobTypeService, api.JobTypeBatch, api.JobTypeSystem, api.JobTypeSysBatch}

// maxPlanAttempts bounds how often a worker re-runs the scheduler after
// the applier rejected nodes of its plan.
const maxPlanAttempts = 5

// snapshotWait bounds the wait for the state to reach an eval's index.
const snapshotWait = 10 * time.Second

// evalSource hands out evals to schedule (the broker).
type evalSource interface {
	Dequeue(ctx context.Context, types []string, timeout time.Duration) (*api.Evaluation, string, error)
	Ack(evalID, token string) error
	Nack(evalID, token string) error
	// OutstandingReset restarts a dequeued eval's nack timer.
	OutstandingReset(evalID, token string) error
}

// planSubmitter queues a plan for the plan applier.
type planSubmitter interface {
	Enqueue(p *api.Plan) (*broker.PendingPlan, error)
}

// blockedView is the part of the blocked tracker a worker consults.
type blockedView interface {
	Blocked(namespace, jobID string) *api.Evaluation
	Untrack(namespace, jobID string) *api.Evaluation
}

// worker is one scheduler worker, a leader duty: dequeue, schedule,
// submit, ack.
type worker struct {
	serverCore
	evals   evalSource
	plans   planSubmitter
	blocked blockedView
	// obsolete cancels a blocked eval through Raft (the eval reaper).
	obsolete func(*api.Evaluation)
	// fair computes the queues' fair shares (nil: none, as in tests that
	// build a bare worker).
	fair *fairShares
	// maxGroupCount is Config.JobMaxGroupCount (0: the scheduler's
	// default).
	maxGroupCount int
	// workload is the expected GPU asks (workload.go; nil: none).
	workload *scheduler.Workload
	// usage keeps nodes' usage between passes (nil: none).
	usage *scheduler.UsageCache
}

// Run schedules until ctx ends.
func (w *worker) Run(ctx context.Context) {
	log := w.log
	for {
		dctx, stop, ok := w.unpaused(ctx)
		if !ok {
			return
		}
		e, tok, err := w.evals.Dequeue(dctx, schedulerTypes, 0)
		stop()
		if err != nil {
			if ctx.Err() == nil && dctx.Err() != nil {
				continue // the scheduler configuration changed: paused?
			}
			return // leadership revoked or shutting down
		}
		if !w.holdWhilePaused(ctx, e, tok) {
			if ctx.Err() != nil {
				return
			}
			continue // the eval is no longer ours: the broker hands it out again
		}
		if err := w.processEval(ctx, e, tok); err != nil {
			log.Warn("eval failed, nacking", "eval", e.ID, "job", e.JobID, "err", err)
			if nerr := w.evals.Nack(e.ID, tok); nerr != nil && ctx.Err() == nil {
				log.Warn("nack", "eval", e.ID, "err", nerr)
			}
			continue
		}
		if err := w.evals.Ack(e.ID, tok); err != nil && ctx.Err() == nil {
			log.Warn("ack", "eval", e.ID, "err", err)
		}
	}
}

// unpaused returns once the scheduler configuration does not pause the
// eval broker (PauseEvalBroker: workers take no new evals, as Nomad;
// evals queue up), with a context that is ctx also cancelled when the
// configuration changes next (so a worker waiting for an eval sees a
// pause); false when ctx ended. It waits on the configuration's watch,
// not by polling.
func (w *worker) unpaused(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		c, err := w.state().SchedulerConfig(ws) // an error leaves only ctx and the abandon channel
		ws.Add(w.state().AbandonCh())
		if err != nil || c == nil || !c.PauseEvalBroker {
			dctx, cancel := context.WithCancel(ctx)
			go func() {
				_ = ws.WatchCtx(dctx)
				cancel()
			}()
			return dctx, cancel, true
		}
		if err := ws.WatchCtx(ctx); err != nil {
			break
		}
	}
	return nil, nil, false
}

// pausedHoldReset is how often a worker holding an eval while the broker
// is paused restarts its nack timer (the broker's is 60 s by default).
const pausedHoldReset = 10 * time.Second

// holdWhilePaused keeps an eval dequeued just as the broker was paused
// until the pause ends (a nack would count as a failed delivery), keeping
// its nack timer from firing; false when ctx ended or the eval is no
// longer this worker's.
func (w *worker) holdWhilePaused(ctx context.Context, e *api.Evaluation, tok string) bool {
	for {
		ws := memdb.NewWatchSet()
		c, err := w.state().SchedulerConfig(ws)
		if err != nil || c == nil || !c.PauseEvalBroker {
			return true
		}
		ws.Add(w.state().AbandonCh())
		wctx, cancel := context.WithTimeout(ctx, pausedHoldReset)
		_ = ws.WatchCtx(wctx)
		cancel()
		if ctx.Err() != nil {
			return false
		}
		if err := w.evals.OutstandingReset(e.ID, tok); err != nil {
			w.log.Warn("hold eval while paused", "eval", e.ID, "err", err)
			return false
		}
	}
}

// processEval runs the scheduler on a snapshot at least as new as the
// eval, submits the plan (retrying on fresh state when nodes were
// rejected) and commits the eval's outcome.
func (w *worker) processEval(ctx context.Context, e *api.Evaluation, token string) error {
	st := w.state()
	wctx, cancel := context.WithTimeout(ctx, snapshotWait)
	snap, err := st.SnapshotMinIndex(wctx, e.ModifyIndex)
	cancel()
	if err != nil {
		return fmt.Errorf("snapshot at %d: %w", e.ModifyIndex, err)
	}
	if cur, err := snap.EvalByID(nil, e.ID); err != nil {
		return fmt.Errorf("read eval %s: %w", e.ID, err)
	} else if cur == nil {
		// Deleted (drover eval delete, with the broker paused) while it
		// waited here: done, never written back.
		w.log.Info("skipping a deleted eval", "eval", e.ID, "job", e.JobID)
		return nil
	}
	if w.workload != nil && submitted(e.TriggeredBy) {
		job, err := snap.JobByID(nil, e.Namespace, e.JobID)
		if err != nil {
			return fmt.Errorf("read job for the workload: %w", err)
		}
		w.workload.Observe(job)
	}
	var res *scheduler.Result
	exhausted := false
	for attempt := 1; ; attempt++ {
		pre, algorithm := schedulerOptions(snap)
		now := w.clock.Now()
		view := snap.Scheduler()
		opts := scheduler.Options{Now: now, Logger: w.log.With("component", "scheduler", "eval", e.ID),
			Preemption: &pre, Algorithm: algorithm, MaxGroupCount: w.maxGroupCount, Usage: w.usage}
		if w.workload != nil {
			opts.Workload = w.workload.Shapes()
		}
		if w.fair != nil {
			// Reclaim and borrowing follow the queues' fair shares at this
			// snapshot (fair.go; nil without queues).
			job, err := view.JobByID(e.Namespace, e.JobID)
			if err != nil {
				return fmt.Errorf("read job for fair shares: %w", err)
			}
			if opts.FairShare, err = w.fair.forJob(view, job, now); err != nil {
				return fmt.Errorf("fair shares: %w", err)
			}
		}
		// ctx ends with leadership or the server: the pass stops at its
		// next placement.
		switch e.TriggeredBy {
		case api.EvalTriggerDefrag:
			res, err = scheduleDefrag(ctx, view, e, opts) // defrag.go: the moves only
		case api.EvalTriggerIdleReclaim:
			res, err = scheduleIdleStop(view, e, now) // idle.go: the stops only
		default:
			res, err = scheduler.ScheduleContext(ctx, view, e, opts)
		}
		if err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
		plan := res.Plan
		if plan == nil || plan.IsNoOp() {
			break
		}
		plan.EvalID, plan.EvalToken, plan.Priority = e.ID, token, e.Priority
		plan.SnapshotIndex = snap.LatestIndex()
		rejected, refresh, err := w.submitPlan(ctx, plan)
		if err != nil {
			return err
		}
		if len(rejected) == 0 {
			break
		}
		if attempt >= maxPlanAttempts {
			exhausted = true
			break
		}
		wctx, cancel := context.WithTimeout(ctx, snapshotWait)
		snap, err = st.SnapshotMinIndex(wctx, refresh)
		cancel()
		if err != nil {
			return fmt.Errorf("refresh snapshot at %d: %w", refresh, err)
		}
	}
	return w.commitEvalResult(ctx, e, res, snap.LatestIndex(), exhausted)
}

// commitEvalResult writes the eval's new status plus any blocked and
// follow-up evals, then hands the new ones to the broker/tracker.
func (w *worker) commitEvalResult(ctx context.Context, e *api.Evaluation, res *scheduler.Result, snapIndex uint64, exhausted bool) error {
	now := w.clock.Now()
	out := res.Eval
	if out == nil {
		out = e.Copy()
		out.Status = api.EvalStatusComplete
	}
	out.ModifyTime = now.UnixNano()
	if out.SnapshotIndex == 0 {
		out.SnapshotIndex = snapIndex
	}
	evals := []*api.Evaluation{out}
	var created []string
	newEval := func(n *api.Evaluation) {
		if n.ID == "" {
			n.ID = newID()
		}
		if n.CreateTime == 0 {
			n.CreateTime = now.UnixNano()
		}
		n.ModifyTime = now.UnixNano()
		evals = append(evals, n)
		created = append(created, n.ID)
	}
	if res.Blocked != nil {
		b := res.Blocked
		if b.SnapshotIndex == 0 {
			b.SnapshotIndex = snapIndex
		}
		newEval(b)
	}
	for _, f := range res.FollowUps {
		newEval(f)
	}
	if exhausted {
		f := &api.Evaluation{
			ID: newID(), Namespace: e.Namespace, Priority: e.Priority, Type: e.Type, JobID: e.JobID,
			TriggeredBy: api.EvalTriggerMaxPlans, Status: api.EvalStatusPending, PreviousEval: e.ID,
			WaitUntil: now.Add(planRetryBackoff),
		}
		out.Status = api.EvalStatusFailed
		out.StatusDescription = fmt.Sprintf("plan rejected %d times; follow-up %s", maxPlanAttempts, f.ID)
		out.NextEval = f.ID
		newEval(f)
	}
	if _, err := w.applyEvals(ctx, evals); err != nil {
		return fmt.Errorf("update evals: %w", err)
	}
	w.dropObsoleteBlocked(e, out, res.Blocked != nil)
	return nil
}

// dropObsoleteBlocked cancels an older blocked eval of the job once a
// service or batch eval placed everything: the scheduler reconciles the
// whole job, so the blocked eval has nothing left to place. (Evals of one
// job are serialized by the broker, so nothing else changes the job's
// tracked eval meanwhile.)
func (w *worker) dropObsoleteBlocked(e, out *api.Evaluation, blocked bool) {
	if blocked || out.Status != api.EvalStatusComplete || (e.Type != api.JobTypeService && e.Type != api.JobTypeBatch) {
		return
	}
	if e.TriggeredBy == api.EvalTriggerDefrag || e.TriggeredBy == api.EvalTriggerIdleReclaim {
		return // these passes move or stop allocs only: the job's pending work still waits
	}
	old := w.blocked.Blocked(e.Namespace, e.JobID)
	// A blocked eval created in the same entry as e (by the pass that
	// also made e as a follow-up: a gang's timeout) is older than e's run.
	if old == nil || old.ID == e.ID || old.CreateIndex > e.CreateIndex {
		return
	}
	if got := w.blocked.Untrack(e.Namespace, e.JobID); got != nil {
		w.obsolete(got)
	}
}

// errStaleToken rejects a plan whose eval is no longer held by the
// submitting worker (nack timeout, leadership change).
var errStaleToken = errors.New("evaluation token is no longer outstanding")
