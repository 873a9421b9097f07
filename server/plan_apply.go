package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/broker"
	"github.com/drover/drover/server/state"
)

// runPlanApplier is the leader's single plan applier: for each plan, in
// priority order, it re-checks every node against the latest state, drops
// the nodes that no longer fit (everything when the plan is AllAtOnce) and
// commits the rest through Raft. Plans are applied strictly one after the
// other, so each is verified against a state that includes its
// predecessor's commit.
func (s *Server) runPlanApplier(ctx context.Context) {
	log := s.log.With("component", "plan_applier")
	for {
		p, err := s.planQueue.Dequeue(ctx)
		if err != nil {
			return
		}
		res, err := s.applyOnePlan(ctx, p)
		if err != nil {
			log.Warn("plan apply failed", "eval", p.Plan.EvalID, "err", err)
		}
		p.Respond(res, err)
	}
}

func (s *Server) applyOnePlan(ctx context.Context, p *broker.PendingPlan) (*api.PlanResult, error) {
	plan := p.Plan
	if tok, ok := s.broker.Outstanding(plan.EvalID); !ok || tok != plan.EvalToken {
		return nil, fmt.Errorf("plan of eval %s: %w", plan.EvalID, errStaleToken)
	}
	if h := s.planHook.Load(); h != nil {
		(*h)(plan)
	}
	start := s.clock.Now()
	snap, err := s.State().Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	res, req, err := evaluatePlan(snap, plan)
	if err != nil {
		return nil, err
	}
	if len(req.AllocsPlaced)+len(req.AllocsStopped)+len(req.AllocsPreempted) == 0 &&
		req.Deployment == nil && len(req.DeploymentUpdates) == 0 {
		return res, nil
	}
	now := s.clock.Now().UnixNano()
	for _, a := range req.AllocsPlaced {
		if a.CreateTime == 0 {
			a.CreateTime = now
		}
		a.ModifyTime = now
	}
	for _, a := range req.AllocsStopped {
		a.ModifyTime = now
	}
	for _, a := range req.AllocsPreempted {
		a.ModifyTime = now
	}
	idx, err := s.applyPlanResults(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("commit plan of eval %s: %w", plan.EvalID, err)
	}
	res.AllocIndex = idx
	if res.RefreshIndex != 0 && idx > res.RefreshIndex {
		res.RefreshIndex = idx
	}
	s.metrics.planApply.Observe(s.clock.Now().Sub(start).Seconds())
	s.metrics.placements.Add(float64(len(req.AllocsPlaced)))
	// Stops and preemptions freed capacity: wake evals that may now fit.
	freed := map[string]bool{}
	for n := range res.NodeUpdate {
		freed[n] = true
	}
	for n := range res.NodePreemptions {
		freed[n] = true
	}
	for id := range freed {
		if node, err := snap.NodeByID(nil, id); err == nil && node != nil {
			s.blocked.Unblock(node.ComputedClass, idx)
		}
	}
	return res, nil
}

// evaluatePlan decides which nodes of plan fit on snap and returns the
// result for the worker and the request to commit.
func evaluatePlan(snap *state.Snapshot, plan *api.Plan) (*api.PlanResult, *state.ApplyPlanResultsRequest, error) {
	nodes := map[string]bool{}
	for id := range plan.NodeAllocation {
		nodes[id] = true
	}
	for id := range plan.NodeUpdate {
		nodes[id] = true
	}
	for id := range plan.NodePreemptions {
		nodes[id] = true
	}
	ids := make([]string, 0, len(nodes))
	for id := range nodes {
		ids = append(ids, id)
	}
	sort.Strings(ids)

	res := &api.PlanResult{}
	var rejected []string
	accepted := make([]string, 0, len(ids))
	for _, id := range ids {
		ok, _, err := evaluateNodePlan(snap, plan, id)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			accepted = append(accepted, id)
		} else {
			rejected = append(rejected, id)
		}
	}
	if len(rejected) > 0 {
		res.RejectedNodes = rejected
		res.RefreshIndex = snap.LatestIndex()
		if plan.AllAtOnce {
			return res, &state.ApplyPlanResultsRequest{EvalID: plan.EvalID, Job: plan.Job}, nil
		}
	}
	req := &state.ApplyPlanResultsRequest{EvalID: plan.EvalID, Job: plan.Job,
		Deployment: plan.Deployment, DeploymentUpdates: plan.DeploymentUpdates}
	res.Deployment, res.DeploymentUpdates = plan.Deployment, plan.DeploymentUpdates
	for _, id := range accepted {
		if as := plan.NodeAllocation[id]; len(as) > 0 {
			if res.NodeAllocation == nil {
				res.NodeAllocation = map[string][]*api.Allocation{}
			}
			res.NodeAllocation[id] = as
			req.AllocsPlaced = appendStripped(req.AllocsPlaced, as, plan.Job)
		}
		if as := plan.NodeUpdate[id]; len(as) > 0 {
			if res.NodeUpdate == nil {
				res.NodeUpdate = map[string][]*api.Allocation{}
			}
			res.NodeUpdate[id] = as
			req.AllocsStopped = appendStripped(req.AllocsStopped, as, nil)
		}
		if as := plan.NodePreemptions[id]; len(as) > 0 {
			if res.NodePreemptions == nil {
				res.NodePreemptions = map[string][]*api.Allocation{}
			}
			res.NodePreemptions[id] = as
			req.AllocsPreempted = appendStripped(req.AllocsPreempted, as, nil)
		}
	}
	return res, req, nil
}

// appendStripped appends shallow copies of allocs without the Job the
// state store re-attaches (the plan's job for placements; the stored
// alloc's for stops and preemptions), so a 1,000-alloc plan does not carry
// 1,000 copies of the job through Raft.
func appendStripped(dst, allocs []*api.Allocation, planJob *api.Job) []*api.Allocation {
	for _, a := range allocs {
		if a.Job != nil && (planJob == nil || a.Job == planJob ||
			(a.Job.ID == planJob.ID && a.Job.Namespace == planJob.Namespace && a.Job.Version == planJob.Version &&
				a.Job.JobModifyIndex == planJob.JobModifyIndex)) {
			c := *a
			c.Job = nil
			a = &c
		}
		dst = append(dst, a)
	}
	return dst
}

// evaluateNodePlan checks one node: a node that only loses allocs always
// passes; one that gains allocs must exist, be ready, not draining,
// eligible, and fit everything that stays plus everything placed.
func evaluateNodePlan(snap *state.Snapshot, plan *api.Plan, nodeID string) (bool, string, error) {
	placed := plan.NodeAllocation[nodeID]
	if len(placed) == 0 {
		return true, "", nil
	}
	node, err := snap.NodeByID(nil, nodeID)
	if err != nil {
		return false, "", fmt.Errorf("node %s: %w", nodeID, err)
	}
	switch {
	case node == nil:
		return false, "node does not exist", nil
	case node.Status != api.NodeStatusReady:
		return false, "node is not ready", nil
	case node.Drain:
		return false, "node is draining", nil
	case node.SchedulingEligibility == api.NodeSchedulingIneligible:
		return false, "node is not eligible", nil
	}
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return false, "", fmt.Errorf("allocs of node %s: %w", nodeID, err)
	}
	remove := map[string]bool{}
	for _, a := range plan.NodeUpdate[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range plan.NodePreemptions[nodeID] {
		remove[a.ID] = true
	}
	for _, a := range placed {
		remove[a.ID] = true
	}
	proposed := make([]*api.Allocation, 0, len(existing)+len(placed))
	for _, a := range existing {
		if !remove[a.ID] && !a.TerminalStatus() {
			proposed = append(proposed, a)
		}
	}
	proposed = append(proposed, placed...)
	ok, reason := nodeFits(node, proposed)
	return ok, reason, nil
}
