package scheduler

import (
	"slices"
	"sort"

	"github.com/drover/drover/api"
)

// PreemptionConfig says which job types may evict lower-priority allocs
// to make room: the cluster's api.PreemptionConfig (kept in Raft with the
// scheduler configuration). The zero Options use the cluster default:
// every job type preempts.
type PreemptionConfig = api.PreemptionConfig

// DefaultPreemptionConfig is used when Options.Preemption is nil (the
// cluster's default, api.DefaultPreemptionConfig).
var DefaultPreemptionConfig = api.DefaultPreemptionConfig()

// preemptPriorityDelta: only allocs of jobs at least this much lower in
// priority can be preempted.
const preemptPriorityDelta = 10

// maxPreemptNodes bounds the nodes with preemptible allocs examined for
// one placement, maxPreemptVisits all nodes looked at.
const (
	maxPreemptNodes  = 64
	maxPreemptVisits = 1024
)

// deviceCostWeight is what one device (a GPU) weighs in a victim set's
// resource cost, against 1 per MHz of CPU and per MB of memory: evicting
// a GPU job is dearer than any amount of CPU-only work on a node.
const deviceCostWeight = 1 << 20

func (s *sched) preemptionEnabled() bool {
	cfg := DefaultPreemptionConfig
	if s.opts.Preemption != nil {
		cfg = *s.opts.Preemption
	}
	switch s.job.Type {
	case api.JobTypeSystem:
		return cfg.SystemSchedulerEnabled
	case api.JobTypeSysBatch:
		return cfg.SysBatchSchedulerEnabled
	case api.JobTypeBatch:
		return cfg.BatchSchedulerEnabled
	default:
		return cfg.ServiceSchedulerEnabled
	}
}

func allocPriority(a *api.Allocation) int {
	if a.Job == nil {
		return api.DefaultPriority
	}
	return a.Job.Priority
}

// victimCost orders victim sets: the lowest highest priority first, then
// the fewest resources (devices weigh most, then CPU and memory), then the
// fewest units (lone allocs and gangs), the fewest allocs, and the least
// run time lost.
type victimCost struct {
	maxPri int
	res    int64
	units  int
	allocs int
	age    int64
}

func (c victimCost) less(o victimCost) bool {
	switch {
	case c.maxPri != o.maxPri:
		return c.maxPri < o.maxPri
	case c.res != o.res:
		return c.res < o.res
	case c.units != o.units:
		return c.units < o.units
	case c.allocs != o.allocs:
		return c.allocs < o.allocs
	}
	return c.age < o.age
}

// victimUnit is what one eviction choice takes: a lone alloc, a surplus
// member of an elastic gang above its min, or a whole gang (every live
// member, on every node).
type victimUnit struct {
	local []*api.Allocation // the unit's allocs on the node examined
	all   []*api.Allocation // every alloc the unit evicts
	cost  victimCost
}

// preempt looks for the node where evicting the cheapest set of
// lower-priority victims (victimCost) lets the group fit. It returns the
// scored candidate and the victims (gang members on other nodes
// included), leaving every node's usage and the plan unchanged: evict
// releases the victims, recordEvictions writes them to the plan.
func (s *sched) preempt(tc *tgCtx, nodes []*nodeState, prevNode string) (*cand, []*api.Allocation) {
	var best *cand
	var bestVictims []*api.Allocation
	var bestCost victimCost
	examined := 0
	for i, ns := range nodes {
		if examined >= maxPreemptNodes || i >= maxPreemptVisits || s.err != nil {
			break
		}
		if !s.eligible(tc, ns) {
			continue
		}
		units := s.victimUnits(ns)
		if len(units) == 0 {
			continue
		}
		examined++
		order := slices.Clone(ns.allocs) // probing below reorders the list
		victims, cost, ok := s.cheapestOn(tc, ns, units)
		if ok && (best == nil || !bestCost.less(cost)) && s.reclaimOK(tc, victims) {
			for _, v := range victims {
				if v.NodeID == ns.node.ID {
					ns.removeAlloc(v, s.job)
				}
			}
			picks, dim := s.fits(tc, ns)
			if dim == "" {
				// Equal costs: the better scored node.
				c := s.score(tc, ns, picks, prevNode, tc.tg.Count)
				if best == nil || cost.less(bestCost) || c.score > best.score {
					best, bestVictims, bestCost = &c, victims, cost
				}
			}
			for _, v := range victims {
				if v.NodeID == ns.node.ID {
					ns.addAlloc(v, s.job)
				}
			}
		}
		ns.allocs = order
	}
	if best != nil {
		tc.cands = append(tc.cands[:0], *best)
		best = &tc.cands[0]
	}
	return best, bestVictims
}

// cheapestOn picks the cheapest set of units whose eviction lets the
// group fit on ns. Units are taken cheapest first until the group fits,
// which fixes the lowest highest priority p that can make room; then the
// cheaper of (a) those units pruned back most expensive first and (b) the
// cheapest single unit of priority p or lower that frees enough alone.
// The node's usage is restored (its alloc order is the caller's to
// restore).
func (s *sched) cheapestOn(tc *tgCtx, ns *nodeState, units []victimUnit) ([]*api.Allocation, victimCost, bool) {
	sort.SliceStable(units, func(i, j int) bool { return units[i].cost.less(units[j].cost) })
	fit := func() bool { _, dim := s.fits(tc, ns); return dim == "" }
	remove := func(u *victimUnit) {
		for _, a := range u.local {
			ns.removeAlloc(a, s.job)
		}
	}
	restore := func(u *victimUnit) {
		for _, a := range u.local {
			ns.addAlloc(a, s.job)
		}
	}
	// With fair shares, a unit whose eviction (with those taken before it)
	// would drop its queue below its share is passed over (skipped).
	var skipped []bool
	var taken []*victimUnit
	k, ok := 0, false
	for k < len(units) && !ok {
		if !s.reclaimAdmits(taken, &units[k]) {
			if skipped == nil {
				skipped = make([]bool, len(units))
			}
			skipped[k] = true
			k++
			continue
		}
		remove(&units[k])
		taken = append(taken, &units[k])
		k++
		ok = fit()
	}
	if !ok {
		for i := range units[:k] {
			if skipped == nil || !skipped[i] {
				restore(&units[i])
			}
		}
		return nil, victimCost{}, false
	}
	tier := k // units[:tier]: every unit of priority p or lower
	for tier < len(units) && units[tier].cost.maxPri == units[k-1].cost.maxPri {
		tier++
	}
	// (a) Prune: give back every unit the group can do without, the most
	// expensive first.
	chosen := make([]bool, k)
	for i := k - 1; i >= 0; i-- {
		if skipped != nil && skipped[i] {
			continue
		}
		restore(&units[i])
		if fit() {
			continue
		}
		remove(&units[i])
		chosen[i] = true
	}
	var set []*victimUnit
	for i := range chosen {
		if chosen[i] {
			set = append(set, &units[i])
			restore(&units[i])
		}
	}
	victims, cost := s.victimSet(set)
	// (b) One unit alone, when cheaper.
	for i := 0; i < tier; i++ {
		u := &units[i]
		if !u.cost.less(cost) || !s.reclaimAdmits(nil, u) {
			continue
		}
		remove(u)
		if fit() {
			victims, cost = s.victimSet([]*victimUnit{u})
		}
		restore(u)
	}
	return victims, cost, true
}

// victimSet merges units into the allocs they evict (each once) and
// their cost.
func (s *sched) victimSet(units []*victimUnit) ([]*api.Allocation, victimCost) {
	n, gang := 0, false
	for _, u := range units {
		n += len(u.all)
		gang = gang || len(u.all) > 1
	}
	out := make([]*api.Allocation, 0, n)
	var seen map[string]bool
	if gang { // a whole gang may hold members also offered alone
		seen = make(map[string]bool, n)
	}
	for _, u := range units {
		for _, a := range u.all {
			if seen == nil || !seen[a.ID] {
				if seen != nil {
					seen[a.ID] = true
				}
				out = append(out, a)
			}
		}
	}
	c := s.allocsCost(out)
	c.units = len(units)
	return out, c
}

// allocsCost is the cost of evicting allocs (units left at 1).
func (s *sched) allocsCost(allocs []*api.Allocation) victimCost {
	c := victimCost{units: 1, allocs: len(allocs)}
	now := s.opts.Now.UnixNano()
	for _, a := range allocs {
		c.maxPri = max(c.maxPri, allocPriority(a))
		c.res += allocWeight(a)
		if a.CreateTime > 0 && now > a.CreateTime {
			c.age += now - a.CreateTime
		}
	}
	return c
}

// allocWeight is an alloc's resources as one number: devices weigh
// deviceCostWeight each, then MHz of CPU and MB of memory.
func allocWeight(a *api.Allocation) int64 {
	r := a.AllocatedResources
	if r == nil {
		return 0
	}
	var w int64
	for _, t := range r.Tasks { // Comparable's cpu and memory, with the devices
		w += t.Cpu.CpuShares + t.Memory.MemoryMB
		for _, d := range t.Devices {
			w += int64(len(d.DeviceIDs)) * deviceCostWeight
		}
	}
	return w
}

// victimUnits lists what may be evicted from ns for the job being placed:
// allocs of other jobs at least preemptPriorityDelta lower in priority
// that are not protected (preemptible = false, younger than min_runtime).
// A gang member is a unit alone only while its gang stays at or above its
// min without it (an elastic gang's surplus); otherwise the unit is the
// whole gang, every live member on every node, and only when none of them
// is protected or too high in priority.
//
// The units and their one-alloc slices live in scratch buffers reused for
// every node (victimSet copies what it returns).
func (s *sched) victimUnits(ns *nodeState) []victimUnit {
	units := s.unitBuf[:0]
	singles := s.singleBuf[:0]
	if cap(singles) < len(ns.allocs) {
		singles = make([]*api.Allocation, 0, len(ns.allocs)) // never grown below: the unit slices stay put
	}
	single := func(a *api.Allocation) victimUnit {
		singles = append(singles, a)
		one := singles[len(singles)-1 : len(singles) : len(singles)]
		return victimUnit{local: one, all: one, cost: s.allocsCost(one)}
	}
	defer func() { s.unitBuf, s.singleBuf = units[:0], singles[:0] }()
	var gangs []*victimGang
	var local map[*victimGang][]*api.Allocation
	for _, a := range ns.allocs {
		if !s.evictable(a) {
			continue
		}
		if g := s.victimGangOf(a); g != nil {
			if local == nil {
				local = map[*victimGang][]*api.Allocation{}
			}
			if _, ok := local[g]; !ok {
				gangs = append(gangs, g)
			}
			local[g] = append(local[g], a)
			continue
		}
		units = append(units, single(a))
	}
	for _, g := range gangs {
		mine := local[g]
		live := s.gangLive(g)
		surplus := min(max(len(live)-g.min, 0), len(mine))
		// The biggest members are the surplus offered alone.
		sort.SliceStable(mine, func(i, j int) bool { return allocWeight(mine[i]) > allocWeight(mine[j]) })
		for _, a := range mine[:surplus] {
			units = append(units, single(a))
		}
		if surplus == len(mine) {
			continue
		}
		whole := true
		for _, m := range live {
			if !s.evictable(m) {
				whole = false
				break
			}
		}
		if whole {
			units = append(units, victimUnit{local: mine[surplus:], all: live, cost: s.allocsCost(live)})
		}
	}
	return units
}

// evictable reports whether a may be preempted for the job being placed:
// by priority within a queue, by fair share across queues (reclaim.go).
func (s *sched) evictable(a *api.Allocation) bool {
	if a.JobID == s.job.ID && a.Namespace == s.job.Namespace {
		return false
	}
	if s.relaxedPreempt { // explain_pending.go: what would make room, protected or not
		if s.crossQueue(a) {
			return s.reclaimable(a) && s.inExplainQueue(a)
		}
		return allocPriority(a) < s.job.Priority && s.inExplainQueue(a)
	}
	if s.crossQueue(a) { // a reclaim (reclaim.go): by fair share, not priority
		return s.reclaimable(a) && !preemptProtected(a, s.opts.Now.UnixNano())
	}
	if allocPriority(a) > s.job.Priority-preemptPriorityDelta {
		return false
	}
	return !preemptProtected(a, s.opts.Now.UnixNano())
}

// preemptProtected reports whether the alloc's job protects it from
// preemption at now: preemptible = false, or the alloc has run less than
// the job's min_runtime (an alloc without a CreateTime counts as old).
func preemptProtected(a *api.Allocation, now int64) bool {
	j := a.Job
	if j == nil {
		return false
	}
	if j.Preemptible != nil && !*j.Preemptible {
		return true
	}
	return j.MinRuntime > 0 && a.CreateTime > 0 && now-a.CreateTime < int64(j.MinRuntime)
}

// victimGang is a gang of another job as preemption sees it: its live
// members when the pass first read them and the fewest it may run with.
type victimGang struct {
	min     int
	members []*api.Allocation
}

// allocGangID returns the gang an alloc belongs to (its AllocGang ID, else
// its job's gang for the group) and the gang's spec; "" when none.
func allocGangID(a *api.Allocation) (string, *api.Gang) {
	id := ""
	if a.Gang != nil {
		id = a.Gang.ID
	}
	var g *api.Gang
	if a.Job != nil {
		var gid string
		g, gid = a.Job.GangOf(a.Job.LookupTaskGroup(a.TaskGroup))
		if id == "" {
			id = gid
		}
	}
	return id, g
}

// victimGangOf returns the gang of a (read once per pass), or nil.
func (s *sched) victimGangOf(a *api.Allocation) *victimGang {
	id, spec := allocGangID(a)
	if id == "" {
		return nil
	}
	key := a.Namespace + "\x00" + a.JobID + "\x00" + id
	if g, ok := s.victimGangs[key]; ok {
		return g
	}
	allocs, err := s.st.AllocsByJob(a.Namespace, a.JobID)
	if err != nil {
		s.err = err
		return nil
	}
	g := &victimGang{}
	for _, m := range allocs {
		if m.TerminalStatus() {
			continue
		}
		if mid, _ := allocGangID(m); mid == id {
			g.members = append(g.members, m)
		}
	}
	g.min = gangMin(a, id, spec)
	if s.victimGangs == nil {
		s.victimGangs = map[string]*victimGang{}
	}
	s.victimGangs[key] = g
	return g
}

// gangMin is the fewest members a's gang may run with: its Min, else
// every member (the group's count, or every group's for a job gang),
// else the size it was placed with.
func gangMin(a *api.Allocation, id string, spec *api.Gang) int {
	n := 0
	switch {
	case spec != nil && spec.Min > 0:
		n = spec.Min
	case spec != nil && id == api.GangJobWide:
		for _, tg := range a.Job.TaskGroups {
			n += tg.Count
		}
	case spec != nil:
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			n = tg.Count
		}
	case a.Gang != nil:
		n = a.Gang.Size
	}
	return max(n, 1)
}

// gangLive returns the gang's members not stopped by this plan.
func (s *sched) gangLive(g *victimGang) []*api.Allocation {
	out := make([]*api.Allocation, 0, len(g.members))
	for _, m := range g.members {
		if !s.stopped[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// evict releases the victims preempt chose from their nodes' usage (any
// node: a gang's members) and marks them stopped, journaled so a rollback
// undoes it; recordEvictions then writes them to the plan.
//
// The victims' nodes have room again, so every group looks at them anew
// (a whole gang's members on other nodes serve the next placements
// instead of more evictions).
func (s *sched) evict(victims []*api.Allocation) {
	for _, v := range victims {
		ns := s.byID[v.NodeID]
		if ns != nil && ns.loaded {
			s.removeFrom(ns, v)
		}
		s.markStopped(v)
		if ns == nil {
			continue
		}
		for _, tc := range s.groups {
			if ns.pos < len(tc.skip) {
				s.unskipNode(tc, ns.pos)
			}
		}
	}
}

// eligible reports whether the group may run on ns at all (class and
// node checks, resources aside) and loads the node's usage when it may:
// the first step of every search over nodes with room to make.
func (s *sched) eligible(tc *tgCtx, ns *nodeState) bool {
	if ok, _ := s.classOK(tc, ns); !ok {
		return false
	}
	if ok, _ := s.nodeOK(tc, ns); !ok {
		return false
	}
	s.load(ns)
	return true
}

// recordEvictions adds the victims (already released by evict) to the
// plan as preempted by a, each on its own node's NodePreemptions. It is
// the one place preemptions enter the plan (a gang or all-at-once
// attempt calls it only for placements it keeps).
func (s *sched) recordEvictions(a *api.Allocation, victims []*api.Allocation) {
	d := s.annotate(a.TaskGroup)
	for _, v := range victims {
		c := v.Copy()
		c.DesiredStatus = api.AllocDesiredStatusEvict
		c.DesiredDescription = "preempted by alloc " + a.ID
		c.PreemptedByAllocation = a.ID
		c.ModifyTime = s.opts.Now.UnixNano()
		if s.plan.NodePreemptions == nil {
			s.plan.NodePreemptions = map[string][]*api.Allocation{}
		}
		s.plan.NodePreemptions[v.NodeID] = append(s.plan.NodePreemptions[v.NodeID], c)
		a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
		s.plan.Annotations.PreemptedAllocs = append(s.plan.Annotations.PreemptedAllocs, v.Stub())
		d.Preemptions++
	}
}
