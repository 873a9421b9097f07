package scheduler

import (
	"github.com/drover/drover/api"
)

// scheduleSystem runs one alloc of each group on every feasible ready
// node (system) or runs it to completion once per node (sysbatch).
func (s *sched) scheduleSystem(allocs []*api.Allocation) {
	for _, a := range allocs {
		if !a.TerminalStatus() {
			s.jobLive = append(s.jobLive, a)
		}
	}
	sysbatch := s.job.Type == api.JobTypeSysBatch
	var places []*placement
	for _, a := range allocs {
		if !a.TerminalStatus() && s.job.LookupTaskGroup(a.TaskGroup) == nil {
			s.stop(a, "alloc not needed since its group was removed from the job", "")
			s.annotate(a.TaskGroup).Stop++
		}
	}
	for _, tg := range s.job.TaskGroups {
		d := s.annotate(tg.Name)
		tc := s.newTG(tg)
		upd := updateStrategy(s.job, tg)
		limit := -1
		if upd != nil {
			limit = upd.MaxParallel
		}
		live := map[string]*api.Allocation{}
		done := map[string]bool{}
		var prevTerm map[string]*api.Allocation
		for _, a := range allocs {
			if a.TaskGroup != tg.Name {
				continue
			}
			if a.TerminalStatus() {
				if a.DesiredStatus == api.AllocDesiredStatusRun && a.NextAllocation == "" {
					if sysbatch && a.ClientStatus == api.AllocClientStatusComplete && sameVersion(a, s.job) {
						done[a.NodeID] = true
					} else {
						if prevTerm == nil {
							prevTerm = map[string]*api.Allocation{}
						}
						prevTerm[a.NodeID] = a
					}
				}
				continue
			}
			ns := s.byID[a.NodeID]
			switch {
			case s.nodeLost(a):
				s.stop(a, "alloc is lost since its node is down", api.AllocClientStatusLost)
				d.Stop++
				continue
			case a.DesiredTransition.ShouldMigrate():
				s.stop(a, "alloc is being migrated", "")
				d.Migrate++
				continue
			case live[a.NodeID] != nil:
				s.stop(a, "alloc not needed: duplicate on node", "")
				d.Stop++
				continue
			case ns == nil:
				n := s.allNodes[a.NodeID]
				if !dcMatch(s.job.Datacenters, n.Datacenter) || !poolMatch(s.job.NodePool, n.NodePool) {
					s.stop(a, "alloc not needed since node is no longer in the job's datacenters or pool", "")
					d.Stop++
					continue
				}
				live[a.NodeID] = a // ineligible or draining: leave it running
				d.Ignore++
				continue
			}
			if ok, _ := s.classOK(tc, ns); !ok {
				s.stop(a, "alloc not needed since node no longer meets the job's constraints", "")
				d.Stop++
				continue
			}
			live[a.NodeID] = a
			if sameVersion(a, s.job) {
				d.Ignore++
				continue
			}
			var oldTG *api.TaskGroup
			if a.Job != nil {
				oldTG = a.Job.LookupTaskGroup(tg.Name)
			}
			if !destructiveChange(a.Job, oldTG, s.job, tg) {
				c := a.Copy()
				c.Job = s.job
				c.EvalID = s.eval.ID
				c.ModifyTime = s.opts.Now.UnixNano()
				s.plan.AppendAlloc(c)
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
			s.stop(a, "alloc is being updated due to job update", "")
			d.DestructiveUpdate++
			places = append(places, &placement{tg: tg, index: 0, prev: a, node: ns, stopped: true})
		}
		for _, ns := range s.nodes {
			if live[ns.node.ID] != nil || done[ns.node.ID] {
				continue
			}
			if ok, _ := s.classOK(tc, ns); !ok {
				continue
			}
			if ok, _ := s.nodeOK(tc, ns); !ok {
				continue
			}
			p := &placement{tg: tg, index: 0, node: ns}
			if prev := prevTerm[ns.node.ID]; prev != nil {
				p.prev = prev
			}
			places = append(places, p)
			d.Place++
		}
	}
	for _, p := range places {
		if s.cancelled() {
			return
		}
		s.place(p)
		if s.err != nil {
			return
		}
	}
}
