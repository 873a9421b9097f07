package scheduler

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// devicePicker is the device picker: which instances of a node's device
// groups an ask gets (constraints, affinities, the device graph of
// devset.go), and the cheap counts the device index and the explanations
// need. It reads node usage, never changes it.
type devicePicker struct {
	m      *matcher
	shapes []WorkloadShape // the expected workload (Options.Workload)
	// weigh, when set, reweighs shapes on their first use in the pass
	// (by scarcity, scarcity.go) and says the largest candidate's CPU
	// and memory (largest); workload applies it.
	weigh   func([]WorkloadShape) ([]WorkloadShape, [2]int64)
	largest [2]int64
}

// workload is the expected workload's shapes as the pass weighs them.
func (pk *devicePicker) workload() []WorkloadShape {
	if f := pk.weigh; f != nil {
		pk.weigh = nil
		pk.shapes, pk.largest = f(pk.shapes)
	}
	return pk.shapes
}

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
	// share is what the alloc holds of each of ids (a share ask; nil:
	// the instances whole).
	share *api.AllocatedShare
}

// deviceNameMatch matches "gpu", "nvidia/gpu" or "nvidia/gpu/<model>",
// the model by name or alias ("H100", "1g.10gb" for MIG instances): see
// api.NodeDeviceResource.Matches.
func deviceNameMatch(name string, d *api.NodeDeviceResource) bool { return d.Matches(name) }

// constraintsOK checks ${device.*} constraints on a device group.
func (pk *devicePicker) constraintsOK(req *api.RequestedDevice, d *api.NodeDeviceResource) bool {
	for _, c := range req.Constraints {
		if !pk.check(c.LTarget, c.Operand, c.RTarget, d) {
			return false
		}
	}
	return true
}

func (pk *devicePicker) check(l, op, r string, d *api.NodeDeviceResource) bool {
	key, isDev := strings.CutPrefix(strings.TrimSuffix(strings.TrimPrefix(l, "${"), "}"), "device.")
	if !strings.HasPrefix(l, "${") || !isDev {
		return pk.m.check(op, l, true, r, true)
	}
	switch key {
	case "vendor":
		return pk.m.check(op, d.Vendor, true, r, true)
	case "type":
		return pk.m.check(op, d.Type, true, r, true)
	case "model", "name":
		// = and != also take the model's aliases ("H100").
		switch op {
		case "=", "==", "is", "":
			return d.ModelIs(r)
		case "!=", "not":
			return !d.ModelIs(r)
		}
		return pk.m.check(op, d.Name, true, r, true)
	}
	if a, ok := strings.CutPrefix(key, "attr."); ok {
		return pk.m.checkDeviceAttr(op, d.Attributes[a], r)
	}
	return false
}

// deviceAffinityScore is in [-1,1].
func (pk *devicePicker) affinityScore(req *api.RequestedDevice, d *api.NodeDeviceResource) (float64, bool) {
	if len(req.Affinities) == 0 {
		return 0, false
	}
	var sum, tot float64
	for _, a := range req.Affinities {
		w := float64(a.Weight)
		tot += abs(w)
		if pk.check(a.LTarget, a.Operand, a.RTarget, d) {
			sum += w
		}
	}
	if tot == 0 {
		return 0, false
	}
	return sum / tot, true
}

// pick assigns instances for every ask of the group on the node, or
// reports false. taken collects IDs already given within this alloc.
func (pk *devicePicker) pick(ns *nodeState, asks []devAsk) ([]devPick, bool) {
	if len(asks) == 0 {
		return nil, true
	}
	res := ns.node.NodeResources
	if res == nil {
		return nil, false
	}
	taken := map[string]struct{}{}
	shared := map[string]int{} // thousandths of an instance this alloc's earlier share picks took
	picks := make([]devPick, 0, len(asks))
	for i := range asks {
		ask := &asks[i]
		var best devPick
		found := false
		for _, g := range res.Devices {
			if !deviceNameMatch(ask.req.Name, g) || !pk.constraintsOK(ask.req, g) {
				continue
			}
			if ask.req.Share != nil {
				if p, ok := pk.pickShare(ns, ask, g, taken, shared); ok && (!found || p.score > best.score) {
					best, found = p, true
				}
				continue
			}
			want := int(ask.req.Count)
			if want <= 0 {
				want = 1
			}
			gr := ns.graph(g)
			free := make([]int, 0, len(gr.inst))
			for k, inst := range gr.inst {
				if ns.cap.DeviceUsed(inst.ID) || shared[inst.ID] > 0 {
					continue
				}
				if _, used := taken[inst.ID]; used {
					continue
				}
				free = append(free, k)
			}
			if len(free) < want {
				continue
			}
			set, cost := gr.best(free, want)
			var size fitKey
			for _, k := range set {
				for d := range size {
					size[d] += gr.size[k][d]
				}
			}
			sc := deviceSetScore(want, len(free), cost, size, gr.most)
			if aff, ok := pk.affinityScore(ask.req, g); ok {
				sc = (sc*2 + aff) / 3
			}
			if !found || sc > best.score {
				ids := make([]string, len(set))
				for j, k := range set {
					ids[j] = gr.inst[k].ID
				}
				best = devPick{ask: ask, group: g, ids: ids, score: sc}
				found = true
			}
		}
		if !found {
			return nil, false
		}
		for _, id := range best.ids {
			if best.share != nil {
				shared[id] += best.share.Milli
			} else {
				taken[id] = struct{}{}
			}
		}
		picks = append(picks, best)
	}
	return picks, true
}

// pickShare picks Count instances of group g for a share ask: healthy,
// not held whole (by the node or this alloc), shared in the ask's mode or
// not at all, with room for the share (compute, and memory where asked);
// the tightest first, so shares fill GPUs already shared and untouched
// GPUs stay whole. Its score is the share over what is free of the
// instances it takes (1: they are filled up).
func (pk *devicePicker) pickShare(ns *nodeState, ask *devAsk, g *api.NodeDeviceResource, taken map[string]struct{}, shared map[string]int) (devPick, bool) {
	if g.Type == api.DeviceTypeMIG {
		return devPick{}, false // a MIG instance is not shared (api/gpumodel.go)
	}
	sh := ask.req.Share
	mode := sh.ShareMode()
	mem := g.MemoryMB()
	milli, ok := sh.Milli(mem)
	if !ok {
		return devPick{}, false
	}
	held := &api.AllocatedShare{Milli: milli, Mode: mode, LimitMilli: sh.LimitMilli(milli), MemoryMB: sh.MemoryMB}
	if held.MemoryMB == 0 && mem > 0 {
		held.MemoryMB = int64(milli) * mem / api.MilliPerDevice
	}
	if held.LimitMilli == milli {
		held.LimitMilli = 0
	}
	want := max(int(ask.req.Count), 1)
	type inst struct {
		id   string
		free int
	}
	var fits []inst
	for _, d := range g.Instances {
		if !d.Healthy {
			continue
		}
		if _, t := taken[d.ID]; t {
			continue
		}
		free, freeMem := ns.cap.DeviceShareFree(d.ID, mode)
		free -= shared[d.ID]
		if free < milli || freeMem >= 0 && freeMem < held.MemoryMB {
			continue
		}
		fits = append(fits, inst{d.ID, free})
	}
	if len(fits) < want {
		return devPick{}, false
	}
	sort.SliceStable(fits, func(a, b int) bool { return fits[a].free < fits[b].free })
	if len(pk.shapes) > 0 && want == 1 {
		// The GPU whose share grows the node's fragmentation least (the
		// tightest first on ties); GPUs as free as each other are alike.
		shapes := pk.workload()
		free := pk.gpuFree(ns, shared)
		cpu, mem := ns.freeCPUMem()
		best, bestFrag, last := 0, math.Inf(1), -1
		for i, f := range fits {
			if f.free == last {
				continue
			}
			last = f.free
			k := slices.Index(free.ids, f.id)
			free.milli[k] -= milli
			fr := NodeFrag(shapes, free.milli, cpu, mem)
			free.milli[k] += milli
			if fr < bestFrag-1e-9 {
				best, bestFrag = i, fr
			}
		}
		fits = fits[best : best+1]
	}
	fits = fits[:want]
	ids := make([]string, want)
	free := 0
	for i, f := range fits {
		ids[i] = f.id
		free += f.free
	}

	return devPick{ask: ask, group: g, ids: ids, share: held, score: float64(want*milli) / float64(free)}, true
}

// nodeGPUs is every GPU instance of a node with what is free of it.
type nodeGPUs struct {
	ids   []string
	milli []int
}

// gpuFree is the free thousandths of each GPU of the node (0 for one
// held whole or unhealthy), less what this alloc's share picks took.
func (pk *devicePicker) gpuFree(ns *nodeState, shared map[string]int) nodeGPUs {
	return gpuFreeOf(ns.node, ns.cap, shared)
}

// gpuFreeOf is gpuFree for node n with usage c.
func gpuFreeOf(n *api.Node, c *capacity.Node, shared map[string]int) nodeGPUs {
	var out nodeGPUs
	if n.NodeResources == nil {
		return out
	}
	used := c.Used()
	for _, g := range n.NodeResources.Devices {
		if g.Type != "gpu" {
			continue
		}
		for _, d := range g.Instances {
			f := 0
			if d.Healthy && used.Devices[d.ID] == 0 {
				f = api.MilliPerDevice - shared[d.ID]
				if su := used.Shared[d.ID]; su != nil {
					f -= su.Milli
				}
			}
			out.ids = append(out.ids, d.ID)
			out.milli = append(out.milli, max(f, 0))
		}
	}
	return out
}

// fragScore is how well placing picks (with the alloc's cpu and memory)
// keeps the node's idle GPUs usable for the expected workload, in [0,1]:
// 0.5 less half the growth of the fragmented share of the node's idle GPU
// capacity (fragment.go). With no picks (an ask without GPUs on a GPU
// node) it is 0.5 less half the growth of the fragmentation per GPU its
// CPU and memory cause. ok is false without a workload or GPUs.
func (pk *devicePicker) fragScore(ns *nodeState, picks []devPick, cpu, mem int64) (float64, bool) {
	if len(pk.shapes) == 0 {
		return 0, false
	}
	free := pk.gpuFree(ns, nil)
	if len(free.ids) == 0 {
		return 0, false
	}
	shapes := pk.workload()
	fc, fm := ns.freeCPUMem()
	before := NodeFrag(shapes, free.milli, fc, fm)
	if len(picks) == 0 {
		after := NodeFrag(shapes, free.milli, fc-cpu, fm-mem)
		return min(1, max(0, 0.5-(after-before)/float64(2*api.MilliPerDevice*len(free.ids)))), true
	}
	idle := 0
	for _, f := range free.milli {
		idle += f
	}
	taken := 0
	for _, p := range picks {
		for _, id := range p.ids {
			if k := slices.Index(free.ids, id); k >= 0 {
				m := (&api.AllocatedDeviceResource{Share: p.share}).Milli()
				free.milli[k] -= m
				taken += m
			}
		}
	}
	after := NodeFrag(shapes, free.milli, fc-cpu, fm-mem)
	d := after/float64(idle-taken+1) - before/float64(idle+1)
	if l := pk.largest; l[0] > 0 && l[1] > 0 {
		// Near ties go to the node the alloc leaves the least CPU and
		// memory free on, against the largest node's: small asks keep
		// off the few nodes big enough for the biggest asks, which a
		// workload learnt online may not have seen yet.
		d += FitWeight * (float64(fc-cpu)/float64(l[0]) + float64(fm-mem)/float64(l[1])) / 2
	}
	return min(1, max(0, 0.5-d/2)), true
}

// missing names the first device ask of the group the node cannot
// satisfy.
func (pk *devicePicker) missing(tc *tgCtx, ns *nodeState) string {
	for i := range tc.devs {
		if _, ok := pk.pick(ns, tc.devs[i:i+1]); !ok {
			return tc.devs[i].req.Name
		}
	}
	return tc.devs[0].req.Name
}

// deviceSetScore is a pick's score in [0,1]: its fit and, weighted three
// times, its interconnect. The fit is the mean of want over the node's
// free devices (nodes with the fewest free come first and whole nodes
// stay free) and want over the free devices of the tightest domain that
// holds the set (see fitKey; domains of one device, size being the set's
// summed domain sizes, tell nothing): a set from a used NVLink island,
// PCIe switch or socket beats one that breaks a whole one elsewhere. The interconnect is 1
// less a quarter per link level of the worst pair and a quarter when the
// set spans more NUMA nodes than it must (want over the most healthy
// devices on one NUMA node). A set inside one island and socket beats a
// tighter fit that crosses sockets.
func deviceSetScore(want, free int, c setCost, size fitKey, most int) float64 {
	most = max(most, 1)
	extra := 0
	if c.numa > (want+most-1)/most {
		extra = 1
	}
	dom := free
	for k := range size {
		if f := c.fit[k] / want; size[k]/want > 1 && f >= want {
			dom = min(dom, f)
		}
	}
	fit := (float64(want)/float64(free) + float64(want)/float64(dom)) / 2
	topo := 1 - float64(c.worst+extra)/4
	return (fit + 3*topo) / 4
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
