package scheduler

import (
	"github.com/drover/drover/api"
)

// placer is the placement stage: it makes the pass's placements in job
// group order (gangs as units, gang.go), each on the best node the ranker
// finds or, failing that, on room the preemptor makes; builds the allocs
// (devices, cores, ports) and keeps them in the plan, with the evictions
// and the stops of the allocs they replace. It owns the ledger's changes
// (journaled, so a gang attempt can be rolled back), the queue limits'
// admission and the reservations a failed gang leaves. When a group
// fails, its metric (failureMetric) says why now; the explainer adds the
// rest at the end of the pass.
type placer struct {
	env   *passEnv
	out   *output
	led   *ledger
	rk    *ranker
	pre   *preemptor
	quota *queueLimits
	resv  *reservations
	dev   *devicePicker
	gangs *gangPlacer
}

// heldAlloc is a placement made in node state, not yet in the plan: keep
// writes it there; a gang attempt holds its members apart until the gang
// is kept (or rolls them back).
type heldAlloc struct {
	a       *api.Allocation
	victims []*api.Allocation
	p       *placement
}

// place finds a node for p and makes the alloc: counted on its node, its
// victims released, not yet in the plan (see heldAlloc). It reports false
// when p is not placed (the group's metric and queued count say why).
func (pl *placer) place(p *placement) (heldAlloc, bool) {
	env, out, rk := pl.env, pl.out, pl.rk
	tc := rk.group(p.tg)
	name := p.tg.Name
	if tc.failed && p.node == nil {
		out.failed[name].CoalescedFailures++
		out.queued[name]++
		return heldAlloc{}, false
	}
	if lines := pl.quotaPrecheck(tc); len(lines) > 0 {
		if m := out.failed[name]; m != nil && len(m.QuotaExhausted) > 0 {
			m.CoalescedFailures++ // a system job's next node
			out.queued[name]++
			return heldAlloc{}, false
		}
		pl.quotaFail(tc, lines)
		return heldAlloc{}, false
	}
	prevNode := ""
	if p.prev != nil && p.resched {
		prevNode = p.prev.NodeID
	}
	var c *cand
	var victims []*api.Allocation
	evaluated, filtered := 1, 0
	if p.node != nil {
		rej, why, picks := rk.checkNode(tc, p.node)
		if rej == rejExhausted && env.preemptionEnabled() {
			if pc, v, ok := pl.pre.preempt(tc, []*nodeState{p.node}, prevNode, victimRule{}); ok {
				tc.cands = append(tc.cands[:0], pc)
				c, victims, rej = &tc.cands[0], v, okNode
			}
		}
		if rej != okNode {
			if rej == rejExhausted {
				m := out.failed[name]
				if m == nil {
					m = &api.AllocMetric{NodesInPool: pl.led.size(), NodesAvailable: pl.led.available()}
					out.failed[name] = m
				} else {
					m.CoalescedFailures++
				}
				m.NodesEvaluated++
				m.NodesExhausted++
				inc(&m.ClassExhausted, p.node.class)
				inc(&m.DimensionExhausted, why)
				pl.quotaExplain(m, tc, p.node, why)
				out.queued[name]++
			}
			return heldAlloc{}, false
		}
		if c == nil {
			tc.cands = append(tc.cands[:0], rk.score(tc, p.node, picks, prevNode, 1))
			c = &tc.cands[0]
		}
	} else {
		c, evaluated, filtered = rk.selectNode(tc, prevNode, p.tg.Count)
		if c == nil && env.err == nil && env.preemptionEnabled() {
			if pc, v, ok := pl.pre.preempt(tc, pl.led.candidates(), prevNode, victimRule{}); ok {
				tc.cands = append(tc.cands[:0], pc)
				c, victims = &tc.cands[0], v
			}
		}
		if c == nil {
			if env.err != nil {
				return heldAlloc{}, false
			}
			pl.led.failGroup(tc)
			out.failed[name] = pl.failureMetric(tc)
			out.queued[name]++
			return heldAlloc{}, false
		}
	}
	pl.evict(victims) // before building: ports and cores come free
	a := pl.buildAlloc(tc, p, c)
	a.Metrics = &api.AllocMetric{
		NodesEvaluated: evaluated, NodesFiltered: filtered, NodesInPool: pl.led.size(),
		ScoreMetaData: scoreMeta(tc.cands, 3),
	}
	ns := c.ns
	pl.led.addTo(ns, a)
	pl.led.countQuota(a, 1)
	pl.pre.countPlacement(a, victims)
	if len(tc.props) > 0 || len(tc.spreads) > 0 {
		rk.notePlaced(ns.node, name)
	}
	if _, ok := out.queued[name]; !ok {
		out.queued[name] = 0
	}
	return heldAlloc{a: a, victims: victims, p: p}, true
}

// placeKeep places p and keeps the alloc in the plan; it reports whether
// p was placed.
func (pl *placer) placeKeep(p *placement) bool {
	h, ok := pl.place(p)
	if ok {
		pl.keep(h)
	}
	return ok
}

// keep writes a placement to the plan: its evictions, the alloc and the
// link from the alloc it replaces.
func (pl *placer) keep(h heldAlloc) {
	if len(h.victims) > 0 {
		pl.out.recordEvictions(h.a, h.victims, pl.env.opts.Now.UnixNano())
		pl.markIdleEvictions(h.victims) // idle.go
	}
	pl.out.plan.AppendAlloc(h.a)
	if h.p.prev != nil {
		pl.linkPrev(h.p.prev, h.a)
	}
}

// stop records a stop of a live alloc in the plan and frees its
// resources; it returns the plan's copy.
func (pl *placer) stop(a *api.Allocation, desc, clientStatus string) *api.Allocation {
	pl.led.stopAlloc(a)
	return pl.out.stop(a, desc, clientStatus, pl.env.opts.Now.UnixNano())
}

// unstop takes back a stop of the plan (a destructive update whose
// replacement was not placed): the alloc keeps running.
func (pl *placer) unstop(a *api.Allocation) {
	pl.out.unstop(a)
	pl.led.unstopAlloc(a)
}

// evict releases the victims preempt chose from their nodes' usage (any
// node: a gang's members) and marks them stopped, journaled so a rollback
// undoes it; keep then writes them to the plan.
//
// The victims' nodes have room again, so every group looks at them anew
// (a whole gang's members on other nodes serve the next placements
// instead of more evictions).
func (pl *placer) evict(victims []*api.Allocation) {
	for _, v := range victims {
		ns := pl.led.candidate(v.NodeID)
		if ns != nil && ns.loaded {
			pl.led.removeFrom(ns, v)
		}
		pl.led.markStopped(v)
		if ns == nil {
			continue
		}
		pl.rk.reopen(ns)
	}
}

// placeAll makes the pass's placements in job group order; the groups of
// a gang are placed together, at the gang's first group; refused groups
// (over the count limit) are left alone.
func (pl *placer) placeAll(places []*placement, byGroup map[string][]*api.Allocation, refused map[string]bool) {
	job, plan := pl.env.job, pl.out.plan
	byTG := map[string][]*placement{}
	for _, p := range places {
		byTG[p.tg.Name] = append(byTG[p.tg.Name], p)
	}
	runs := map[string]*gangRun{}
	for _, tg := range job.TaskGroups {
		g, id := job.GangOf(tg)
		plain := false
		if g == nil && job.AllAtOnce {
			g, id, plain = &api.Gang{}, api.GangJobWide, true
		}
		if g == nil {
			continue
		}
		run := runs[id]
		if run == nil {
			run = &gangRun{id: id, gang: g, plain: plain, staleStops: map[string]bool{}}
			runs[id] = run
		}
		run.groups = append(run.groups, tg)
		// A gang's members are counted and placed as a list: its groups'
		// counts are within Options.MaxGroupCount (refuseOverLimit).
		run.places = append(run.places, expandFresh(byTG[tg.Name])...)
	}
	done := map[string]bool{}
	gangsFailed := false // some gang (or all_at_once job) was not placed
	for _, tg := range job.TaskGroups {
		g, id := job.GangOf(tg)
		if g == nil && job.AllAtOnce {
			id = api.GangJobWide
		}
		if run := runs[id]; run != nil {
			if !done[id] && !refused[tg.Name] {
				done[id] = true
				if !pl.gangs.place(run, byGroup) {
					gangsFailed = true
				}
			}
		} else {
			for _, p := range byTG[tg.Name] {
				if p.fresh > 0 {
					pl.placeFresh(p)
				} else if !pl.env.cancelled() {
					pl.placeKeep(p)
				}
				if pl.env.err != nil {
					return
				}
			}
		}
		if pl.env.err != nil {
			return
		}
	}
	if job.AllAtOnce {
		plan.AllAtOnce = true
	}
	if gangsFailed && plan.Deployment != nil && len(plan.NodeAllocation) == 0 {
		// Nothing of the rollout was placed: no deployment for it yet.
		plan.Deployment = nil
		plan.DeploymentUpdates = nil
	}
}

// placeFresh makes a fresh placement's allocs (see placement.fresh) one
// by one. Once the group failed (no node fits, its queue is at a limit)
// every further placement would only count a coalesced failure, so the
// rest are counted at once: the pass does the work and holds the memory
// of what fits, whatever the count.
func (pl *placer) placeFresh(p *placement) {
	tc := pl.rk.group(p.tg)
	for left := p.fresh; left > 0; left-- {
		if tc.failed {
			pl.out.failed[p.tg.Name].CoalescedFailures += left
			pl.out.queued[p.tg.Name] += left
			return
		}
		if pl.env.cancelled() {
			return
		}
		pl.placeKeep(&placement{tg: p.tg, index: p.idx.take(-1), deploy: p.deploy})
		if pl.env.err != nil {
			return
		}
	}
}

// expandFresh returns places with each fresh placement replaced by the
// placements it stands for, in index order.
func expandFresh(places []*placement) []*placement {
	var out []*placement
	for _, p := range places {
		if p.fresh == 0 {
			out = append(out, p)
			continue
		}
		for range p.fresh {
			out = append(out, &placement{tg: p.tg, index: p.idx.take(-1), deploy: p.deploy})
		}
	}
	return out
}

// failureMetric walks every candidate node with fresh counters to say
// why a placement of the group failed now (the explainer adds reasons
// and counterfactuals at the end of the pass).
func (pl *placer) failureMetric(tc *tgCtx) *api.AllocMetric {
	m := &api.AllocMetric{NodesInPool: pl.led.size(), NodesAvailable: pl.led.available()}
	var short devShortfall
	var most resShortfall
	for _, ns := range pl.led.candidates() {
		m.NodesEvaluated++
		rej, why, _ := pl.rk.checkNode(tc, ns)
		switch rej {
		case rejClass:
			m.NodesFiltered++
			inc(&m.ClassFiltered, ns.class)
			inc(&m.ConstraintFiltered, why)
		case rejNode:
			m.NodesFiltered++
			inc(&m.ConstraintFiltered, why)
		case rejExhausted:
			m.NodesExhausted++
			inc(&m.ClassExhausted, ns.class)
			inc(&m.DimensionExhausted, why)
			if isDeviceDim(why) {
				short.note(pl.dev, tc, ns)
			} else {
				most.note(tc, ns, why)
			}
			pl.quotaExplain(m, tc, ns, why)
		}
	}
	m.DeviceShortfalls = short.lines()
	m.Reasons = append(short.reasons(), most.reasons(m)...) // the rest at the end of the pass (explainer.pending)
	return m
}

func inc(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}
