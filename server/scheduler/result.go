package scheduler

import "github.com/drover/drover/api"

// groupResult is what reconciling one task group decided: the
// reconciler's output. The reconciler only decides; pass.applyGroup turns
// the decisions into plan edits and node-state changes, and the placer
// makes the placements after every group was applied (so capacity freed
// by stops is reusable).
type groupResult struct {
	tg *api.TaskGroup
	// stops are live allocs to stop, in decision order: originals whose
	// replacement runs since their node reconnected, lost (client status
	// lost), migrating, duplicate indexes, over the count, replaced by a
	// promoted canary, destructively updated. A system job's: lost,
	// migrating, duplicates on a node, out of the job's datacenters or
	// pool or constraints, destructively updated, in alloc order.
	stops []stopDecision
	// updates are new versions of existing allocs written as they are:
	// in-place updates to the job version, a failed alloc's follow-up
	// eval ID.
	updates []*api.Allocation
	// places are the allocs to place: replacements of lost, migrating and
	// destructively updated allocs (prev set, stopped), reschedules of
	// failed and lost allocs, canaries, and new allocs up to the count.
	// A system job's are its destructive updates (on their node); its new
	// allocs come after the stops are applied (reconciler.systemNew).
	places []*placement
	// followUps are new delayed evals (reschedules after their delay).
	followUps []*api.Evaluation
	// desired is the group's DesiredUpdates annotation.
	desired api.DesiredUpdates
	// deployBusy: the group still has rollout work.
	deployBusy bool
	// failDeployment: an alloc of the version's active deployment is
	// unhealthy or failed; the deployment is marked failed.
	failDeployment bool
	// system jobs: nodes that keep a live or finished (sysbatch) alloc
	// of the group, and the terminal alloc a new one on a node follows.
	covered  map[string]bool
	prevTerm map[string]*api.Allocation
}

// stopDecision is one stop: the alloc with its description and the
// client status to record (lost, or "" to keep the client's).
type stopDecision struct {
	alloc        *api.Allocation
	desc, client string
}

func (r *groupResult) stop(a *api.Allocation, desc, clientStatus string) {
	r.stops = append(r.stops, stopDecision{alloc: a, desc: desc, client: clientStatus})
}

func addDesired(d, add *api.DesiredUpdates) {
	d.Ignore += add.Ignore
	d.Place += add.Place
	d.Migrate += add.Migrate
	d.Stop += add.Stop
	d.InPlaceUpdate += add.InPlaceUpdate
	d.DestructiveUpdate += add.DestructiveUpdate
	d.Canary += add.Canary
	d.Preemptions += add.Preemptions
}
