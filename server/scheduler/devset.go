package scheduler

import (
	"math/bits"
	"slices"
	"sort"

	"github.com/drover/drover/api"
)

// Device sets: which free instances of a device group an ask gets on a
// node. The node's devices are a graph (edges: the api.NodeDevice.Links
// levels, 0 nvlink, 1 pcie-switch, 2 pcie-host, 3 system; NUMA nodes from
// Locality). A set is chosen by
//
//  1. interconnect: the worst pairwise link level, then the number of
//     NUMA nodes spanned, then the sum of the pairwise levels;
//  2. best fit: its devices come from the most used domains that can
//     hold it (see fitKey), so whole NVLink islands and whole NUMA
//     halves stay free for later, larger asks;
//  3. device ID order.

// linkLevel is the interconnect level between two devices (3 = system
// when unknown).
func linkLevel(a, b *api.NodeDevice) int {
	if l, ok := a.Links[b.ID]; ok {
		return l.Level
	}
	if l, ok := b.Links[a.ID]; ok {
		return l.Level
	}
	return 3
}

func numaOf(d *api.NodeDevice) int {
	if d.Locality == nil {
		return 0
	}
	return d.Locality.NUMANode
}

// fitDomains is the number of domain kinds in a fitKey.
const fitDomains = 7

// fitKey is a free device's best-fit key: for each domain kind, the
// number of free devices in the device's domain of that kind (itself
// included). The kinds, tightest first: the devices at link level <= L
// on the same NUMA node, then on any NUMA node, for L = 0 (the NVLink
// island), 1 (PCIe switch) and 2 (host bridge); last the NUMA node.
// Lower keys come first: a device of a more used island is taken before
// one of a whole island.
type fitKey [fitDomains]int

func (a fitKey) cmp(b fitKey) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}

// setCost orders device sets, lower first: worst pairwise link level,
// NUMA nodes spanned, sum of the pairwise levels, then the summed best
// fit keys of its devices.
type setCost struct {
	worst, numa, sum int
	fit              fitKey
}

func (a setCost) less(b setCost) bool {
	if a.worst != b.worst {
		return a.worst < b.worst
	}
	if a.numa != b.numa {
		return a.numa < b.numa
	}
	if a.sum != b.sum {
		return a.sum < b.sum
	}
	return a.fit.cmp(b.fit) < 0
}

// maxExhaustive bounds the number of subsets searched exactly; beyond it a
// greedy search is used.
const maxExhaustive = 20000

// devGraph is one device group's topology on a node, read once per pass
// (see nodeState.graph): its healthy instances in ID order, their
// pairwise link levels and NUMA nodes.
type devGraph struct {
	inst []*api.NodeDevice
	lvl  []int8 // lvl[i*n+j]
	numa []int
	most int      // most healthy instances on one NUMA node
	size []fitKey // per instance: its domains' sizes (fitKey over all instances)
}

// newDevGraph reads the topology of devs (the caller leaves out the
// unhealthy ones).
func newDevGraph(devs []*api.NodeDevice) *devGraph {
	g := &devGraph{inst: slices.Clone(devs)}
	sort.Slice(g.inst, func(i, j int) bool { return g.inst[i].ID < g.inst[j].ID })
	n := len(g.inst)
	g.lvl = make([]int8, n*n)
	g.numa = make([]int, n)
	perNUMA := map[int]int{}
	for i, a := range g.inst {
		g.numa[i] = numaOf(a)
		perNUMA[g.numa[i]]++
		g.most = max(g.most, perNUMA[g.numa[i]])
		for j, b := range g.inst {
			if i != j {
				g.lvl[i*n+j] = int8(linkLevel(a, b))
			}
		}
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	g.size = g.keys(all)
	return g
}

// bestDeviceSet picks want of free (healthy instances, any order)
// minimising setCost and returns them with the cost; ties break by ID.
func bestDeviceSet(free []*api.NodeDevice, want int) ([]*api.NodeDevice, setCost) {
	g := newDevGraph(free)
	all := make([]int, len(g.inst))
	for i := range all {
		all[i] = i
	}
	idx, c := g.best(all, want)
	out := make([]*api.NodeDevice, len(idx))
	for i, j := range idx {
		out[i] = g.inst[j]
	}
	return out, c
}

// keys returns the fitKeys of the instances free (indexes into g.inst)
// counting only free instances.
func (g *devGraph) keys(free []int) []fitKey {
	n, stride := len(free), len(g.inst)
	keys := make([]fitKey, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			same := g.numa[free[i]] == g.numa[free[j]]
			l := 0
			if i != j {
				l = int(g.lvl[free[i]*stride+free[j]])
			}
			for k := 0; k < 3; k++ {
				if l <= k {
					if same {
						keys[i][2*k]++
					}
					keys[i][2*k+1]++
				}
			}
			if same {
				keys[i][6]++
			}
		}
	}
	return keys
}

// best picks want of the instances free (indexes into g.inst, ascending)
// minimising setCost and returns their indexes with the cost.
func (g *devGraph) best(free []int, want int) ([]int, setCost) {
	n, stride := len(free), len(g.inst)
	lvl := func(a, b int) int { return int(g.lvl[free[a]*stride+free[b]]) }
	numa := func(a int) int { return g.numa[free[a]] }
	keys := g.keys(free)
	if want == 1 {
		best := 0
		for i := 1; i < n; i++ {
			if keys[i].cmp(keys[best]) < 0 {
				best = i
			}
		}
		return []int{free[best]}, setCost{numa: 1, fit: keys[best]}
	}
	cost := func(idx []int) setCost {
		c := setCost{}
		for x, i := range idx {
			for k := range c.fit {
				c.fit[k] += keys[i][k]
			}
			seen := false
			for _, j := range idx[:x] {
				if numa(j) == numa(i) {
					seen = true
					break
				}
			}
			if !seen {
				c.numa++
			}
			for _, j := range idx[x+1:] {
				l := lvl(i, j)
				c.sum += l
				if l > c.worst {
					c.worst = l
				}
			}
		}
		return c
	}
	var bestIdx []int
	var best setCost
	if n <= 62 && binomial(n, want) <= maxExhaustive {
		// Enumerate subsets of size want in lexical order.
		idx := make([]int, 0, want)
		for mask := uint64(1)<<want - 1; mask < uint64(1)<<n; mask = nextComb(mask) {
			idx = idx[:0]
			for m := mask; m != 0; m &= m - 1 {
				idx = append(idx, bits.TrailingZeros64(m))
			}
			if c := cost(idx); bestIdx == nil || c.less(best) {
				bestIdx, best = append(bestIdx[:0], idx...), c
			}
		}
	} else {
		// Greedy: grow from every seed, adding the device that keeps
		// the set cheapest.
		for seed := 0; seed < n; seed++ {
			idx := []int{seed}
			in := make([]bool, n)
			in[seed] = true
			for len(idx) < want {
				pick, pc := -1, setCost{}
				for j := 0; j < n; j++ {
					if in[j] {
						continue
					}
					c := cost(append(idx[:len(idx):len(idx)], j))
					if pick < 0 || c.less(pc) {
						pick, pc = j, c
					}
				}
				idx = append(idx, pick)
				in[pick] = true
			}
			if c := cost(idx); bestIdx == nil || c.less(best) {
				bestIdx, best = idx, c
			}
		}
	}
	out := make([]int, len(bestIdx))
	for i, j := range bestIdx {
		out[i] = free[j]
	}
	return out, best
}

// nextComb returns the next bit pattern with the same popcount (Gosper).
func nextComb(x uint64) uint64 {
	c := x & -x
	r := x + c
	return (((r ^ x) >> 2) / c) | r
}

func binomial(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<40 {
			return r
		}
	}
	return r
}
