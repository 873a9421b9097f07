package scheduler

import (
	"github.com/drover/drover/api"
)

// Node choice for groups asking for devices. A fixed sample of the
// shuffled nodes misses the tight fits that keep whole GPU nodes free (a
// sample keeps fewer whole nodes free under churn than best fit:
// BenchmarkGPUFragmentation's whole-free-%), and scoring every node
// runs the device-set search on all of them. Instead each group keeps,
// for the pass, an index of the nodes by how its first device ask would
// fit there: nodes that can give the ask as good an interconnect as an
// empty node could (see devicePicker.fit) before the others, and within
// each, by free matching devices, fewest first. A placement scores the first
// sampleLimit feasible nodes in that order, so it sees the best fits of
// the whole cluster. The index is built once per pass and group (one
// cheap count per node with matching devices) and kept current from the
// pass's log of nodes whose usage changed (placements, stops, rollbacks).

// devIndex is one group's node index (see above).
type devIndex struct {
	want    int
	key     []int32   // per node position: bucket, or -1 when no device matches
	buckets [][]int32 // node positions; an entry is current iff key[pos] is its bucket
	width   int32     // free-count range of one quality class
	logAt   int       // entries of the ledger's change log already applied
}

// deviceIndex returns the group's index, built on first use and brought
// up to date with the nodes changed since.
func (rk *ranker) deviceIndex(tc *tgCtx) *devIndex {
	led := rk.led
	nodes, changed := led.candidates(), led.changes()
	x := tc.devIdx
	if x == nil {
		ask := tc.devs[0].req
		x = &devIndex{want: max(int(ask.Count), 1), key: make([]int32, len(nodes)), logAt: len(changed)}
		most := 0
		for i, ns := range nodes {
			m := rk.dev.matching(ask, ns.node)
			x.key[i] = int32(m) // for now
			most = max(most, m)
		}
		x.width = int32(most + 1)
		x.buckets = make([][]int32, 2*x.width)
		for i, ns := range nodes {
			if int(x.key[i]) < x.want {
				x.key[i] = -1
				continue
			}
			led.load(ns)
			x.key[i] = rk.devKey(tc, x, ns)
			x.buckets[x.key[i]] = append(x.buckets[x.key[i]], int32(i))
		}
		tc.devIdx = x
		return x
	}
	for _, i := range changed[x.logAt:] {
		if x.key[i] < 0 {
			continue
		}
		if k := rk.devKey(tc, x, nodes[i]); k != x.key[i] {
			x.key[i] = k
			x.buckets[k] = append(x.buckets[k], i)
		}
	}
	x.logAt = len(changed)
	return x
}

// matching counts the healthy instances of the node's device groups that
// ask's name and constraints accept.
func (pk *devicePicker) matching(ask *api.RequestedDevice, n *api.Node) int {
	if n.NodeResources == nil {
		return 0
	}
	c := 0
	for _, g := range n.NodeResources.Devices {
		if !deviceNameMatch(ask.Name, g) || !pk.constraintsOK(ask, g) {
			continue
		}
		for _, inst := range g.Instances {
			if inst.Healthy {
				c++
			}
		}
	}
	return c
}

// devKey is the node's bucket: its quality class (0 when the ask can get
// an interconnect as good as on an empty node, see devicePicker.fit)
// times the width, plus its free matching devices.
func (rk *ranker) devKey(tc *tgCtx, x *devIndex, ns *nodeState) int32 {
	free, good := rk.dev.fit(tc.devs[0].req, x.want, ns)
	k := int32(min(free, int(x.width)-1))
	if !good {
		k += x.width
	}
	return k
}

// fit returns the node's free matching devices and whether an ask of
// want of them can be as well connected as on the empty node: within one
// NVLink island (a device and its free NVLink peers) when the node has
// an island that large, and within one NUMA node when one holds that
// many devices. It is a cheap estimate for ordering (NUMA nodes are told
// apart modulo 8); the device-set search (bestDeviceSet) decides.
func (pk *devicePicker) fit(ask *api.RequestedDevice, want int, ns *nodeState) (int, bool) {
	free, good := 0, false
	for _, g := range ns.node.NodeResources.Devices {
		if !deviceNameMatch(ask.Name, g) || !pk.constraintsOK(ask, g) {
			continue
		}
		if ask.Share != nil {
			// A share ask: the instances with room for it (any
			// interconnect serves a share).
			n := pk.shareRoom(ask.Share, g, ns)
			free += n
			good = good || n >= want
			continue
		}
		var fr []*api.NodeDevice
		var allNUMA, freeNUMA [8]int
		for _, inst := range g.Instances {
			if !inst.Healthy {
				continue
			}
			n := numaOf(inst) & 7
			allNUMA[n]++
			if !ns.cap.DeviceUsed(inst.ID) {
				fr = append(fr, inst)
				freeNUMA[n]++
			}
		}
		free += len(fr)
		if len(fr) < want || good {
			continue
		}
		if want == 1 {
			good = true
			continue
		}
		numaOK := maxOf(allNUMA) < want // no NUMA node holds it even when empty
		for _, f := range freeNUMA {
			numaOK = numaOK || f >= want
		}
		good = numaOK && (islandOf(fr) >= want || islandOf(g.Instances) < want)
	}
	return free, good
}

// shareRoom counts the healthy instances of g with room for share sh.
func (pk *devicePicker) shareRoom(sh *api.DeviceShare, g *api.NodeDeviceResource, ns *nodeState) int {
	mem := g.MemoryMB()
	milli, ok := sh.Milli(mem)
	if !ok {
		return 0
	}
	n := 0
	for _, inst := range g.Instances {
		if free, _ := ns.cap.DeviceShareFree(inst.ID, sh.ShareMode()); inst.Healthy && free >= milli {
			n++
		}
	}
	return n
}

func maxOf(a [8]int) int {
	m := 0
	for _, v := range a {
		m = max(m, v)
	}
	return m
}

// islandOf is the largest NVLink neighbourhood among devs: a device with
// its NVLinked (level 0) peers in devs (healthy ones only).
func islandOf(devs []*api.NodeDevice) int {
	best := 0
	for _, d := range devs {
		if !d.Healthy {
			continue
		}
		c := 1
		for _, e := range devs {
			if e != d && e.Healthy && linkLevel(d, e) == 0 {
				c++
			}
		}
		best = max(best, c)
	}
	return best
}

// selectDeviceNode is selectNode for groups asking for devices: it scores
// up to the sample limit of feasible nodes in the index's order.
func (rk *ranker) selectDeviceNode(tc *tgCtx, prevNode string, desired int) (*cand, int, int) {
	limit := rk.sampleLimit(tc)
	tc.cands = tc.cands[:0]
	x := rk.deviceIndex(tc)
	nodes := rk.led.candidates()
	evaluated, filtered := 0, 0
	for b := range x.buckets {
		if int32(b)%x.width < int32(x.want) {
			continue
		}
		list := x.buckets[b]
		kept := list[:0] // drops entries moved to another bucket
		for j, i := range list {
			if limit > 0 && len(tc.cands) >= limit {
				kept = append(kept, list[j:]...)
				break
			}
			if x.key[i] != int32(b) {
				continue
			}
			kept = append(kept, i)
			if tc.skip[i] {
				continue
			}
			ns := nodes[i]
			evaluated++
			rej, _, picks := rk.checkNode(tc, ns)
			if rej != okNode {
				filtered++
				rk.led.skipNode(tc, int(i))
				continue
			}
			tc.cands = append(tc.cands, rk.score(tc, ns, picks, prevNode, desired))
		}
		x.buckets[b] = kept
		if rk.env.err != nil || limit > 0 && len(tc.cands) >= limit {
			break
		}
	}
	if rk.env.err != nil {
		return nil, evaluated, filtered
	}
	return tc.best(), evaluated, filtered
}
