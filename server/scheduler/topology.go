package scheduler

import (
	"sort"

	"github.com/drover/drover/api"
)

// Topology packing of gangs: a node's domain at a level is its meta
// "topology.<level>". A gang with a topology block is tried in single
// domains first, best fit (the domain with the least room that still
// holds the gang, so big domains stay free for big gangs); with mode
// "required" that is all (nodes without the meta never qualify), with
// "preferred" it then tries the fewest domains (largest first) and
// finally any node.

// maxDomainTries bounds the single domains tried for one gang.
const maxDomainTries = 8

// attempt places the gang's members, packed by its topology when it has
// one. It returns the held placements, whether at least need fit
// (then they are kept in node state, not yet in the plan) and, when
// none did, why topology ruled the rest out.
func (g *gangPlacer) attempt(run *gangRun, need int) ([]heldAlloc, bool, string) {
	t := run.gang.Topology
	if t == nil || run.plain {
		held, ok, got := g.tryGang(run, need, nil)
		if !ok {
			g.applyAttemptMetrics(got)
		}
		return held, ok, ""
	}
	key := api.TopologyMetaPrefix + t.Level
	doms, room := g.domainRoom(run, key)
	want := len(run.places)
	// Replacements go to the running members' domains first.
	home := map[string]bool{}
	for _, a := range run.live {
		if n := g.nodes.node(a.NodeID); n != nil && n.Meta[key] != "" {
			home[n.Meta[key]] = true
		}
	}
	var single []string
	for _, d := range doms {
		if room[d] >= need && (len(home) == 0 || home[d]) {
			single = append(single, d)
		}
	}
	// Best fit: domains holding every member, least room first; then
	// domains holding at least need (elastic gangs), most room first.
	sort.SliceStable(single, func(i, j int) bool {
		ri, rj := room[single[i]], room[single[j]]
		fi, fj := ri >= want, rj >= want
		if fi != fj {
			return fi
		}
		if fi {
			return ri < rj
		}
		return ri > rj
	})
	var held []heldAlloc
	var last map[string]*api.AllocMetric
	for i, d := range single {
		if i >= maxDomainTries {
			break
		}
		var ok bool
		held, ok, last = g.tryGang(run, need, func(ns *nodeState) bool { return ns.node.Meta[key] == d })
		if ok || g.env.err != nil {
			return held, ok, ""
		}
	}
	why := "no " + t.Level + " domain has room for the gang"
	if t.Mode == api.TopologyRequired {
		if last == nil {
			// Nothing tried: explain with one unrestricted attempt.
			_, ok, got := g.tryGangDry(run, need)
			if ok {
				why += " (it would fit across domains)"
			}
			last = got
		}
		g.applyAttemptMetrics(last)
		return nil, false, why
	}
	// Preferred: the fewest domains, largest first.
	sort.SliceStable(doms, func(i, j int) bool { return room[doms[i]] > room[doms[j]] })
	set, sum := map[string]bool{}, 0
	for _, d := range doms {
		if sum >= want {
			break
		}
		set[d] = true
		sum += room[d]
	}
	if sum >= need && len(set) > 1 {
		held, ok, got := g.tryGang(run, need, func(ns *nodeState) bool { return set[ns.node.Meta[key]] })
		if ok || g.env.err != nil {
			return held, ok, ""
		}
		last = got
	}
	held, ok, got := g.tryGang(run, need, nil)
	if !ok {
		if got == nil {
			got = last
		}
		g.applyAttemptMetrics(got)
	}
	return held, ok, ""
}

// tryGangDry is an unrestricted attempt that is always rolled back.
func (g *gangPlacer) tryGangDry(run *gangRun, need int) ([]heldAlloc, bool, map[string]*api.AllocMetric) {
	saved := g.saveMetrics(run)
	cp := g.led.checkpoint()
	held := g.placeHeld(run)
	g.led.rollback(cp)
	g.dropCanaries(held)
	return held, len(held) >= need, g.restoreMetrics(run, saved)
}

// applyAttemptMetrics writes an attempt's failure metrics back (the
// attempt restored the earlier ones when it rolled back).
func (g *gangPlacer) applyAttemptMetrics(got map[string]*api.AllocMetric) {
	for name, m := range got {
		if m != nil {
			g.out.failed[name] = m
		}
	}
}

// domainRoom returns the domains of level key among the candidate nodes
// (in node order of first appearance) and an estimate of how many gang
// members each holds now: per feasible node, how many times the largest
// group's ask fits its free cpu, memory, disk and devices.
func (g *gangPlacer) domainRoom(run *gangRun, key string) ([]string, map[string]int) {
	var ref *api.TaskGroup
	n := map[string]int{}
	for _, p := range run.places {
		n[p.tg.Name]++
		if ref == nil || n[p.tg.Name] > n[ref.Name] {
			ref = p.tg
		}
	}
	tc := g.rk.group(ref)
	want := len(run.places)
	var doms []string
	room := map[string]int{}
	for _, ns := range g.led.candidates() {
		d := ns.node.Meta[key]
		if d == "" {
			continue
		}
		if _, seen := room[d]; !seen {
			doms = append(doms, d)
			room[d] = 0
		}
		room[d] += g.slots(tc, ns, want)
	}
	return doms, room
}

// slots estimates how many of tc's allocs fit on ns now (at most limit):
// the feasibility checks and the ledger's fit, then the free amounts over
// the ask; devices are counted as free healthy instances, not picked
// (cheaper; the attempt that follows places for real).
func (g *gangPlacer) slots(tc *tgCtx, ns *nodeState, limit int) int {
	if !g.rk.eligible(tc, ns) {
		return 0
	}
	ask := tc.ask
	ask.CPU = tc.cpuOn(ns)
	if ns.cap.Fits(&ask) != nil {
		return 0
	}
	k := limit
	u := ns.cap.Used()
	per := func(free, ask int64) {
		if ask > 0 {
			k = min(k, int(max(free, 0)/ask))
		}
	}
	per(ns.cap.CPU-u.CPU, tc.cpuOn(ns))
	per(ns.cap.MemoryMB-u.MemoryMB, tc.mem)
	if ns.cap.DiskMB > 0 {
		per(ns.cap.DiskMB-u.DiskMB, tc.disk)
	}
	if len(tc.devs) > 0 && ns.node.NodeResources != nil {
		var free, ask int64
		for _, d := range ns.node.NodeResources.Devices {
			for _, inst := range d.Instances {
				if inst.Healthy && !ns.cap.DeviceUsed(inst.ID) {
					free++
				}
			}
		}
		for _, d := range tc.devs {
			ask += int64(d.req.Count)
		}
		per(free, ask)
	}
	return k
}
