package scheduler

import (
	"math/bits"
	"sort"
	"strings"

	"github.com/drover/drover/api"
)

// devAsk is one task's device request.
type devAsk struct {
	task string
	req  *api.RequestedDevice
}

// devPick is the chosen instances for one ask.
type devPick struct {
	ask   *devAsk
	group *api.NodeDeviceResource
	ids   []string
	score float64 // in [0,1]: tight fit and good interconnect score high
}

// deviceNameMatch matches "gpu", "nvidia/gpu" or "nvidia/gpu/<model>".
func deviceNameMatch(name string, d *api.NodeDeviceResource) bool {
	parts := strings.Split(name, "/")
	switch len(parts) {
	case 1:
		return parts[0] == d.Type
	case 2:
		return parts[0] == d.Vendor && parts[1] == d.Type
	case 3:
		return parts[0] == d.Vendor && parts[1] == d.Type && parts[2] == d.Name
	}
	return false
}

// deviceConstraintsOK checks ${device.*} constraints on a device group.
func (s *sched) deviceConstraintsOK(req *api.RequestedDevice, d *api.NodeDeviceResource) bool {
	for _, c := range req.Constraints {
		if !s.deviceCheck(c.LTarget, c.Operand, c.RTarget, d) {
			return false
		}
	}
	return true
}

func (s *sched) deviceCheck(l, op, r string, d *api.NodeDeviceResource) bool {
	key, isDev := strings.CutPrefix(strings.TrimSuffix(strings.TrimPrefix(l, "${"), "}"), "device.")
	if !strings.HasPrefix(l, "${") || !isDev {
		return s.m.check(op, l, true, r, true)
	}
	switch key {
	case "vendor":
		return s.m.check(op, d.Vendor, true, r, true)
	case "type":
		return s.m.check(op, d.Type, true, r, true)
	case "model", "name":
		return s.m.check(op, d.Name, true, r, true)
	}
	if a, ok := strings.CutPrefix(key, "attr."); ok {
		return s.m.checkDeviceAttr(op, d.Attributes[a], r)
	}
	return false
}

// deviceAffinityScore is in [-1,1].
func (s *sched) deviceAffinityScore(req *api.RequestedDevice, d *api.NodeDeviceResource) (float64, bool) {
	if len(req.Affinities) == 0 {
		return 0, false
	}
	var sum, tot float64
	for _, a := range req.Affinities {
		w := float64(a.Weight)
		tot += abs(w)
		if s.deviceCheck(a.LTarget, a.Operand, a.RTarget, d) {
			sum += w
		}
	}
	if tot == 0 {
		return 0, false
	}
	return sum / tot, true
}

// pickDevices assigns instances for every ask of the group on the node,
// or reports false. taken collects IDs already given within this alloc.
func (s *sched) pickDevices(ns *nodeState, asks []devAsk) ([]devPick, bool) {
	if len(asks) == 0 {
		return nil, true
	}
	res := ns.node.NodeResources
	if res == nil {
		return nil, false
	}
	taken := map[string]struct{}{}
	picks := make([]devPick, 0, len(asks))
	for i := range asks {
		ask := &asks[i]
		var best devPick
		found := false
		for _, g := range res.Devices {
			if !deviceNameMatch(ask.req.Name, g) || !s.deviceConstraintsOK(ask.req, g) {
				continue
			}
			var free []*api.NodeDevice
			for _, inst := range g.Instances {
				if !inst.Healthy {
					continue
				}
				if ns.cap.DeviceUsed(inst.ID) {
					continue
				}
				if _, used := taken[inst.ID]; used {
					continue
				}
				free = append(free, inst)
			}
			want := int(ask.req.Count)
			if want <= 0 {
				want = 1
			}
			if len(free) < want {
				continue
			}
			set, worst := bestDeviceSet(free, want)
			// Tight fit keeps whole free nodes for big jobs; a good
			// interconnect matters for multi-device asks.
			fit := float64(want) / float64(len(free))
			topo := 1 - float64(worst)/3
			sc := (fit + topo) / 2
			if aff, ok := s.deviceAffinityScore(ask.req, g); ok {
				sc = (sc*2 + aff) / 3
			}
			if !found || sc > best.score {
				ids := make([]string, len(set))
				for j, inst := range set {
					ids[j] = inst.ID
				}
				best = devPick{ask: ask, group: g, ids: ids, score: sc}
				found = true
			}
		}
		if !found {
			return nil, false
		}
		for _, id := range best.ids {
			taken[id] = struct{}{}
		}
		picks = append(picks, best)
	}
	return picks, true
}

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

// setCost orders device sets: worst pairwise link level, then the sum of
// levels, then the number of NUMA nodes spanned (lower is better).
type setCost struct{ worst, sum, numa int }

func (a setCost) less(b setCost) bool {
	if a.worst != b.worst {
		return a.worst < b.worst
	}
	if a.sum != b.sum {
		return a.sum < b.sum
	}
	return a.numa < b.numa
}

// maxExhaustive bounds the number of subsets searched exactly; beyond it a
// greedy search is used.
const maxExhaustive = 20000

// bestDeviceSet picks want instances out of free minimising setCost. The
// instances are considered in ID order so that ties break stably.
func bestDeviceSet(free []*api.NodeDevice, want int) ([]*api.NodeDevice, int) {
	sort.Slice(free, func(i, j int) bool { return free[i].ID < free[j].ID })
	if want == 1 {
		return free[:1], 0
	}
	n := len(free)
	lvl := make([][]int, n)
	for i := range free {
		lvl[i] = make([]int, n)
		for j := range free {
			if i != j {
				lvl[i][j] = linkLevel(free[i], free[j])
			}
		}
	}
	cost := func(idx []int) setCost {
		c := setCost{}
		numas := map[int]struct{}{}
		for x, i := range idx {
			numas[numaOf(free[i])] = struct{}{}
			for _, j := range idx[x+1:] {
				l := lvl[i][j]
				c.sum += l
				if l > c.worst {
					c.worst = l
				}
			}
		}
		c.numa = len(numas)
		return c
	}
	var bestIdx []int
	var best setCost
	if n <= 62 && binomial(n, want) <= maxExhaustive {
		// Enumerate subsets of size want in lexical order.
		for mask := uint64(1)<<want - 1; mask < uint64(1)<<n; mask = nextComb(mask) {
			idx := make([]int, 0, want)
			for m := mask; m != 0; m &= m - 1 {
				idx = append(idx, bits.TrailingZeros64(m))
			}
			c := cost(idx)
			if bestIdx == nil || c.less(best) {
				bestIdx, best = idx, c
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
			c := cost(idx)
			if bestIdx == nil || c.less(best) {
				bestIdx, best = idx, c
			}
		}
	}
	out := make([]*api.NodeDevice, len(bestIdx))
	for i, j := range bestIdx {
		out[i] = free[j]
	}
	return out, best.worst
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

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// describeAsk renders a device ask for humans: "4 nvidia/gpu with memory >= 40 GiB".
func describeAsk(r *api.RequestedDevice) string {
	var b strings.Builder
	n := r.Count
	if n == 0 {
		n = 1
	}
	b.WriteString(itoa(int(n)))
	b.WriteByte(' ')
	b.WriteString(r.Name)
	for i, c := range r.Constraints {
		if i == 0 {
			b.WriteString(" with ")
		} else {
			b.WriteString(" and ")
		}
		l := strings.TrimSuffix(strings.TrimPrefix(c.LTarget, "${"), "}")
		l = strings.TrimPrefix(strings.TrimPrefix(l, "device.attr."), "device.")
		b.WriteString(l + " " + c.Operand + " " + c.RTarget)
	}
	return b.String()
}
