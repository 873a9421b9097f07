package scheduler

import "github.com/drover/drover/api"

// groupResult is what reconciling one task group decided. reconcileGroup
// only decides; applyGroup (the planner) turns the decisions into plan
// edits and node-state changes, and the placements are made after every
// group was applied (so capacity freed by stops is reusable).
type groupResult struct {
	tg *api.TaskGroup
	// stops are live allocs to stop, in decision order: lost (client
	// status lost), migrating, duplicate indexes, over the count, replaced
	// by a promoted canary, destructively updated.
	stops []stopDecision
	// updates are new versions of existing allocs written as they are:
	// in-place updates to the job version, a failed alloc's follow-up
	// eval ID.
	updates []*api.Allocation
	// places are the allocs to place: replacements of lost, migrating and
	// destructively updated allocs (prev set, stopped), reschedules of
	// failed and lost allocs, canaries, and new allocs up to the count.
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

// applyGroup writes one group's decisions into the plan: the annotation,
// the stops (releasing their node usage), the updates, the follow-up evals
// and the deployment verdict. It returns the placements to make.
func (s *sched) applyGroup(r *groupResult) []*placement {
	addDesired(s.annotate(r.tg.Name), &r.desired)
	for _, st := range r.stops {
		s.stop(st.alloc, st.desc, st.client)
	}
	for _, c := range r.updates {
		s.plan.AppendAlloc(c)
	}
	s.res.FollowUps = append(s.res.FollowUps, r.followUps...)
	if r.failDeployment {
		s.failDeployment(r.tg.Name)
	}
	if r.deployBusy {
		s.deployBusy = true
	}
	return r.places
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
