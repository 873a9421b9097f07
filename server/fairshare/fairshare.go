package fairshare

import (
	"cmp"
	"slices"
	"time"

	"github.com/drover/drover/api"
)

// DefaultHalfLife is the usage history's half-life when Config.HalfLife
// is unset.
const DefaultHalfLife = time.Hour

// usageWeight scales the history correction of weights: a queue that used
// all of its siblings' past usage more than its weight expects has its
// weight halved (clamped to [0.5, 1.5] times the configured weight).
const usageWeight = 0.5

// Config tunes the fair-share calculation.
type Config struct {
	// HalfLife is how fast past usage is forgotten (default
	// DefaultHalfLife): usage from one half-life ago counts half.
	HalfLife time.Duration
	// EntryPenalty is the least past usage a queue is charged, as a
	// fraction of what its weight expects: 0 means the default 1 (a
	// queue's own idling earns it no credit: a new or returning queue's
	// weight is never raised, only its busier siblings' lowered); 2
	// charges a newcomer twice its expectation (it starts no better than
	// its most used sibling); negative disables it (idle time earns full
	// credit, up to 1.5 times the weight).
	EntryPenalty float64
}

func (c Config) halfLife() time.Duration {
	if c.HalfLife <= 0 {
		return DefaultHalfLife
	}
	return c.HalfLife
}

func (c Config) entryPenalty() float64 {
	switch {
	case c.EntryPenalty == 0:
		return 1
	case c.EntryPenalty < 0:
		return 0
	}
	return c.EntryPenalty
}

// Input is what a fair-share calculation reads. Maps are keyed by queue
// name; "" counts as api.DefaultQueue. A name not in Queues is a top
// queue of weight 1 (as is a queue whose parent is missing).
type Input struct {
	Queues []*api.Queue
	// Capacity is the cluster's: what ready nodes offer.
	Capacity api.QueueResources
	// Demand is what each queue's own jobs ask: their running allocs plus
	// their pending placements.
	Demand map[string]*api.QueueResources
	// Allocated is what each queue's own jobs' non-terminal allocs hold.
	Allocated map[string]*api.QueueResources
	// History is the decayed past usage (nil: none).
	History *History
}

// qnode is a queue in the calculation's tree. A queue with both its own
// jobs and children gets a pseudo child (self) for its own jobs.
type qnode struct {
	name      string
	self      bool // the pseudo child holding its parent's own jobs
	parent    *qnode
	children  []*qnode
	weight    float64
	priority  int
	guar      vec
	limit     vec
	ownDemand vec
	ownAlloc  vec
	demand    vec // subtree's, capped by limit and capacity
	alloc     vec // subtree's
	share     vec // subtree's
	hist      float64
	// demandGPU and demandModels: the subtree's raw GPU demand, total and
	// by model (to split a share by model; see space).
	demandGPU    float64
	demandModels map[string]float64
}

// Shares is the outcome of Compute: each queue's fair share, demand and
// allocation, for its subtree and for its own jobs.
type Shares struct {
	sp    *space
	nodes map[string]*qnode // by name (not the self pseudo nodes)
	own   map[string]*qnode // the node holding each queue's own jobs
	names []string
}

// Compute returns every queue's fair share (see the package doc for the
// math). It is deterministic: maps are read in sorted order.
func Compute(cfg Config, in Input) *Shares {
	sp := newSpace(in.Capacity)
	s := &Shares{sp: sp, nodes: map[string]*qnode{}, own: map[string]*qnode{}}
	root := &qnode{name: "", demand: sp.zero(), alloc: sp.zero(), share: sp.cap}
	get := func(name string) *qnode {
		if name == "" {
			name = api.DefaultQueue
		}
		n := s.nodes[name]
		if n == nil {
			n = &qnode{name: name, weight: 1, guar: sp.zero(), limit: sp.inf(), ownDemand: sp.zero(), ownAlloc: sp.zero()}
			s.nodes[name] = n
		}
		return n
	}
	queues := slices.Clone(in.Queues)
	slices.SortFunc(queues, func(a, b *api.Queue) int { return cmp.Compare(a.Name, b.Name) })
	for _, q := range queues {
		if q == nil {
			continue
		}
		n := get(q.Name)
		n.weight, n.priority = float64(q.EffectiveWeight()), q.Priority
		n.guar = sp.of(q.Guaranteed)
		if q.Limit != nil {
			n.limit = sp.of(q.Limit)
			for r := range n.limit {
				if n.limit[r] == 0 { // a zero field of a limit: no cap on it
					n.limit[r] = sp.cap[r] + 1
				}
			}
		}
	}
	for _, name := range sortedKeys(in.Demand) {
		n := get(name)
		d := in.Demand[name]
		n.ownDemand = n.ownDemand.add(sp.of(d))
		if d == nil {
			continue
		}
		for p := n.name; p != ""; p = api.ParentOf(p) {
			a := get(p)
			a.demandGPU += d.GPUs
			for m, k := range d.GPUsByModel {
				if a.demandModels == nil {
					a.demandModels = map[string]float64{}
				}
				a.demandModels[m] += k
			}
		}
	}
	for _, name := range sortedKeys(in.Allocated) {
		n := get(name)
		n.ownAlloc = n.ownAlloc.add(sp.of(in.Allocated[name]))
	}
	if in.History != nil {
		for name, h := range in.History.Level {
			if n := s.nodes[name]; n != nil {
				n.hist = h
			}
		}
	}
	s.names = sortedKeys(s.nodes)
	for _, name := range s.names {
		n := s.nodes[name]
		p := root
		if pn := s.nodes[api.ParentOf(name)]; pn != nil && api.ParentOf(name) != "" {
			p = pn
		}
		n.parent = p
		p.children = append(p.children, n)
	}
	for _, name := range s.names {
		n := s.nodes[name]
		s.own[name] = n
		if len(n.children) > 0 && (sp.dom(n.ownDemand) > 0 || sp.dom(n.ownAlloc) > 0) {
			self := &qnode{name: name, self: true, parent: n, weight: 1, guar: sp.zero(), limit: sp.inf(),
				ownDemand: n.ownDemand, ownAlloc: n.ownAlloc}
			n.children = append([]*qnode{self}, n.children...)
			n.ownDemand, n.ownAlloc = sp.zero(), sp.zero()
			s.own[name] = self
		}
	}
	s.total(root)
	s.split(cfg, root, sp.cap)
	s.leftover(root)
	s.sum(root)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// total fills demand (capped by the limit and the capacity) and alloc of
// n's subtree.
func (s *Shares) total(n *qnode) {
	d, a := s.sp.zero(), s.sp.zero()
	if n.ownDemand != nil {
		d, a = d.add(n.ownDemand), a.add(n.ownAlloc)
	}
	for _, c := range n.children {
		s.total(c)
		d, a = d.add(c.demand), a.add(c.alloc)
	}
	if n.limit != nil {
		d = vmin(d, n.limit)
	}
	n.demand, n.alloc = vmin(d, s.sp.cap), a
}

// split divides box (n's share) among n's children: guarantees first,
// then water-filling by priority groups (highest first) and effective
// weight; then it recurses.
//
// Invariants: Σ children's shares <= box per dimension; each child's
// share <= its demand; each child gets min(guarantee, demand) whenever
// the children's guarantees fit in box.
func (s *Shares) split(cfg Config, n *qnode, box vec) {
	kids := n.children
	if len(kids) == 0 {
		return
	}
	sp := s.sp
	base := make([]vec, len(kids))
	sum := sp.zero()
	for i, c := range kids {
		base[i] = vmin(c.guar, c.demand)
		sum = sum.add(base[i])
	}
	for r := range sum {
		if sum[r] > box[r] && sum[r] > 0 { // guarantees overcommitted: scale down
			f := box[r] / sum[r]
			for i := range base {
				base[i][r] *= f
			}
		}
	}
	free := box.sub(sum).clampZero()
	for r := range sum {
		if sum[r] > box[r] {
			free[r] = 0
		}
	}
	rate := s.rates(cfg, kids)
	order := make([]int, len(kids))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(kids[b].priority, kids[a].priority) })
	for lo := 0; lo < len(order); {
		hi := lo
		for hi < len(order) && kids[order[hi]].priority == kids[order[lo]].priority {
			hi++
		}
		var f filler
		f.capacity(sp, free)
		for _, i := range order[lo:hi] {
			f.member(sp, kids[i].demand.sub(base[i]).clampZero(), rate[i])
		}
		for j, extra := range f.run() {
			i := order[lo+j]
			base[i] = base[i].add(extra)
			free = free.sub(extra).clampZero()
		}
		lo = hi
	}
	spread(sp, kids, base, free, rate)
	for i, c := range kids {
		c.share = base[i]
		s.split(cfg, c, c.share)
	}
}

// spread hands what the filling left of box to the children one
// dimension at a time, water-filled by rate up to each child's demand in
// that dimension. The filling leaves some when a child's demand couples
// dimensions (GPUs with CPU) and one of them ran out: the parent's share
// still belongs to its subtree, so the children's shares add up to it in
// every dimension they want (and a parent keeps min(guarantee, demand)).
func spread(sp *space, kids []*qnode, base []vec, free vec, rate []float64) {
	for r := range free {
		left := free[r]
		for left > sp.tol(r) {
			w := 0.0
			for i, c := range kids {
				if c.demand[r]-base[i][r] > sp.tol(r) {
					w += max(rate[i], eps)
				}
			}
			if w == 0 {
				break
			}
			// The level at which the first wanting child is satisfied, or
			// everything is handed out.
			step := left / w
			for i, c := range kids {
				if u := c.demand[r] - base[i][r]; u > sp.tol(r) {
					step = min(step, u/max(rate[i], eps))
				}
			}
			for i, c := range kids {
				if u := c.demand[r] - base[i][r]; u > sp.tol(r) {
					g := min(u, step*max(rate[i], eps))
					base[i][r] += g
					left -= g
				}
			}
		}
	}
}

// rates are the children's effective weights: weight corrected by past
// usage (see the package doc). Children without demand get their plain
// weight (it does not matter: they want nothing).
func (s *Shares) rates(cfg Config, kids []*qnode) []float64 {
	out := make([]float64, len(kids))
	var hsum, wsum float64
	for i, c := range kids {
		out[i] = c.weight
		if s.sp.dom(c.demand) > 0 {
			hsum += c.hist
			wsum += c.weight
		}
	}
	if hsum <= 0 {
		return out
	}
	pen := cfg.entryPenalty()
	for i, c := range kids {
		if c.self || s.sp.dom(c.demand) <= 0 {
			continue
		}
		expect := hsum * c.weight / wsum
		h := max(c.hist, pen*expect) // the entry penalty: idling earns little or no credit
		out[i] = c.weight * min(max(1-usageWeight*(h-expect)/hsum, 0.5), 1.5)
	}
	return out
}

// leftover hands out what the hierarchy left idle: one filling over all
// leaves with unmet demand, at their flattened weights (the product of
// their normalized weights down the tree), bounded by the free capacity
// and every ancestor's limit.
func (s *Shares) leftover(root *qnode) {
	sp := s.sp
	var leaves []*qnode
	var rates []float64
	var walk func(n *qnode, rate float64)
	walk = func(n *qnode, rate float64) {
		if len(n.children) == 0 {
			if n != root {
				leaves = append(leaves, n)
				rates = append(rates, rate)
			}
			return
		}
		w := 0.0
		for _, c := range n.children {
			w += c.weight
		}
		for _, c := range n.children {
			walk(c, rate*c.weight/w)
		}
	}
	walk(root, 1)
	used := sp.zero()
	for _, l := range leaves {
		used = used.add(l.share)
	}
	var f filler
	f.capacity(sp, sp.cap.sub(used))
	for i, l := range leaves {
		f.member(sp, l.demand.sub(l.share).clampZero(), rates[i])
	}
	// Ancestors' limits: what each limited ancestor may still take.
	s.sum(root)
	for _, name := range s.names {
		a := s.nodes[name]
		if len(a.children) == 0 {
			continue
		}
		var members []int
		for i, l := range leaves {
			for p := l.parent; p != nil; p = p.parent {
				if p == a {
					members = append(members, i)
					break
				}
			}
		}
		for r := range a.limit {
			if a.limit[r] <= sp.cap[r] {
				f.rows = append(f.rows, row{dim: r, cap: max(a.limit[r]-a.share[r], 0), members: members, tol: sp.tol(r)})
			}
		}
	}
	for i, extra := range f.run() {
		leaves[i].share = leaves[i].share.add(extra)
	}
}

// sum sets each inner node's share to its children's total.
func (s *Shares) sum(n *qnode) vec {
	if len(n.children) == 0 {
		return n.share
	}
	t := s.sp.zero()
	for _, c := range n.children {
		t = t.add(s.sum(c))
	}
	n.share = t
	return t
}
