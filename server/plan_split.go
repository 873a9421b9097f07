package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/broker"
)

// maxPlanAllocs bounds the allocs (placed, stopped, preempted) of one plan
// a worker submits. A larger plan is split by node into plans of about
// this size, submitted together: the plan queue keeps their order and the
// applier overlaps one's commit with the next one's checks. Each becomes
// a Raft entry whose state transaction stays under go-immutable-radix's
// tracking limit (8,192 changed nodes of an index tree); a transaction
// past it notifies watchers by walking every index tree whole, which at
// 100,000 allocs made a 10,000-alloc plan's transaction twice as slow per
// alloc as ten of 1,000 (state's BenchmarkPlanTxn), and grows with the
// cluster. Clients also see their first allocs a commit earlier.
//
// Plans that must commit whole (AllAtOnce, gangs) or that carry deployment
// changes (counted once per plan) are not split.
const maxPlanAllocs = 1000

// splitPlan returns p as plans of at most max allocs each (more only for
// a node that alone has more), a node's stops, placements and preemptions
// always in the same one, nodes in ID order; or p alone when it is that
// small or must not be split.
func splitPlan(p *api.Plan, max int) []*api.Plan {
	if p.AllAtOnce || len(p.Gangs) > 0 || p.Deployment != nil || len(p.DeploymentUpdates) > 0 {
		return []*api.Plan{p}
	}
	count := func(node string) int {
		return len(p.NodeUpdate[node]) + len(p.NodeAllocation[node]) + len(p.NodePreemptions[node])
	}
	seen := map[string]bool{}
	var nodes []string
	total := 0
	for _, m := range []map[string][]*api.Allocation{p.NodeUpdate, p.NodeAllocation, p.NodePreemptions} {
		for n := range m {
			if !seen[n] {
				seen[n] = true
				nodes = append(nodes, n)
				total += count(n)
			}
		}
	}
	if total <= max {
		return []*api.Plan{p}
	}
	sort.Strings(nodes)
	var out []*api.Plan
	var cur *api.Plan
	size := 0
	for _, n := range nodes {
		if cur == nil || (size > 0 && size+count(n) > max) {
			cur = &api.Plan{EvalID: p.EvalID, EvalToken: p.EvalToken, Priority: p.Priority, Job: p.Job,
				Annotations: p.Annotations, SnapshotIndex: p.SnapshotIndex}
			out = append(out, cur)
			size = 0
		}
		for _, part := range []struct {
			from map[string][]*api.Allocation
			to   *map[string][]*api.Allocation
		}{{p.NodeUpdate, &cur.NodeUpdate}, {p.NodeAllocation, &cur.NodeAllocation}, {p.NodePreemptions, &cur.NodePreemptions}} {
			if as := part.from[n]; len(as) > 0 {
				if *part.to == nil {
					*part.to = map[string][]*api.Allocation{}
				}
				(*part.to)[n] = as
			}
		}
		size += count(n)
	}
	return out
}

// submitPlan queues plan, split (splitPlan), and waits for all of it: the
// nodes any part rejected and the latest index to refresh to.
func (w *worker) submitPlan(ctx context.Context, plan *api.Plan) (rejected []string, refresh uint64, err error) {
	var pending []*broker.PendingPlan
	for _, p := range splitPlan(plan, maxPlanAllocs) {
		pp, err := w.plans.Enqueue(p)
		if err != nil {
			return nil, 0, fmt.Errorf("submit plan: %w", err)
		}
		pending = append(pending, pp)
	}
	for _, pp := range pending {
		pr, err := pp.Wait(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("plan: %w", err)
		}
		rejected = append(rejected, pr.RejectedNodes...)
		refresh = max(refresh, pr.RefreshIndex)
	}
	return rejected, refresh, nil
}
