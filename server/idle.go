package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// Idle-GPU reclaim. A client sends an alloc's GPU usage (api.GPUUsage)
// only when it turns idle or busy or moves by a few points, so the
// alloc's IdleSince is the server's "GPU idle since" and costs a Raft
// write per change, not per sample. An alloc idle for its idle_timeout
// (group, job or queue) is flagged (job status, the UI: computed from
// IdleSince when read); where its queue's idle_action is stop, the
// leader's idle reclaimer stops it, and where it is preempt the
// scheduler's preemption may evict it for pending GPU work
// (scheduler/preempt.go). Nothing here writes unless it stops allocs.

// idleCheckInterval is how often the leader looks for allocs to stop.
const idleCheckInterval = time.Minute

// idleAlloc is a live alloc idle past its idle_timeout.
type idleAlloc struct {
	alloc   *api.Allocation
	timeout time.Duration
	idleFor time.Duration
	action  string // the queue's idle_action ("" = flag)
}

// idleAllocs lists the live allocs of snap idle past their idle_timeout
// at now.
func idleAllocs(snap *state.Snapshot, now time.Time) ([]idleAlloc, error) {
	queues, err := snap.Queues(nil, "")
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	qs := make(map[string]*api.Queue, len(queues))
	for _, q := range queues {
		qs[q.Name] = q
	}
	allocs, err := snap.Allocs(nil, state.AllNamespaces, "")
	if err != nil {
		return nil, fmt.Errorf("allocs: %w", err)
	}
	var out []idleAlloc
	for _, a := range allocs {
		if a.GPUUsage == nil || a.GPUUsage.IdleSince == 0 || a.TerminalStatus() {
			continue
		}
		job := a.Job
		if job == nil {
			if job, err = snap.JobByID(nil, a.Namespace, a.JobID); err != nil {
				return nil, fmt.Errorf("job of alloc %s: %w", a.ID, err)
			}
		}
		if job == nil {
			continue
		}
		q := qs[api.JobQueue(job)]
		timeout := api.IdleTimeout(job, job.LookupTaskGroup(a.TaskGroup), q)
		d, idle := a.GPUIdle(timeout, now)
		if !idle {
			continue
		}
		ia := idleAlloc{alloc: a, timeout: timeout, idleFor: d}
		if q != nil {
			ia.action = q.IdleAction
		}
		out = append(out, ia)
	}
	return out, nil
}

// idleReclaimer is the leader duty that stops allocs idle past their
// idle_timeout in queues whose idle_action is stop: one eval of trigger
// api.EvalTriggerIdleReclaim per job.
type idleReclaimer struct {
	serverCore
	// pending are the allocs an eval already asked to stop (so a round
	// does not ask again while the eval waits).
	pending map[string]bool
}

func (r *idleReclaimer) Run(ctx context.Context) {
	r.pending = map[string]bool{}
	for {
		tick := make(chan struct{})
		t := r.clock.AfterFunc(idleCheckInterval, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		if err := r.round(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("idle gpu reclaim", "err", err)
		}
	}
}

func (r *idleReclaimer) round(ctx context.Context) error {
	snap, err := r.state().Snapshot()
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	idle, err := idleAllocs(snap, r.clock.Now())
	if err != nil {
		return err
	}
	// Forget the asks for allocs no longer idle (stopped, or busy again:
	// the eval's pass skipped them), so a later idle spell asks again.
	still := map[string]bool{}
	for _, ia := range idle {
		if r.pending[ia.alloc.ID] {
			still[ia.alloc.ID] = true
		}
	}
	r.pending = still
	byJob := map[string]*api.Evaluation{}
	var evals []*api.Evaluation
	for _, ia := range idle {
		a := ia.alloc
		if ia.action != api.IdleActionStop || r.pending[a.ID] {
			continue
		}
		k := a.Namespace + "/" + a.JobID
		e := byJob[k]
		if e == nil {
			job, err := snap.JobByID(nil, a.Namespace, a.JobID)
			if err != nil || job == nil {
				continue
			}
			e = r.newJobEval(job, api.EvalTriggerIdleReclaim)
			e.JobModifyIndex = job.JobModifyIndex
			byJob[k] = e
			evals = append(evals, e)
		}
		e.StopAllocs = append(e.StopAllocs, a.ID)
		r.pending[a.ID] = true
		r.log.Info("stopping an alloc holding idle GPUs", "alloc", a.ID, "job", a.JobID, "idle_for", ia.idleFor, "idle_timeout", ia.timeout)
	}
	if len(evals) == 0 {
		return nil
	}
	if _, err := r.applyEvals(ctx, evals); err != nil {
		for _, e := range evals {
			for _, id := range e.StopAllocs {
				delete(r.pending, id)
			}
		}
		return fmt.Errorf("create idle reclaim evals: %w", err)
	}
	return nil
}

// scheduleIdleStop is the pass of an idle reclaim eval: a plan stopping
// its allocs that are still live and still idle (a client may have
// reported them busy since), with the reason api.IdleReclaimDescription.
func scheduleIdleStop(st scheduler.State, e *api.Evaluation, now time.Time) (*scheduler.Result, error) {
	out := e.Copy()
	out.Status = api.EvalStatusComplete
	plan := &api.Plan{}
	ids := slices.Clone(e.StopAllocs)
	slices.Sort(ids)
	queues, err := st.Queues()
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	stopped := 0
	for _, id := range ids {
		a, err := st.AllocByID(id)
		if err != nil {
			return nil, fmt.Errorf("alloc %s: %w", id, err)
		}
		if a == nil || a.TerminalStatus() || a.Job == nil {
			continue
		}
		var q *api.Queue
		for _, x := range queues {
			if x.Name == api.JobQueue(a.Job) {
				q = x
			}
		}
		if _, idle := a.GPUIdle(api.IdleTimeout(a.Job, a.Job.LookupTaskGroup(a.TaskGroup), q), now); !idle {
			continue
		}
		plan.AppendStoppedAlloc(a, api.IdleReclaimDescription, "")
		stopped++
	}
	if stopped > 0 {
		job, err := st.JobByID(e.Namespace, e.JobID)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", e.JobID, err)
		}
		plan.Job = job
	}
	out.StatusDescription = fmt.Sprintf("idle GPU reclaim: %d of %d allocs stopped", stopped, len(ids))
	return &scheduler.Result{Eval: out, Plan: plan}, nil
}
