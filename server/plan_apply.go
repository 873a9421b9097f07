package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/broker"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// planSource hands out submitted plans in priority order (the plan queue).
type planSource interface {
	Dequeue(ctx context.Context) (*broker.PendingPlan, error)
}

// tokenChecker says which token holds an eval now (the broker).
type tokenChecker interface {
	Outstanding(evalID string) (string, bool)
}

// planApplier is the leader's single plan applier, a leader duty: for each plan, in
// priority order, it re-checks every node against the latest state, drops
// the nodes that no longer fit (everything when the plan is AllAtOnce;
// every member of a gang with a member on such a node, dropRejectedGangs;
// the nodes that would raise a queue above its limit, dropOverQuota) and
// commits the rest through Raft.
//
// Verification and encoding of plan N+1 overlap the Raft commit of plan
// N: N+1 is checked against a snapshot plus N's changes (an overlay,
// deduplicated by alloc ID, so it is right whether or not the snapshot
// already holds N), and its own commit is issued only after N's returned,
// keeping the log in plan order. If N fails, N+1 was checked
// conservatively (N's placements counted), which can only reject more,
// never overcommit.
type planApplier struct {
	serverCore
	plans  planSource
	tokens tokenChecker
	// hook, when set (tests only), sees each plan before it is verified.
	hook *atomic.Pointer[func(*api.Plan)]
	// predecode, when set (the FSM's Predecode), decodes an entry for the
	// leader's FSM while Raft appends it.
	predecode func(entry []byte) (release func())
	// applied and placed record a commit's duration and placements.
	applied prometheus.Observer
	placed  prometheus.Counter
}

// Run applies plans until ctx ends.
func (ap *planApplier) Run(ctx context.Context) {
	var prev *planCommit
	defer func() {
		if prev != nil {
			<-prev.done
		}
	}()
	for {
		p, err := ap.plans.Dequeue(ctx)
		if err != nil {
			return
		}
		var overlay *planCommit
		if prev != nil {
			select {
			case <-prev.done:
				prev = nil
			default:
				overlay = prev
			}
		}
		start := ap.clock.Now()
		snap, res, req, err := ap.verifyPlan(p.Plan, overlay)
		var entry []byte
		if err == nil && !req.Empty() {
			// Encoded while the previous plan is still in Raft (a 10,000-
			// alloc entry takes ~100 ms to encode).
			entry, err = ap.planEntry(snap, res, req)
		}
		if prev != nil {
			<-prev.done
			if res != nil && res.RefreshIndex != 0 && prev.index > res.RefreshIndex {
				res.RefreshIndex = prev.index
			}
			prev = nil
		}
		if err != nil {
			ap.log.Warn("plan rejected", "eval", p.Plan.EvalID, "err", err)
			p.Respond(nil, err)
			continue
		}
		if req.Empty() {
			p.Respond(res, nil)
			continue
		}
		c := newPlanCommit(req)
		prev = c
		go func() {
			defer close(c.done)
			c.index = ap.commitPlan(ctx, p, res, req, entry, start)
		}()
	}
}

// planCommit is a plan whose Raft commit is in flight.
type planCommit struct {
	done    chan struct{}
	index   uint64 // set before done is closed; 0 on failure
	placed  map[string][]*api.Allocation
	removed map[string]bool
	job     *api.Job // the plan's job (placements carry none: appendStripped)
}

func newPlanCommit(req *state.ApplyPlanResultsRequest) *planCommit {
	c := &planCommit{done: make(chan struct{}), placed: map[string][]*api.Allocation{}, removed: map[string]bool{}, job: req.Job}
	for _, a := range req.AllocsPlaced {
		c.placed[a.NodeID] = append(c.placed[a.NodeID], a)
	}
	for _, a := range req.AllocsStopped {
		c.removed[a.ID] = true
	}
	for _, a := range req.AllocsPreempted {
		c.removed[a.ID] = true
	}
	return c
}

// verifyPlan checks the eval's token and the plan's fit.
func (ap *planApplier) verifyPlan(plan *api.Plan, overlay *planCommit) (*state.Snapshot, *api.PlanResult, *state.ApplyPlanResultsRequest, error) {
	if tok, ok := ap.tokens.Outstanding(plan.EvalID); !ok || tok != plan.EvalToken {
		return nil, nil, nil, fmt.Errorf("plan of eval %s: %w", plan.EvalID, errStaleToken)
	}
	if h := ap.hook.Load(); h != nil {
		(*h)(plan)
	}
	snap, err := ap.state().Snapshot()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	res, req, err := evaluatePlanOverlay(snap, plan, overlay)
	if err != nil {
		return nil, nil, nil, err
	}
	return snap, res, req, nil
}

// planEntry stamps a verified plan's allocs with the time, adds the evals
// of the jobs it preempts (in the same entry, so their work is placed
// again) and encodes the Raft entry.
func (ap *planApplier) planEntry(snap *state.Snapshot, res *api.PlanResult, req *state.ApplyPlanResultsRequest) ([]byte, error) {
	now := ap.clock.Now().UnixNano()
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
	req.Evals = append(req.Evals, preemptionEvals(snap, res.NodePreemptions, now)...)
	buf, err := fsm.Encode(fsm.ApplyPlanResultsType, req)
	if err != nil {
		return nil, fmt.Errorf("plan of eval %s: %w", req.EvalID, err)
	}
	return buf, nil
}

// commitPlan writes a verified plan's entry (planEntry) through Raft,
// answers the submitter and returns the commit index (0 on failure).
func (ap *planApplier) commitPlan(ctx context.Context, p *broker.PendingPlan, res *api.PlanResult,
	req *state.ApplyPlanResultsRequest, entry []byte, start time.Time) uint64 {
	if ap.predecode != nil {
		defer ap.predecode(entry)()
	}
	idx, _, err := ap.commit(ctx, entry)
	if err != nil {
		err = fmt.Errorf("commit plan of eval %s: %v: %w", p.Plan.EvalID, fsm.ApplyPlanResultsType, err)
		ap.log.Warn("plan commit failed", "eval", p.Plan.EvalID, "err", err)
		p.Respond(nil, err)
		return 0
	}
	res.AllocIndex = idx
	if res.RefreshIndex != 0 && idx > res.RefreshIndex {
		res.RefreshIndex = idx
	}
	ap.applied.Observe(ap.clock.Now().Sub(start).Seconds())
	ap.placed.Add(float64(len(req.AllocsPlaced)))
	p.Respond(res, nil)
	return idx
}

// evaluatePlan decides which nodes of plan fit on snap and returns the
// result for the worker and the request to commit.
func evaluatePlan(snap *state.Snapshot, plan *api.Plan) (*api.PlanResult, *state.ApplyPlanResultsRequest, error) {
	return evaluatePlanOverlay(snap, plan, nil)
}

// evaluatePlanOverlay is evaluatePlan on snap plus an uncommitted plan.
func evaluatePlanOverlay(snap *state.Snapshot, plan *api.Plan, overlay *planCommit) (*api.PlanResult, *state.ApplyPlanResultsRequest, error) {
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
	fits := make(map[string]bool, len(ids))
	for _, id := range ids {
		ok, _, err := evaluateNodePlan(snap, plan, id, overlay)
		if err != nil {
			return nil, nil, err
		}
		fits[id] = ok
	}
	if !plan.AllAtOnce {
		// Dropping a rejected gang, the preemptions of a rejected
		// placement or the nodes raising a queue over its limit
		// (plan_quota.go) can only reject more nodes (fits goes true to
		// false), so alternate them until none rejects another.
		for {
			before := rejectedCount(fits)
			var err error
			if len(plan.Gangs) > 0 {
				if plan, err = dropRejectedGangs(snap, plan, overlay, fits); err != nil {
					return nil, nil, err
				}
			}
			if plan, err = dropOrphanPreemptions(snap, plan, overlay, fits); err != nil {
				return nil, nil, err
			}
			if _, err = dropOverQuota(snap, plan, overlay, fits); err != nil {
				return nil, nil, err
			}
			if rejectedCount(fits) == before {
				break
			}
		}
	} else if _, err := dropOverQuota(snap, plan, overlay, fits); err != nil {
		return nil, nil, err
	}
	var rejected []string
	accepted := make([]string, 0, len(ids))
	for _, id := range ids {
		if fits[id] {
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
			req.AllocsPlaced = appendStripped(req.AllocsPlaced, as, plan.Job, false)
		}
		if as := plan.NodeUpdate[id]; len(as) > 0 {
			if res.NodeUpdate == nil {
				res.NodeUpdate = map[string][]*api.Allocation{}
			}
			res.NodeUpdate[id] = as
			req.AllocsStopped = appendStripped(req.AllocsStopped, as, nil, true)
		}
		if as := plan.NodePreemptions[id]; len(as) > 0 {
			if res.NodePreemptions == nil {
				res.NodePreemptions = map[string][]*api.Allocation{}
			}
			res.NodePreemptions[id] = as
			req.AllocsPreempted = appendStripped(req.AllocsPreempted, as, nil, true)
		}
	}
	return res, req, nil
}

// dropRejectedGangs makes every gang of the plan all-or-nothing: when a
// node holding a member is rejected, every member of that gang is dropped
// from every node, with the preemptions made for them and the stops of
// the allocs they replace (lost allocs stay stopped: that is a fact).
// Accepted nodes whose part of the plan changed are checked again (a
// node that loses preemptions may no longer fit its other placements),
// until no more gangs drop; rejected nodes stay rejected. fits is updated; the returned plan is a copy when
// anything was dropped (the submitted plan is not modified).
func dropRejectedGangs(snap *state.Snapshot, plan *api.Plan, overlay *planCommit, fits map[string]bool) (*api.Plan, error) {
	gangOf := map[string]int{}
	for i, g := range plan.Gangs {
		for _, id := range g.AllocIDs {
			gangOf[id] = i
		}
	}
	dropped := map[int]bool{}
	out := plan
	for {
		more := false
		for node, ok := range fits {
			if ok {
				continue
			}
			for _, a := range out.NodeAllocation[node] {
				if gi, in := gangOf[a.ID]; in && !dropped[gi] {
					dropped[gi] = true
					more = true
				}
			}
		}
		if !more {
			return out, nil
		}
		members := map[string]bool{}
		for id, gi := range gangOf {
			if dropped[gi] {
				members[id] = true
			}
		}
		next := *plan
		var touched []string
		next.NodeAllocation, touched = filterAllocs(plan.NodeAllocation, touched, func(a *api.Allocation) bool { return members[a.ID] })
		next.NodePreemptions, touched = filterAllocs(plan.NodePreemptions, touched, func(a *api.Allocation) bool {
			return members[a.PreemptedByAllocation]
		})
		next.NodeUpdate, touched = filterAllocs(plan.NodeUpdate, touched, func(a *api.Allocation) bool {
			return members[a.NextAllocation] && a.ClientStatus != api.AllocClientStatusLost
		})
		out = &next
		if err := recheckNodes(snap, out, overlay, fits, touched); err != nil {
			return nil, fmt.Errorf("without rejected gangs: %w", err)
		}
	}
}

// recheckNodes evaluates again the accepted nodes among touched (in ID
// order) whose part of plan changed, updating fits; a rejected node stays
// rejected (the worker refreshes and plans again).
func recheckNodes(snap *state.Snapshot, plan *api.Plan, overlay *planCommit, fits map[string]bool, touched []string) error {
	sort.Strings(touched)
	for _, id := range touched {
		if !fits[id] {
			continue
		}
		ok, _, err := evaluateNodePlan(snap, plan, id, overlay)
		if err != nil {
			return fmt.Errorf("recheck node %s: %w", id, err)
		}
		fits[id] = ok
	}
	return nil
}

// filterAllocs returns m without the allocs drop matches (a new map when
// anything is dropped) and appends the nodes that changed to touched.
func filterAllocs(m map[string][]*api.Allocation, touched []string, drop func(*api.Allocation) bool) (map[string][]*api.Allocation, []string) {
	var out map[string][]*api.Allocation
	for node, list := range m {
		kept := make([]*api.Allocation, 0, len(list))
		for _, a := range list {
			if !drop(a) {
				kept = append(kept, a)
			}
		}
		if len(kept) == len(list) {
			continue
		}
		if out == nil {
			out = make(map[string][]*api.Allocation, len(m))
			for k, v := range m {
				out[k] = v
			}
		}
		if len(kept) == 0 {
			delete(out, node)
		} else {
			out[node] = kept
		}
		touched = append(touched, node)
	}
	if out == nil {
		return m, touched
	}
	return out, touched
}

// appendStripped appends shallow copies of allocs without the Job the
// state store re-attaches (the plan's job for placements; the stored
// alloc's for stops and preemptions), so a 1,000-alloc plan does not carry
// 1,000 copies of the job through Raft.
func appendStripped(dst, allocs []*api.Allocation, planJob *api.Job, always bool) []*api.Allocation {
	for _, a := range allocs {
		if a.Job != nil && (always || planJob != nil && (a.Job == planJob ||
			(a.Job.ID == planJob.ID && a.Job.Namespace == planJob.Namespace && a.Job.Version == planJob.Version &&
				a.Job.JobModifyIndex == planJob.JobModifyIndex))) {
			c := *a
			c.Job = nil
			a = &c
		}
		dst = append(dst, a)
	}
	return dst
}

// evaluateNodePlan checks one node: a node that only loses allocs, or
// whose part of the plan is only terminal allocs (a failed one given its
// follow-up eval, on a node since gone down or draining), always passes
// (scheduler.NodePlanFits answers the same); one that gains allocs must
// exist, be ready, not draining, eligible, give none of them a device a
// pending MIG change takes away, and fit everything that stays plus
// everything placed.
func evaluateNodePlan(snap *state.Snapshot, plan *api.Plan, nodeID string, overlay *planCommit) (bool, string, error) {
	placed := plan.NodeAllocation[nodeID]
	if !slices.ContainsFunc(placed, func(a *api.Allocation) bool { return !a.TerminalStatus() }) {
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
	if devs := node.MIGPendingDevices(); devs != nil { // a plan scheduled before the MIG change
		for _, a := range placed {
			if api.AllocHolds(a, devs) {
				return false, "a MIG layout change is pending on a GPU of the plan", nil
			}
		}
	}
	existing, err := snap.AllocsByNode(nil, nodeID)
	if err != nil {
		return false, "", fmt.Errorf("allocs of node %s: %w", nodeID, err)
	}
	if id := revived(existing, placed, overlay); id != "" {
		return false, "alloc " + id + " was stopped after the plan was made", nil
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
	if overlay == nil {
		for _, a := range existing {
			if !remove[a.ID] && !a.TerminalStatus() {
				proposed = append(proposed, a)
			}
		}
	} else {
		byID := make(map[string]*api.Allocation, len(existing))
		for _, a := range existing {
			if !overlay.removed[a.ID] && !a.TerminalStatus() {
				byID[a.ID] = a
			}
		}
		for _, a := range overlay.placed[nodeID] {
			if !a.TerminalStatus() {
				byID[a.ID] = a
			}
		}
		for id, a := range byID {
			if !remove[id] {
				proposed = append(proposed, a)
			}
		}
	}
	for _, a := range placed {
		// A terminal alloc in the plan (a failed one given its follow-up
		// eval) uses nothing, as in the scheduler's NodePlanFits.
		if !a.TerminalStatus() {
			proposed = append(proposed, a)
		}
	}
	ok, reason := nodeFits(node, proposed)
	return ok, reason, nil
}

// revived returns an alloc the plan updates in place as running that the
// server stopped or evicted since the plan was made (in existing, the
// node's stored allocs, or in the overlay's commit), or "". The store
// writes a placement's desired status over the stored one, so committing
// the stale copy would start the alloc again: a gang member preempted
// with its gang would run on alone. The node is rejected instead and the
// eval plans again on fresh state.
func revived(existing, placed []*api.Allocation, overlay *planCommit) string {
	stopped := map[string]bool{}
	for _, a := range existing {
		if a.DesiredStatus != api.AllocDesiredStatusRun {
			stopped[a.ID] = true
		}
	}
	for _, a := range placed {
		if a.DesiredStatus == api.AllocDesiredStatusRun && (stopped[a.ID] || overlay != nil && overlay.removed[a.ID]) {
			return a.ID
		}
	}
	return ""
}

// rejectedCount is how many nodes of the plan do not fit.
func rejectedCount(fits map[string]bool) int {
	n := 0
	for _, ok := range fits {
		if !ok {
			n++
		}
	}
	return n
}
