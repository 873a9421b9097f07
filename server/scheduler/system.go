package scheduler

import (
	"github.com/drover/drover/api"
)

// scheduleSystem runs one alloc of each group on every feasible ready
// node (system) or runs it to completion once per node (sysbatch).
func (p *pass) scheduleSystem(allocs []*api.Allocation) {
	job := p.env.job
	var live []*api.Allocation
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
	}
	p.rk.setJobLive(live)
	var places []*placement
	for _, a := range allocs {
		if !a.TerminalStatus() && job.LookupTaskGroup(a.TaskGroup) == nil {
			p.pl.stop(a, "alloc not needed since its group was removed from the job", "")
			p.out.annotate(a.TaskGroup).Stop++
		}
	}
	for _, tg := range job.TaskGroups {
		nodes := groupNodes{rk: &p.rk, tc: p.rk.group(tg)}
		r := p.rec.system(tg, allocs, nodes)
		places = append(places, p.applyGroup(r)...)
		n := len(places)
		places = p.rec.systemNew(places, r, nodes)
		p.out.annotate(tg.Name).Place += uint64(len(places) - n)
	}
	for _, pl := range places {
		if p.env.cancelled() {
			return
		}
		p.pl.placeKeep(pl)
		if p.env.err != nil {
			return
		}
	}
}

// systemNodes is what a system job's reconciliation asks of the placer
// about one group and the candidate nodes (ready, in the job's
// datacenters and pool).
type systemNodes interface {
	// candidate returns the candidate node of an ID, nil when the node is
	// not one.
	candidate(id string) *nodeState
	candidates() []*nodeState
	// fitsClass runs the group's checks that depend on the node's
	// computed class (drivers, volumes, networks, class constraints);
	// fitsNode those on the node's own data (unique constraints,
	// distinct_hosts, distinct_property).
	fitsClass(ns *nodeState) bool
	fitsNode(ns *nodeState) bool
}

// system reconciles one group of a system or sysbatch job: one alloc on
// every candidate node that passes the group's checks. It returns the
// stops, the in-place updates and the destructive updates (placed again
// on their node, within the update's max_parallel); the group's new
// allocs come from systemNew once these decisions are applied (a stop
// frees room distinct_hosts looks at).
func (rc *reconciler) system(tg *api.TaskGroup, allocs []*api.Allocation, nodes systemNodes) *groupResult {
	job := rc.env.job
	r := &groupResult{tg: tg, covered: map[string]bool{}}
	d := &r.desired
	sysbatch := job.Type == api.JobTypeSysBatch
	upd := updateStrategy(job, tg)
	limit := -1
	if upd != nil {
		limit = upd.MaxParallel
	}
	live := map[string]*api.Allocation{}
	for _, a := range allocs {
		if a.TaskGroup != tg.Name {
			continue
		}
		if a.TerminalStatus() {
			if a.DesiredStatus == api.AllocDesiredStatusRun && a.NextAllocation == "" {
				if sysbatch && a.ClientStatus == api.AllocClientStatusComplete && sameVersion(a, job) {
					r.covered[a.NodeID] = true // done on this node
				} else {
					if r.prevTerm == nil {
						r.prevTerm = map[string]*api.Allocation{}
					}
					r.prevTerm[a.NodeID] = a
				}
			}
			continue
		}
		ns := nodes.candidate(a.NodeID)
		switch {
		case rc.nodes.lost(a):
			r.stop(a, "alloc is lost since its node is down", api.AllocClientStatusLost)
			d.Stop++
			continue
		case a.DesiredTransition.ShouldMigrate():
			r.stop(a, migrateDescription(rc.nodes.node(a.NodeID)), "")
			d.Migrate++
			continue
		case live[a.NodeID] != nil:
			r.stop(a, "alloc not needed: duplicate on node", "")
			d.Stop++
			continue
		case ns == nil:
			n := rc.nodes.node(a.NodeID)
			if !dcMatch(job.Datacenters, n.Datacenter) || !poolMatch(job.NodePool, n.NodePool) {
				r.stop(a, "alloc not needed since node is no longer in the job's datacenters or pool", "")
				d.Stop++
				continue
			}
			live[a.NodeID] = a // ineligible or draining: leave it running
			d.Ignore++
			continue
		}
		if !nodes.fitsClass(ns) {
			r.stop(a, "alloc not needed since node no longer meets the job's constraints", "")
			d.Stop++
			continue
		}
		live[a.NodeID] = a
		if sameVersion(a, job) {
			d.Ignore++
			continue
		}
		var oldTG *api.TaskGroup
		if a.Job != nil {
			oldTG = a.Job.LookupTaskGroup(tg.Name)
		}
		if !destructiveChange(a.Job, oldTG, job, tg) {
			c := a.Copy()
			c.Job = job
			c.EvalID = rc.env.eval.ID
			c.ModifyTime = rc.env.opts.Now.UnixNano()
			r.updates = append(r.updates, c)
			d.InPlaceUpdate++
			continue
		}
		if limit == 0 {
			d.Ignore++
			continue
		}
		if limit > 0 {
			limit--
		}
		r.stop(a, "alloc is being updated due to job update", "")
		d.DestructiveUpdate++
		r.places = append(r.places, &placement{tg: tg, index: 0, prev: a, node: ns, stopped: true})
	}
	for id := range live {
		r.covered[id] = true
	}
	return r
}

// systemNew appends to places the new allocs of a system group that
// system reconciled, once its decisions are applied: one on each
// candidate node without a live (or, sysbatch, finished) alloc of the
// group that passes the group's checks, following the node's last
// terminal alloc.
func (rc *reconciler) systemNew(places []*placement, r *groupResult, nodes systemNodes) []*placement {
	for _, ns := range nodes.candidates() {
		if r.covered[ns.node.ID] {
			continue
		}
		if !nodes.fitsClass(ns) || !nodes.fitsNode(ns) {
			continue
		}
		p := &placement{tg: r.tg, index: 0, node: ns}
		if prev := r.prevTerm[ns.node.ID]; prev != nil {
			p.prev = prev
		}
		places = append(places, p)
	}
	return places
}
