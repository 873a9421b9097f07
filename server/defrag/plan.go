package defrag

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
	"github.com/drover/drover/server/scheduler"
)

// MetaMaxDisruption is the job meta key that overrides Budget.PerJob for
// one job: how many of its allocs (a gang counts once) one round may move.
const MetaMaxDisruption = "max_disruption"

// Input is what a round plans over.
type Input struct {
	// Nodes are every node; only ready ones give or take allocs.
	Nodes []*api.Node
	// Allocs are the live allocs (any node). Each has its Job, or the job
	// is in Jobs.
	Allocs []*api.Allocation
	// Jobs finds an alloc's job when the alloc carries none (key
	// "namespace/id"); may be nil.
	Jobs map[string]*api.Job
	// Pending is the work that cannot place now.
	Pending []*Pending
	Now     time.Time
	Budget  Budget
	// Pinned are allocs that must not move (a destination the scheduler
	// refused for them, say).
	Pinned map[string]bool
}

// Budget bounds the disruption of one round.
type Budget struct {
	// PerJob is how many allocs of one job may move (a gang counts
	// once); 0 means 1. A job's meta max_disruption overrides it.
	PerJob int
	// PerQueue is how many allocs of one queue may move; 0: no bound.
	PerQueue int
}

// Pending is one group with allocs left to place.
type Pending struct {
	Job   *api.Job
	Group string
	// Count is how many allocs are still to place.
	Count int
	// Gang: all Count or none.
	Gang bool
	// Ask is one alloc's cpu (MHz), memory, disk and whole cores.
	Ask capacity.Vector
	// Devices are one alloc's device asks (whole instances).
	Devices []DeviceAsk
}

// DeviceAsk asks Count whole instances of devices matching Name
// ("gpu", "nvidia/gpu", "nvidia/gpu/H100").
type DeviceAsk struct {
	Name  string
	Count int
}

// Name is "job.group", with "namespace/" before it outside the default
// namespace.
func (p *Pending) Name() string {
	n := p.Job.ID + "." + p.Group
	if p.Job.Namespace != "" && p.Job.Namespace != api.DefaultNamespace {
		n = p.Job.Namespace + "/" + n
	}
	return n
}

func (p *Pending) gpus() int {
	n := 0
	for _, d := range p.Devices {
		n += d.Count
	}
	return n
}

// Move is one alloc to move from one node to another.
type Move struct {
	Alloc    *api.Allocation
	From, To string
	Why      string
}

// Plan is a round's outcome.
type Plan struct {
	Moves []Move
	// Unblocks are the pending groups the moves make room for
	// (Pending.Name).
	Unblocks []string
	// Freed are the nodes the moves make room on, in the order freed.
	Freed []string
}

type ledger struct {
	node   *api.Node
	cap    *capacity.Node
	vec    map[string]capacity.Vector // what each counted alloc (or reserved ask) holds
	allocs map[string]*api.Allocation // the movable candidates counted here
}

type undo struct {
	l     *ledger
	id    string
	a     *api.Allocation // nil for a reserved ask
	v     capacity.Vector
	added bool
}

type planner struct {
	in      *Input
	nodes   []*ledger
	byID    map[string]*ledger
	gangs   map[string][]*api.Allocation
	moved   map[string]bool
	frozen  map[string]bool
	jobUsed map[string]int
	qUsed   map[string]int
	log     []undo
	plan    Plan
	seq     int
}

// Compute computes the round's plan (see the package doc). It never
// moves an alloc onto a node being freed, a gang member without its whole
// gang, an alloc of a system job, one younger than its job's min_runtime,
// or beyond the budgets.
func Compute(in *Input) *Plan {
	p := &planner{in: in, byID: map[string]*ledger{}, gangs: map[string][]*api.Allocation{},
		moved: map[string]bool{}, frozen: map[string]bool{}, jobUsed: map[string]int{}, qUsed: map[string]int{}}
	nodes := slices.Clone(in.Nodes)
	slices.SortFunc(nodes, func(a, b *api.Node) int { return cmp.Compare(a.ID, b.ID) })
	for _, n := range nodes {
		l := &ledger{node: n, cap: capacity.NewNode(n), vec: map[string]capacity.Vector{}, allocs: map[string]*api.Allocation{}}
		p.nodes = append(p.nodes, l)
		p.byID[n.ID] = l
	}
	for _, a := range in.Allocs {
		l := p.byID[a.NodeID]
		if l == nil || a.TerminalStatus() {
			continue
		}
		v := capacity.AllocVector(a.AllocatedResources)
		l.cap.Add(&v)
		l.vec[a.ID] = v
		l.allocs[a.ID] = a
		if a.Gang != nil {
			k := a.Namespace + "/" + a.JobID + "/" + a.Gang.ID
			p.gangs[k] = append(p.gangs[k], a)
		}
	}
	p.log = nil
	pend := slices.Clone(in.Pending)
	slices.SortStableFunc(pend, func(a, b *Pending) int {
		if c := cmp.Compare(b.Job.Priority, a.Job.Priority); c != 0 {
			return c
		}
		if c := cmp.Compare(b.gpus(), a.gpus()); c != 0 {
			return c
		}
		return cmp.Compare(a.Name(), b.Name())
	})
	for _, pe := range pend {
		p.pending(pe)
	}
	return &p.plan
}

type mark struct {
	log, moves, freed int
	moved             map[string]bool
	frozen            map[string]bool
	jobUsed, qUsed    map[string]int
}

func (p *planner) save() mark {
	return mark{log: len(p.log), moves: len(p.plan.Moves), freed: len(p.plan.Freed),
		moved: cloneMap(p.moved), frozen: cloneMap(p.frozen), jobUsed: cloneMap(p.jobUsed), qUsed: cloneMap(p.qUsed)}
}

func (p *planner) restore(m mark) {
	for i := len(p.log) - 1; i >= m.log; i-- {
		u := p.log[i]
		if u.added {
			u.l.cap.Sub(&u.v)
			delete(u.l.vec, u.id)
			delete(u.l.allocs, u.id)
		} else {
			u.l.cap.Add(&u.v)
			u.l.vec[u.id] = u.v
			if u.a != nil {
				u.l.allocs[u.id] = u.a
			}
		}
	}
	p.log = p.log[:m.log]
	p.plan.Moves = p.plan.Moves[:m.moves]
	p.plan.Freed = p.plan.Freed[:m.freed]
	p.moved, p.frozen, p.jobUsed, p.qUsed = m.moved, m.frozen, m.jobUsed, m.qUsed
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (p *planner) add(l *ledger, id string, a *api.Allocation, v capacity.Vector) {
	l.cap.Add(&v)
	l.vec[id] = v
	if a != nil {
		l.allocs[id] = a
	}
	p.log = append(p.log, undo{l: l, id: id, a: a, v: v, added: true})
}

func (p *planner) remove(l *ledger, a *api.Allocation) {
	v := l.vec[a.ID]
	l.cap.Sub(&v)
	delete(l.vec, a.ID)
	delete(l.allocs, a.ID)
	p.log = append(p.log, undo{l: l, id: a.ID, a: a, v: v})
}

// pending tries to make room for every alloc of pe; a gang's are all
// placed or none.
func (p *planner) pending(pe *Pending) {
	start := p.save()
	helped := false
	for i := 0; i < pe.Count; i++ {
		if l, picks := p.fitsSomewhere(pe); l != nil {
			p.reserve(l, pe, picks)
			continue
		}
		if !p.freeOne(pe) {
			if pe.Gang {
				p.restore(start)
				return
			}
			break
		}
		helped = true
	}
	if helped {
		p.plan.Unblocks = append(p.plan.Unblocks, pe.Name())
	}
}

// fitsSomewhere returns a node (not frozen) where one alloc of pe fits
// now, with the device instances it would take.
func (p *planner) fitsSomewhere(pe *Pending) (*ledger, []string) {
	for _, l := range p.nodes {
		if p.frozen[l.node.ID] || !feasible(pe.Job, l.node) {
			continue
		}
		if picks, ok := fitsAsk(l, pe); ok {
			return l, picks
		}
	}
	return nil, nil
}

// reserve counts one alloc of pe on l, so later asks and moves see the
// room taken.
func (p *planner) reserve(l *ledger, pe *Pending, picks []string) {
	v := pe.Ask
	v.Devices = picks
	if v.NumCores > 0 {
		v.Cores, v.NumCores = l.cap.FreeCores(v.NumCores), 0
	}
	p.seq++
	p.add(l, "pending:"+strconv.Itoa(p.seq), nil, v)
}

// fitsAsk reports whether one alloc of pe fits on l, and the instances
// it would take.
func fitsAsk(l *ledger, pe *Pending) ([]string, bool) {
	v := pe.Ask
	v.Devices, v.Shares, v.Ports = nil, nil, nil
	if l.cap.Fits(&v) != nil {
		return nil, false
	}
	var picks []string
	for _, d := range pe.Devices {
		got := freeInstances(l, func(g *api.NodeDeviceResource) bool { return g.Matches(d.Name) }, d.Count, picks)
		if got == nil {
			return nil, false
		}
		picks = append(picks, got...)
	}
	return picks, true
}

// freeInstances returns n free instances of l's device groups that match,
// not in taken, or nil.
func freeInstances(l *ledger, match func(*api.NodeDeviceResource) bool, n int, taken []string) []string {
	if n == 0 {
		return []string{}
	}
	r := l.node.NodeResources
	if r == nil {
		return nil
	}
	var got []string
	for _, g := range r.Devices {
		if !match(g) {
			continue
		}
		for _, inst := range g.Instances {
			if !inst.Healthy {
				continue
			}
			if l.cap.DeviceUsed(inst.ID) || slices.Contains(taken, inst.ID) || slices.Contains(got, inst.ID) {
				continue
			}
			got = append(got, inst.ID)
			if len(got) == n {
				return got
			}
		}
	}
	return nil
}

// unit is what moves together: one alloc, or every live member of a
// gang.
type unit struct {
	allocs []*api.Allocation
	job    *api.Job
	gpus   int // device instances held on the node being freed
	cpu    int64
}

// freeOne makes room for one alloc of pe on one node by moving the
// fewest units; it commits the cheapest such node's moves and reports
// whether there was one.
func (p *planner) freeOne(pe *Pending) bool {
	type option struct {
		l     *ledger
		units []*unit
		cost  [2]int
	}
	var best *option
	for _, l := range p.nodes {
		if p.frozen[l.node.ID] || !l.node.Ready() || !feasible(pe.Job, l.node) {
			continue
		}
		m := p.save()
		units, ok := p.tryFree(pe, l)
		p.restore(m)
		if !ok {
			continue
		}
		moved := 0
		for _, u := range units {
			moved += len(u.allocs)
		}
		o := &option{l: l, units: units, cost: [2]int{len(units), moved}}
		if best == nil || o.cost[0] < best.cost[0] || (o.cost[0] == best.cost[0] && o.cost[1] < best.cost[1]) {
			best = o
		}
	}
	if best == nil {
		return false
	}
	m := p.save()
	if _, ok := p.tryFree(pe, best.l); !ok {
		p.restore(m) // cannot happen: the same inputs as the probe
		return false
	}
	return true
}

// tryFree moves units off l until one alloc of pe fits there, finds each
// moved alloc a destination, reserves the ask on l and freezes l. It
// changes the ledgers even when it fails: callers restore.
func (p *planner) tryFree(pe *Pending, l *ledger) ([]*unit, bool) {
	units := p.units(l)
	if len(units) == 0 {
		return nil, false
	}
	// Take units off, most GPUs first, until the ask fits.
	var chosen []*unit
	m := p.save()
	fits := false
	for _, u := range units {
		for _, a := range u.allocs {
			p.remove(p.byID[a.NodeID], a)
		}
		chosen = append(chosen, u)
		if _, ok := fitsAsk(l, pe); ok {
			fits = true
			break
		}
	}
	p.restore(m)
	if !fits {
		return nil, false
	}
	// Put back what was not needed (last taken first).
	for i := len(chosen) - 1; i >= 0 && len(chosen) > 1; i-- {
		m := p.save()
		without := slices.Delete(slices.Clone(chosen), i, i+1)
		for _, u := range without {
			for _, a := range u.allocs {
				p.remove(p.byID[a.NodeID], a)
			}
		}
		_, ok := fitsAsk(l, pe)
		p.restore(m)
		if ok {
			chosen = without
		}
	}
	// Budgets.
	for _, u := range chosen {
		jk, q := u.job.Namespace+"/"+u.job.ID, api.JobQueue(u.job)
		if p.jobUsed[jk]+1 > p.jobBudget(u.job) {
			return nil, false
		}
		if b := p.in.Budget.PerQueue; b > 0 && p.qUsed[q]+len(u.allocs) > b {
			return nil, false
		}
		p.jobUsed[jk]++
		p.qUsed[q] += len(u.allocs)
	}
	// Take them off, reserve the ask, then find each a destination.
	for _, u := range chosen {
		for _, a := range u.allocs {
			p.remove(p.byID[a.NodeID], a)
		}
	}
	picks, ok := fitsAsk(l, pe)
	if !ok {
		return nil, false
	}
	p.frozen[l.node.ID] = true
	p.reserve(l, pe, picks)
	why := fmt.Sprintf("frees %s for %s", nodeName(l.node), pe.Name())
	if g := pe.gpus(); g > 0 {
		why += fmt.Sprintf(" (%d GPU)", g)
	}
	for _, u := range chosen {
		for _, a := range u.allocs {
			to, v := p.destination(a, u.job)
			if to == nil {
				return nil, false
			}
			p.add(to, a.ID, a, v)
			p.moved[a.ID] = true
			p.plan.Moves = append(p.plan.Moves, Move{Alloc: a, From: a.NodeID, To: to.node.ID, Why: why})
		}
	}
	p.plan.Freed = append(p.plan.Freed, l.node.ID)
	return chosen, true
}

func (p *planner) jobBudget(j *api.Job) int {
	if j.MaxDisruption > 0 {
		return j.MaxDisruption
	}
	if s := j.Meta[MetaMaxDisruption]; s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			return n
		}
	}
	if p.in.Budget.PerJob > 0 {
		return p.in.Budget.PerJob
	}
	return 1
}

// units are l's movable units, most GPUs on l first (then most CPU, then
// by alloc ID).
func (p *planner) units(l *ledger) []*unit {
	seen := map[string]bool{}
	var out []*unit
	ids := make([]string, 0, len(l.allocs))
	for id := range l.allocs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := l.allocs[id]
		if seen[a.ID] {
			continue
		}
		job := p.job(a)
		if !p.movable(a, job, l.node.ID) {
			continue
		}
		u := &unit{job: job, allocs: []*api.Allocation{a}}
		if a.Gang != nil {
			members := p.gangs[a.Namespace+"/"+a.JobID+"/"+a.Gang.ID]
			ok := true
			for _, mb := range members {
				if mb.ID == a.ID {
					continue
				}
				ml := p.byID[mb.NodeID]
				if ml == nil || p.frozen[mb.NodeID] || !p.movable(mb, job, l.node.ID) {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			u.allocs = slices.Clone(members)
		}
		for _, mb := range u.allocs {
			seen[mb.ID] = true
			if mb.NodeID == l.node.ID {
				v := l.vec[mb.ID]
				u.gpus += len(v.Devices)
				u.cpu += v.CPU
			}
		}
		out = append(out, u)
	}
	slices.SortStableFunc(out, func(a, b *unit) int {
		if c := cmp.Compare(b.gpus, a.gpus); c != 0 {
			return c
		}
		return cmp.Compare(b.cpu, a.cpu)
	})
	return out
}

func (p *planner) job(a *api.Allocation) *api.Job {
	if a.Job != nil {
		return a.Job
	}
	return p.in.Jobs[a.Namespace+"/"+a.JobID]
}

// movable reports whether a may move in this round.
func (p *planner) movable(a *api.Allocation, job *api.Job, freeing string) bool {
	if job == nil || p.moved[a.ID] || p.in.Pinned[a.ID] || a.TerminalStatus() {
		return false
	}
	if job.Type != api.JobTypeBatch && job.Type != api.JobTypeService {
		return false
	}
	if a.ClientStatus != api.AllocClientStatusRunning && a.ClientStatus != api.AllocClientStatusPending {
		return false
	}
	if mr := job.MinRuntimeOf(a.TaskGroup); mr > 0 && a.CreateTime > 0 && p.in.Now.UnixNano()-a.CreateTime < int64(mr) {
		return false
	}
	if a.Gang != nil {
		if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil {
			if g, _ := job.GangOf(tg); g != nil && g.Topology != nil {
				return false // its members' placement is a topology choice: not ours to redo
			}
		}
	}
	l := p.byID[a.NodeID]
	if l == nil || (p.frozen[a.NodeID] && a.NodeID != freeing) {
		return false
	}
	v := l.vec[a.ID]
	if len(v.Shares) > 0 || len(staticPorts(a.AllocatedResources)) > 0 {
		return false
	}
	return true
}

// destination picks the node a moves to: a ready node its job may use,
// not frozen and not its own, where it fits, the tightest fit first (fewest
// free GPUs left, then the node with fewer GPUs, keeping big nodes for big
// asks, then least free CPU). It returns the vector a would hold there.
func (p *planner) destination(a *api.Allocation, job *api.Job) (*ledger, capacity.Vector) {
	var best *ledger
	var bestV capacity.Vector
	var bestKey [3]int64
	for _, l := range p.nodes {
		if l.node.ID == a.NodeID || p.frozen[l.node.ID] || !l.node.Ready() || !feasible(job, l.node) {
			continue
		}
		v, ok := moveVector(l, a)
		if !ok {
			continue
		}
		free, total := devices(l)
		key := [3]int64{int64(free - len(v.Devices)), int64(total), l.cap.CPU - l.cap.Used().CPU - v.CPU}
		if best == nil || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestV, bestKey = l, v, key
		}
	}
	return best, bestV
}

// devices counts l's device instances: free ones and all.
func devices(l *ledger) (free, total int) {
	r := l.node.NodeResources
	if r == nil {
		return 0, 0
	}
	for _, g := range r.Devices {
		for _, inst := range g.Instances {
			total++
			if !l.cap.DeviceUsed(inst.ID) {
				free++
			}
		}
	}
	return free, total
}

// moveVector is what a would hold on l: its amounts, as many cores, free
// instances of the same device groups; ok is false when that does not fit.
func moveVector(l *ledger, a *api.Allocation) (capacity.Vector, bool) {
	r := a.AllocatedResources
	var v capacity.Vector
	if r == nil {
		return v, l.cap.Fits(&v) == nil
	}
	v.DiskMB = r.Shared.DiskMB
	cores := 0
	var taken []string
	names := make([]string, 0, len(r.Tasks))
	for name := range r.Tasks {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := r.Tasks[name]
		v.CPU += t.Cpu.CpuShares
		v.MemoryMB += t.Memory.MemoryMB
		cores += len(t.Cpu.ReservedCores)
		for _, d := range t.Devices {
			got := freeInstances(l, func(g *api.NodeDeviceResource) bool {
				return g.Vendor == d.Vendor && g.Type == d.Type && g.Name == d.Name
			}, len(d.DeviceIDs), taken)
			if got == nil {
				return v, false
			}
			taken = append(taken, got...)
		}
	}
	v.Devices = taken
	v.NumCores = cores
	if l.cap.Fits(&v) != nil {
		return v, false
	}
	if cores > 0 {
		v.Cores, v.NumCores = l.cap.FreeCores(cores), 0
	}
	return v, true
}

func staticPorts(r *api.AllocatedResources) []int {
	if r == nil {
		return nil
	}
	var out []int
	add := func(nets []*api.NetworkResource) {
		for _, n := range nets {
			for _, p := range n.ReservedPorts {
				if p.Value > 0 {
					out = append(out, p.Value)
				}
			}
		}
	}
	add(r.Shared.Networks)
	for _, t := range r.Tasks {
		add(t.Networks)
	}
	return out
}

// feasible is the part of the scheduler's feasibility a move must keep:
// the job's datacenters and node pool. (Applying a move reruns the
// scheduler's full checks on the destination.)
func feasible(job *api.Job, n *api.Node) bool {
	return job != nil && scheduler.InScope(job, n)
}

func nodeName(n *api.Node) string {
	if n.Name != "" {
		return n.Name
	}
	return n.ID
}
