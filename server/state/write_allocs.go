package state

import (
	"encoding/json"
	"fmt"

	"github.com/drover/drover/api"
)

// UpsertAllocs stores allocations (scheduler/server writes).
func (s *StateStore) UpsertAllocs(index uint64, allocs []*api.Allocation) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertAllocs(allocs) })
}

// UpdateAllocsFromClient applies client status updates.
func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*api.Allocation) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateAllocsFromClient(allocs) })
}

// UpdateAllocsDesiredTransitions sets desired transitions and stores evals.
func (s *StateStore) UpdateAllocsDesiredTransitions(index uint64, transitions map[string]*api.DesiredTransition, evals []*api.Evaluation) error {
	return s.Write(index, func(t *Txn) error {
		if err := t.UpdateAllocsDesiredTransitions(transitions); err != nil {
			return err
		}
		return t.UpsertEvals(evals)
	})
}

// UpsertAllocs stores allocs (taking ownership). For an existing alloc the
// create index/time and the client-owned fields (TaskStates, and
// ClientStatus/ClientDescription unless the server marks it lost or
// unknown) are kept; a nil Job is taken from the existing alloc or else the
// current job. Job summaries follow client status changes.
func (t *Txn) UpsertAllocs(allocs []*api.Allocation) error {
	return t.upsertAllocs(allocs, nil)
}

func (t *Txn) upsertAllocs(allocs []*api.Allocation, job *api.Job) error {
	for _, a := range allocs {
		if err := t.upsertAlloc(a, job); err != nil {
			return err
		}
	}
	return nil
}

func (t *Txn) upsertAlloc(a *api.Allocation, job *api.Job) error {
	if a == nil || a.ID == "" || a.JobID == "" {
		return fmt.Errorf("upsert alloc: missing alloc or job ID: %w", api.ErrBadRequest)
	}
	a.Namespace = normNS(a.Namespace)
	existing, err := t.allocByID(a.ID)
	if err != nil {
		return err
	}
	var lostOn *api.Node // a's node when it is down (node_loss.go)
	if existing != nil {
		a.CreateIndex = existing.CreateIndex
		if a.CreateTime == 0 {
			a.CreateTime = existing.CreateTime
		}
		a.TaskStates = existing.TaskStates
		a.GPUUsage = existing.GPUUsage
		if a.ClientStatus != api.AllocClientStatusLost && a.ClientStatus != api.AllocClientStatusUnknown {
			a.ClientStatus = existing.ClientStatus
			a.ClientDescription = existing.ClientDescription
		}
		if ds := existing.DeploymentStatus; ds != nil && ds.Healthy != nil && a.DeploymentID == existing.DeploymentID &&
			(a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil) {
			a.DeploymentStatus = ds // the leader's health verdict outlives a plan's stale copy
		}
		if a.Job == nil && job == nil {
			a.Job = existing.Job // a plan's Job (in-place update) wins below
		}
	} else {
		a.CreateIndex = t.index
		if a.ClientStatus == "" {
			a.ClientStatus = api.AllocClientStatusPending
		}
		if lostOn, err = t.placedOnDownNode(a); err != nil {
			return err
		}
	}
	if a.Job == nil {
		a.Job = job
	}
	if a.Job == nil {
		if a.Job, err = txnFirst[api.Job](t, TableJobs, "id", a.Namespace, a.JobID); err != nil {
			return err
		}
	}
	a.ModifyIndex = t.index
	a.AllocModifyIndex = t.index
	t.share.alloc(a)
	if err := t.putAlloc(existing, a, "AllocationUpdated"); err != nil {
		return err
	}
	if lostOn != nil {
		return t.lossEval(lostOn, a, a.ModifyTime)
	}
	return nil
}

// putAlloc inserts a (new version of an) alloc, maintaining the summary,
// the job status hint and events.
func (t *Txn) putAlloc(old, a *api.Allocation, eventType string) error {
	if err := t.insert(TableAllocs, a); err != nil {
		return err
	}
	t.recordAlloc(old, a)
	t.touchNodeAllocs(old, a)
	if err := t.allocSummary(old, a); err != nil {
		return err
	}
	t.countQueue(old, -1)
	t.countQueue(a, 1)
	if a.ClientTerminalStatus() && (old == nil || !old.ClientTerminalStatus()) {
		if err := t.deleteAllocServices(a.ID); err != nil {
			return err
		}
	}
	if err := t.trackUsage(old, a); err != nil {
		return err
	}
	touch := t.touchJob(a.Namespace, a.JobID)
	if !a.TerminalStatus() {
		touch.running = true
	}
	t.emit(allocEvent(eventType, a))
	return nil
}

// allocPayload is an alloc in an event's payload. It encodes as the alloc
// without its Job (the stream carries jobs in their own events) and holds
// the stored alloc, which no write changes (each writes a copy): a copy
// without the job at every alloc write, for events mostly never read,
// stood out in BenchmarkC1M's allocation profile (DROVER_BENCH_PPROF).
type allocPayload struct{ *api.Allocation }

// MarshalJSON encodes the alloc less its Job.
func (p allocPayload) MarshalJSON() ([]byte, error) {
	c := *p.Allocation
	c.Job = nil
	return json.Marshal(&c)
}

func allocEvent(eventType string, a *api.Allocation) api.Event {
	return api.Event{Topic: api.TopicAllocation, Type: eventType, Key: a.ID, Namespace: a.Namespace,
		FilterKeys: filterKeys(a.JobID, a.DeploymentID), Payload: map[string]any{"Allocation": allocPayload{a}}}
}

func filterKeys(keys ...string) []string {
	out := keys[:0:0]
	for _, k := range keys {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// allocSummary moves an alloc's count between client statuses.
func (t *Txn) allocSummary(old, a *api.Allocation) error {
	if old != nil && old.ClientStatus == a.ClientStatus && old.TaskGroup == a.TaskGroup {
		return nil
	}
	sum, err := t.summary(a.Namespace, a.JobID)
	if err != nil || sum == nil {
		return err
	}
	tg := sum.Summary[a.TaskGroup]
	if old == nil {
		if tg.Queued > 0 {
			tg.Queued--
		}
	} else {
		ot := tg
		if old.TaskGroup != a.TaskGroup {
			ot = sum.Summary[old.TaskGroup]
		}
		countStatus(&ot, old.ClientStatus, -1)
		if old.TaskGroup != a.TaskGroup {
			sum.Summary[old.TaskGroup] = ot
		} else {
			tg = ot
		}
	}
	countStatus(&tg, a.ClientStatus, 1)
	sum.Summary[a.TaskGroup] = tg
	return nil
}

func countStatus(s *api.TaskGroupSummary, status string, d int) {
	var p *int
	switch status {
	case api.AllocClientStatusPending:
		p = &s.Starting
	case api.AllocClientStatusRunning:
		p = &s.Running
	case api.AllocClientStatusComplete:
		p = &s.Complete
	case api.AllocClientStatusFailed:
		p = &s.Failed
	case api.AllocClientStatusLost:
		p = &s.Lost
	case api.AllocClientStatusUnknown:
		p = &s.Unknown
	default:
		return
	}
	*p += d
	if *p < 0 {
		*p = 0
	}
}

// UpdateAllocsFromClient copies only the client-owned fields (ClientStatus,
// ClientDescription, TaskStates, DeploymentStatus, and ModifyTime when set)
// of each update onto a copy of the stored alloc. Unknown IDs (already
// garbage collected) are skipped. A DeploymentStatus without a health
// verdict does not replace a stored verdict.
func (t *Txn) UpdateAllocsFromClient(allocs []*api.Allocation) error {
	for _, u := range allocs {
		if u == nil {
			continue
		}
		old, err := t.allocByID(u.ID)
		if err != nil {
			return err
		}
		if old == nil {
			continue
		}
		c := *old
		c.ClientStatus = u.ClientStatus
		c.ClientDescription = u.ClientDescription
		c.TaskStates = u.TaskStates
		if u.GPUUsage != nil {
			c.GPUUsage = u.GPUUsage // sent only when it changes (api.GPUUsage)
		}
		if u.DeploymentStatus != nil && (old.DeploymentStatus == nil || old.DeploymentStatus.Healthy == nil || u.DeploymentStatus.Healthy != nil) {
			ds := *u.DeploymentStatus
			ds.ModifyIndex = t.index
			c.DeploymentStatus = &ds
		}
		if u.ModifyTime != 0 {
			c.ModifyTime = u.ModifyTime
		}
		c.ModifyIndex = t.index
		t.share.client(&c)
		if err := t.putAlloc(old, &c, "AllocationUpdated"); err != nil {
			return err
		}
	}
	return nil
}

// UpdateAllocsDesiredTransitions merges each transition (set fields only)
// into the alloc's DesiredTransition. Unknown IDs are skipped.
func (t *Txn) UpdateAllocsDesiredTransitions(transitions map[string]*api.DesiredTransition) error {
	for id, tr := range transitions {
		if tr == nil {
			continue
		}
		old, err := t.allocByID(id)
		if err != nil {
			return err
		}
		if old == nil {
			continue
		}
		c := *old
		mergeTransition(&c.DesiredTransition, tr)
		c.ModifyIndex = t.index
		c.AllocModifyIndex = t.index
		if err := t.putAlloc(old, &c, "AllocationUpdateDesiredStatus"); err != nil {
			return err
		}
	}
	return nil
}
