package scheduler

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// NodePlanFits is the scheduler's own verdict on one node of a plan: it
// replays the plan's changes for nodeID on the node bookkeeping placement
// uses (the node's live allocs, less the plan's stops and preemptions;
// in-place updates replace the stored alloc; then each placement must fit
// what is left; terminal allocs in the plan use nothing). The plan
// applier (server, evaluateNodePlan) decides the same question from
// scratch; a differential test holds them to the same answer. A node
// that gains nothing always fits, and so does one whose part of the plan
// is only terminal allocs (a failed one given its follow-up eval, on a
// node since gone down or draining: it runs nothing there); one that
// gains allocs must exist and be ready (ready, not draining, eligible).
func NodePlanFits(st State, plan *api.Plan, nodeID string) (bool, string, error) {
	placed := plan.NodeAllocation[nodeID]
	if allTerminal(placed) {
		return true, "", nil
	}
	n, err := st.NodeByID(nodeID)
	if err != nil {
		return false, "", fmt.Errorf("node %s: %w", nodeID, err)
	}
	if n == nil || !n.Ready() {
		return false, "node is missing or not ready", nil
	}
	if n.NodeResources == nil {
		return false, "node has no resources", nil
	}
	l := &ledger{env: &passEnv{st: st}, idx: &nodeIndex{}, quota: &queueLimits{}, stopped: map[string]bool{}}
	for _, a := range plan.NodeUpdate[nodeID] {
		l.stopped[a.ID] = true
	}
	for _, a := range plan.NodePreemptions[nodeID] {
		l.stopped[a.ID] = true
	}
	ns := &nodeState{node: n}
	l.load(ns)
	if l.env.err != nil {
		return false, "", fmt.Errorf("allocs of node %s: %w", nodeID, l.env.err)
	}
	for _, a := range placed {
		ns.removeAlloc(a, nil) // an in-place update: the plan's copy replaces it
	}
	for _, a := range placed {
		if a.TerminalStatus() {
			// A finished alloc the plan only annotates (a failed one
			// given its follow-up eval): it holds nothing, as load
			// does not count the stored copy either.
			continue
		}
		v := capacity.AllocVector(a.AllocatedResources)
		if e := ns.cap.Fits(&v); e != nil {
			return false, e.Error(), nil
		}
		ns.addAlloc(a, nil)
	}
	return true, "", nil
}

// allTerminal reports whether every alloc of list is terminal (true for
// none): a node given only those gains nothing.
func allTerminal(list []*api.Allocation) bool {
	for _, a := range list {
		if !a.TerminalStatus() {
			return false
		}
	}
	return true
}
