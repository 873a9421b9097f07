package scheduler

import "github.com/drover/drover/api"

// Scarcity weighting of the expected workload (ScarcityExponent): once
// per pass, on the first use of the shapes, the idle GPU capacity of the
// pass's candidate nodes and the part of it each shape could use are
// added up, reading each node as placement does (ledger.load). With a
// UsageCache a node's usable capacity per shape is kept in its entry, so
// a pass over unchanged nodes costs one sum per node and shape.

// key is the shape's workload key.
func (s WorkloadShape) key() shapeKey {
	return shapeKey{gpus: s.GPUs, milli: s.Milli, cpu: s.CPU, mem: s.MemoryMB}
}

// scarcity returns shapes weighted by scarcity over the pass's candidate
// nodes (scarcityWeights; shapes unchanged on a read error) and the CPU
// and memory of the largest of those nodes (the scale of fragScore's fit
// term).
func (l *ledger) scarcity(shapes []WorkloadShape) ([]WorkloadShape, [2]int64) {
	var largest [2]int64
	if len(shapes) == 0 {
		return shapes, largest
	}
	supply := make([]int64, len(shapes))
	var idle int64
	var idx []int32
	var gen uint64
	if c := l.env.opts.Usage; c != nil {
		idx, gen = c.shapeIndex(shapes)
	}
	for _, ns := range l.nodes {
		if !hasGPUs(ns.node) {
			continue
		}
		l.load(ns)
		if l.env.err != nil {
			return shapes, largest
		}
		largest[0], largest[1] = max(largest[0], ns.cap.CPU), max(largest[1], ns.cap.MemoryMB)
		if e := ns.usage; e != nil && ns.capShared && idx != nil {
			idle += e.addSupply(supply, shapes, idx, gen)
			continue
		}
		free := gpuFreeOf(ns.node, ns.cap, nil).milli
		whole, nidle := wholeIdle(free)
		cpu, mem := ns.freeCPUMem()
		for i, s := range shapes {
			supply[i] += int64(usableBy(s, free, whole, cpu, mem))
		}
		idle += nidle
	}
	if ScarcityExponent == 0 {
		return shapes, largest
	}
	return scarcityWeights(shapes, supply, idle), largest
}

// hasGPUs reports whether the node has a GPU device group.
func hasGPUs(n *api.Node) bool {
	if n.NodeResources == nil {
		return false
	}
	for _, g := range n.NodeResources.Devices {
		if g.Type == "gpu" && len(g.Instances) > 0 {
			return true
		}
	}
	return false
}

// wholeIdle counts the wholly free GPUs of free (thousandths per GPU) and
// sums them.
func wholeIdle(free []int) (whole int, idle int64) {
	for _, f := range free {
		idle += int64(f)
		if f == api.MilliPerDevice {
			whole++
		}
	}
	return whole, idle
}
