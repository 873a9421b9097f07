package scheduler

import (
	"slices"
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
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

// preemptor is the preemption stage: for a group that fits nowhere, the
// node where evicting the cheapest victim set (victimCost) makes room,
// by priority within a queue and by fair share across queues
// (reclaim.go). It reads the placer through preemptView and may probe a
// node's usage (take victims out, check the fit, put them back, restore
// the alloc order) but leaves it as it found it: the evictions are the
// placer's (placer.evict) and the plan's (output.recordEvictions). It
// keeps the queues' fair-share tally current as the pass places.
type preemptor struct {
	env  *passEnv
	room preemptView
	// victimGangs caches other jobs' gangs the search looked at; unitBuf
	// and singleBuf are its scratch buffers.
	victimGangs map[string]*victimGang
	unitBuf     []victimUnit
	singleBuf   []*api.Allocation
	// tally is what each queue holds as this pass places and evicts
	// (reclaim.go; nil without Options.FairShare).
	tally *fairshare.Tally
	// devAsk: the placement searched for asks for devices, so allocs
	// holding idle GPUs may be taken (idle.go); queues are the state's,
	// read once.
	devAsk bool
	queues map[string]*api.Queue
}

// preemptView is what the preemptor reads of the placer: the same
// feasibility checks and scores placement uses, and the plan's stops.
type preemptView interface {
	// eligible reports whether the group may run on ns, resources aside
	// (and loads the node's usage when it may).
	eligible(tc *tgCtx, ns *nodeState) bool
	// fits checks the group's resources on ns (with the queue limits when
	// quota is set): the device picks, or the exhausted dimension.
	fits(tc *tgCtx, ns *nodeState, quota bool) ([]devPick, string)
	score(tc *tgCtx, ns *nodeState, picks []devPick, prevNode string, desired int) cand
	// stopped reports whether this plan stops the alloc.
	stopped(id string) bool
}

// victimRule is which allocs a victim search may take. The zero value is
// the scheduler's rule: allocs of jobs at least preemptPriorityDelta lower
// in priority within the job's queue, of queues above their fair share
// across queues, never protected ones, with the queue limits checked.
// Relaxed is why pending's counterfactual search (explain_pending.go):
// every lower-priority alloc of another job, protected or not, without the
// queue-limit check, and only of queue's subtree when queue is set.
type victimRule struct {
	relaxed bool
	queue   string
}

// inQueue reports whether a counts against the rule's queue (itself or a
// queue below it); every alloc does when the rule names none.
func (r victimRule) inQueue(a *api.Allocation) bool {
	return r.queue == "" || inQueueTree(api.JobQueue(a.Job), r.queue)
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

// preempt looks, under rule, for the node where evicting the cheapest set
// of victims (victimCost) lets the group fit. It returns the scored
// candidate and the victims (gang members on other nodes included),
// leaving every node's usage and the plan unchanged: placer.evict
// releases the victims, output.recordEvictions writes them to the plan.
func (pr *preemptor) preempt(tc *tgCtx, nodes []*nodeState, prevNode string, rule victimRule) (cand, []*api.Allocation, bool) {
	job := pr.env.job
	pr.devAsk = !rule.relaxed && len(tc.devs) > 0
	defer func() { pr.devAsk = false }()
	var best cand
	found := false
	var bestVictims []*api.Allocation
	var bestCost victimCost
	examined := 0
	for i, ns := range nodes {
		if examined >= maxPreemptNodes || i >= maxPreemptVisits || pr.env.err != nil {
			break
		}
		if !pr.room.eligible(tc, ns) {
			continue
		}
		units := pr.victimUnits(ns, rule)
		if len(units) == 0 {
			continue
		}
		examined++
		order := slices.Clone(ns.allocs) // probing below reorders the list
		victims, cost, ok := pr.cheapestOn(tc, ns, units, rule)
		if ok && (!found || !bestCost.less(cost)) && pr.reclaimOK(tc, victims) {
			for _, v := range victims {
				if v.NodeID == ns.node.ID {
					ns.removeAlloc(v, job)
				}
			}
			picks, dim := pr.room.fits(tc, ns, !rule.relaxed)
			if dim == "" {
				// Equal costs: the better scored node.
				c := pr.room.score(tc, ns, picks, prevNode, tc.tg.Count)
				if !found || cost.less(bestCost) || c.score > best.score {
					best, bestVictims, bestCost, found = c, victims, cost, true
				}
			}
			for _, v := range victims {
				if v.NodeID == ns.node.ID {
					ns.addAlloc(v, job)
				}
			}
		}
		ns.allocs = order
	}
	return best, bestVictims, found
}

// cheapestOn picks the cheapest set of units whose eviction lets the
// group fit on ns. Units are taken cheapest first until the group fits,
// which fixes the lowest highest priority p that can make room; then the
// cheaper of (a) those units pruned back most expensive first and (b) the
// cheapest single unit of priority p or lower that frees enough alone.
// The node's usage is restored (its alloc order is the caller's to
// restore).
func (pr *preemptor) cheapestOn(tc *tgCtx, ns *nodeState, units []victimUnit, rule victimRule) ([]*api.Allocation, victimCost, bool) {
	job := pr.env.job
	sort.SliceStable(units, func(i, j int) bool { return units[i].cost.less(units[j].cost) })
	fit := func() bool { _, dim := pr.room.fits(tc, ns, !rule.relaxed); return dim == "" }
	remove := func(u *victimUnit) {
		for _, a := range u.local {
			ns.removeAlloc(a, job)
		}
	}
	restore := func(u *victimUnit) {
		for _, a := range u.local {
			ns.addAlloc(a, job)
		}
	}
	// With fair shares, a unit whose eviction (with those taken before it)
	// would drop its queue below its share is passed over (skipped).
	var skipped []bool
	var taken []*victimUnit
	k, ok := 0, false
	for k < len(units) && !ok {
		if !pr.reclaimAdmits(taken, &units[k]) {
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
	victims, cost := pr.victimSet(set)
	// (b) One unit alone, when cheaper.
	for i := 0; i < tier; i++ {
		u := &units[i]
		if !u.cost.less(cost) || !pr.reclaimAdmits(nil, u) {
			continue
		}
		remove(u)
		if fit() {
			victims, cost = pr.victimSet([]*victimUnit{u})
		}
		restore(u)
	}
	return victims, cost, true
}

// victimSet merges units into the allocs they evict (each once) and
// their cost.
func (pr *preemptor) victimSet(units []*victimUnit) ([]*api.Allocation, victimCost) {
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
	c := pr.allocsCost(out)
	c.units = len(units)
	return out, c
}

// allocsCost is the cost of evicting allocs (units left at 1).
func (pr *preemptor) allocsCost(allocs []*api.Allocation) victimCost {
	c := victimCost{maxPri: -1, units: 1, allocs: len(allocs)}
	now := pr.env.opts.Now.UnixNano()
	for _, a := range allocs {
		if pr.idleReclaimable(a) {
			// Idle GPUs are the cheapest room: below any priority.
			c.maxPri = max(c.maxPri, -1)
		} else {
			c.maxPri = max(c.maxPri, allocPriority(a))
		}
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

// victimUnits lists what rule lets evict from ns for the job being
// placed: by default allocs of other jobs at least preemptPriorityDelta
// lower in priority that are not protected (preemptible = false, younger
// than min_runtime).
// A gang member is a unit alone only while its gang stays at or above its
// min without it (an elastic gang's surplus); otherwise the unit is the
// whole gang, every live member on every node, and only when none of them
// is protected or too high in priority.
//
// The units and their one-alloc slices live in scratch buffers reused for
// every node (victimSet copies what it returns).
func (pr *preemptor) victimUnits(ns *nodeState, rule victimRule) []victimUnit {
	units := pr.unitBuf[:0]
	singles := pr.singleBuf[:0]
	if cap(singles) < len(ns.allocs) {
		singles = make([]*api.Allocation, 0, len(ns.allocs)) // never grown below: the unit slices stay put
	}
	single := func(a *api.Allocation) victimUnit {
		singles = append(singles, a)
		one := singles[len(singles)-1 : len(singles) : len(singles)]
		return victimUnit{local: one, all: one, cost: pr.allocsCost(one)}
	}
	defer func() { pr.unitBuf, pr.singleBuf = units[:0], singles[:0] }()
	var gangs []*victimGang
	var local map[*victimGang][]*api.Allocation
	for _, a := range ns.allocs {
		if !pr.evictable(a, rule) {
			continue
		}
		if g := pr.victimGangOf(a); g != nil {
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
		live := pr.gangLive(g)
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
			if !pr.evictable(m, rule) {
				whole = false
				break
			}
		}
		if whole {
			units = append(units, victimUnit{local: mine[surplus:], all: live, cost: pr.allocsCost(live)})
		}
	}
	return units
}

// evictable reports whether rule lets a be preempted for the job being
// placed: by priority within a queue, by fair share across queues
// (reclaim.go).
func (pr *preemptor) evictable(a *api.Allocation, rule victimRule) bool {
	job := pr.env.job
	if a.JobID == job.ID && a.Namespace == job.Namespace {
		return false
	}
	if pr.idleReclaimable(a) {
		return true
	}
	if rule.relaxed { // explain_pending.go: what would make room, protected or not
		if pr.crossQueue(a) {
			return pr.reclaimable(a) && rule.inQueue(a)
		}
		return allocPriority(a) < job.Priority && rule.inQueue(a)
	}
	if pr.crossQueue(a) { // a reclaim (reclaim.go): by fair share, not priority
		return pr.reclaimable(a) && !preemptProtected(a, pr.env.opts.Now.UnixNano())
	}
	if allocPriority(a) > job.Priority-preemptPriorityDelta {
		return false
	}
	return !preemptProtected(a, pr.env.opts.Now.UnixNano())
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
	mr := j.MinRuntimeOf(a.TaskGroup)
	return mr > 0 && a.CreateTime > 0 && now-a.CreateTime < int64(mr)
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
func (pr *preemptor) victimGangOf(a *api.Allocation) *victimGang {
	id, spec := allocGangID(a)
	if id == "" {
		return nil
	}
	key := a.Namespace + "\x00" + a.JobID + "\x00" + id
	if g, ok := pr.victimGangs[key]; ok {
		return g
	}
	allocs, err := pr.env.st.AllocsByJob(a.Namespace, a.JobID)
	if err != nil {
		pr.env.err = err
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
	if pr.victimGangs == nil {
		pr.victimGangs = map[string]*victimGang{}
	}
	pr.victimGangs[key] = g
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
func (pr *preemptor) gangLive(g *victimGang) []*api.Allocation {
	out := make([]*api.Allocation, 0, len(g.members))
	for _, m := range g.members {
		if !pr.room.stopped(m.ID) {
			out = append(out, m)
		}
	}
	return out
}
