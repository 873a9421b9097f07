package state

import (
	"github.com/drover/drover/api"
)

// ApplyPlanResultsRequest is what the plan applier commits in one Raft
// entry (the FSM's ApplyPlanResults body). To keep log entries small, set
// Job once and leave the allocations' Job nil: the store attaches it.
type ApplyPlanResultsRequest struct {
	// Job of the plan; attached to allocs whose Job is nil.
	Job *api.Job `json:"Job,omitempty"`
	// AllocsPlaced are new or (in-place / destructively) updated allocs.
	AllocsPlaced []*api.Allocation `json:"AllocsPlaced,omitempty"`
	// AllocsStopped: the stored alloc gets DesiredStatus (stop if empty),
	// DesiredDescription, FollowupEvalID, ModifyTime and a lost/unknown
	// ClientStatus from these; other fields are ignored.
	AllocsStopped []*api.Allocation `json:"AllocsStopped,omitempty"`
	// AllocsPreempted: the stored alloc is evicted, with
	// DesiredDescription, PreemptedByAllocation and ModifyTime from these.
	AllocsPreempted []*api.Allocation `json:"AllocsPreempted,omitempty"`
	// Deployment to create or update, and status updates of others.
	Deployment        *api.Deployment               `json:"Deployment,omitempty"`
	DeploymentUpdates []*api.DeploymentStatusUpdate `json:"DeploymentUpdates,omitempty"`
	// Evals to create or update with the plan (the evaluated eval,
	// evals for preempted jobs, ...).
	Evals []*api.Evaluation `json:"Evals,omitempty"`
	// EvalID is the evaluation the plan came from.
	EvalID string `json:"EvalID,omitempty"`
}

// Empty reports whether the request changes no alloc and no deployment
// (a plan the applier answers without a Raft entry).
func (r *ApplyPlanResultsRequest) Empty() bool {
	return len(r.AllocsPlaced)+len(r.AllocsStopped)+len(r.AllocsPreempted) == 0 &&
		r.Deployment == nil && len(r.DeploymentUpdates) == 0
}

// UpsertPlanResults commits a plan result atomically.
func (s *StateStore) UpsertPlanResults(index uint64, res *ApplyPlanResultsRequest) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertPlanResults(res) })
}

// UpsertPlanResults applies deployment changes, stops, preemptions and
// placements (in that order) and the evals of a plan result.
func (t *Txn) UpsertPlanResults(res *ApplyPlanResultsRequest) error {
	if res == nil {
		return nil
	}
	if res.Deployment != nil {
		old, err := txnFirst[api.Deployment](t, TableDeployments, "id", res.Deployment.ID)
		if err != nil {
			return err
		}
		keepLeaderDeploymentFields(old, res.Deployment)
		if err := t.UpsertDeployment(res.Deployment); err != nil {
			return err
		}
	}
	for _, u := range res.DeploymentUpdates {
		if u == nil {
			continue
		}
		if err := t.UpdateDeploymentStatus(u); err != nil {
			return err
		}
	}
	for _, s := range res.AllocsStopped {
		if err := t.stopAlloc(s, false); err != nil {
			return err
		}
	}
	for _, p := range res.AllocsPreempted {
		if err := t.stopAlloc(p, true); err != nil {
			return err
		}
	}
	if err := t.upsertAllocs(res.AllocsPlaced, res.Job); err != nil {
		return err
	}
	if res.Deployment != nil {
		if err := t.mergePlanDeployment(res.Deployment.ID); err != nil {
			return err
		}
	}
	return t.UpsertEvals(res.Evals)
}

func (t *Txn) stopAlloc(u *api.Allocation, preempt bool) error {
	if u == nil {
		return nil
	}
	old, err := t.allocByID(u.ID)
	if err != nil || old == nil {
		return err // an alloc already collected needs no stop
	}
	c := *old
	c.DesiredDescription = u.DesiredDescription
	if preempt {
		c.DesiredStatus = api.AllocDesiredStatusEvict
		c.PreemptedByAllocation = u.PreemptedByAllocation
	} else {
		c.DesiredStatus = u.DesiredStatus
		if c.DesiredStatus == "" || c.DesiredStatus == api.AllocDesiredStatusRun {
			c.DesiredStatus = api.AllocDesiredStatusStop
		}
		if u.ClientStatus == api.AllocClientStatusLost || u.ClientStatus == api.AllocClientStatusUnknown {
			c.ClientStatus = u.ClientStatus
		}
		if u.FollowupEvalID != "" {
			c.FollowupEvalID = u.FollowupEvalID
		}
	}
	if u.ModifyTime != 0 {
		c.ModifyTime = u.ModifyTime
	}
	c.ModifyIndex = t.index
	c.AllocModifyIndex = t.index
	return t.putAlloc(old, &c, "PlanResult")
}
