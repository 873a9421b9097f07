package scheduler

import (
	"math"

	"github.com/drover/drover/api"
)

// ranker is the placer's view of which nodes a group may use and how they
// score: the groups' contexts (group.go), the feasibility checks (class,
// node, resources, devices, room kept by reservations, queue limits), the
// walk over the shuffled nodes or a device index, and the scores. It
// reads node usage from the ledger (a node is loaded on first visit) and
// changes only per-group state there: cursors, skip marks and counters,
// journaled. It is also the read-only view the preemptor and the
// explainer get of the placer (preemptView, explainView).
type ranker struct {
	env   *passEnv
	out   *output // class eligibility and escape, for the blocked eval
	led   *ledger
	nodes *nodeIndex
	quota *queueLimits
	resv  *reservations
	dev   *devicePicker
	m     *matcher
	// groups are the placement contexts by group name; jobLive the job's
	// live allocs that seed their counters.
	groups  map[string]*tgCtx
	jobLive []*api.Allocation
}

// sampleLimit is how many feasible nodes a placement of the group
// scores (Options.SampleLimit).
func (rk *ranker) sampleLimit(tc *tgCtx) int {
	if n := rk.env.opts.SampleLimit; n != 0 {
		return n
	}
	if len(tc.devs) > 0 && len(rk.dev.shapes) > 0 {
		// Fragmentation-aware GPU placement compares the fleet: the
		// device index's tightest fits alone keep choosing among nodes
		// alike, and miss the one that keeps room for the workload.
		return fragSample
	}
	if len(tc.affs) > 0 || len(tc.spreads) > 0 {
		// Preferences need a wider view than bin-packing; scoring every
		// node makes a placement O(n) (16 s for 1,000 spread allocs on
		// 5,000 nodes), so a fixed sample of the shuffled nodes is used.
		return preferenceSample
	}
	l := int(math.Ceil(math.Log2(float64(rk.led.size()))))
	if rk.env.job.Type == api.JobTypeBatch || l < 2 {
		l = 2
	}
	if (len(tc.devs) > 0 || len(rk.dev.shapes) > 0) && l < deviceSample {
		// Of the device index's best fits (devindex.go); with a GPU
		// workload, asks without GPUs are placed by the fragmentation
		// they cause too, which needs a wider view than two nodes.
		l = deviceSample
	}
	return l
}

// fragSample is how many feasible nodes a GPU placement scores with a
// GPU workload to place against: every node of most fleets, the tightest
// fits of the device index beyond.
const fragSample = 2048

// preferenceSample is how many feasible nodes are scored per placement
// for groups with affinities or spreads.
const preferenceSample = 100

// deviceSample is the minimum sample for groups asking for devices, taken
// in the device index's order (tightest fits of the whole cluster first),
// so nodes whose interconnect or CPU and memory fit differ are compared.
const deviceSample = 32

// Rejection reasons from checkNode.
const (
	okNode = iota
	rejClass
	rejNode
	rejExhausted
)

// classOK runs the checks that depend only on the node's computed class.
func (rk *ranker) classOK(tc *tgCtx, ns *nodeState) (bool, string) {
	if ns.class == "" {
		ns.class = computedClass(ns.node)
	}
	if ok, seen := tc.classRes[ns.class]; seen {
		return ok, tc.classWhy[ns.class]
	}
	ok, why := true, ""
	n := ns.node
	for _, d := range tc.drivers {
		if !driverOK(n, d) {
			ok, why = false, missingDrivers
			break
		}
	}
	for _, v := range tc.tg.Volumes {
		if ok && v != nil && v.Type == api.VolumeTypeHost && !n.HostVolumeOK(v) {
			ok, why = false, "missing compatible host volumes"
		}
	}
	for _, nw := range tc.tg.Networks {
		if ok && nw != nil && nw.Mode == "bridge" && n.Attributes[api.AttrBridgeNetwork] != "true" {
			ok, why = false, "missing network: bridge"
		}
	}
	if ok {
		for _, c := range tc.classCons {
			if !rk.m.constraintOK(c, n) {
				ok, why = false, c.String()
				break
			}
		}
	}
	tc.classRes[ns.class], tc.classWhy[ns.class] = ok, why
	if class := rk.out.class; ok {
		class[ns.class] = true
	} else if _, seen := class[ns.class]; !seen {
		class[ns.class] = false
	}
	return ok, why
}

func driverOK(n *api.Node, d string) bool {
	if di := n.Drivers[d]; di != nil {
		return di.Detected && di.Healthy
	}
	v := n.Attributes["driver."+d]
	return v != "" && v != "0" && v != "false"
}

// constraintOK evaluates a constraint against a node.
func (m *matcher) constraintOK(c *api.Constraint, n *api.Node) bool {
	l, lok := resolveNode(c.LTarget, n)
	r, rok := resolveNode(c.RTarget, n)
	return m.check(c.Operand, l, lok, r, rok)
}

// nodeOK runs the per-node (unique) checks.
func (rk *ranker) nodeOK(tc *tgCtx, ns *nodeState) (bool, string) {
	n := ns.node
	for _, c := range tc.nodeCons {
		if !rk.m.constraintOK(c, n) {
			return false, c.String()
		}
	}
	if tc.hostsJob || tc.hostsTG {
		rk.led.load(ns)
		if (tc.hostsJob && ns.jobTotal > 0) || (tc.hostsTG && ns.jobTG[tc.tg.Name] > 0) {
			return false, api.ConstraintDistinctHosts
		}
	}
	for _, p := range tc.props {
		v, ok := resolveNode(p.c.LTarget, n)
		if !ok || p.counts[v] >= p.limit {
			return false, p.c.String()
		}
	}
	return true, ""
}

// fits checks resources, the room reservations keep and, with quota, the
// queue limits; it returns the device picks, or the exhausted dimension
// on failure (the capacity.Dim names, "devices: <ask>", DimReserved,
// "quota: ..."). Only why-pending's relaxed search leaves quota out (it
// checks the limits itself, with the victims' holdings released).
func (rk *ranker) fits(tc *tgCtx, ns *nodeState, quota bool) ([]devPick, string) {
	rk.led.load(ns)
	ask := tc.ask
	ask.CPU = tc.cpuOn(ns)
	if e := ns.cap.Fits(&ask); e != nil {
		return nil, e.Dimension
	}
	var picks []devPick
	if len(tc.devs) > 0 {
		var ok bool
		if picks, ok = rk.dev.pick(ns, tc.devs); !ok {
			return nil, "devices: " + rk.dev.missing(tc, ns)
		}
	}
	if !rk.resv.holdOK(tc, ns, picks) {
		return nil, DimReserved // reserve.go: room kept for a pending gang
	}
	if quota {
		if dim := rk.quota.fits(tc, ns, picks); dim != "" {
			return nil, dim
		}
	}
	return picks, ""
}

// checkNode runs every check in order; on success picks holds devices.
func (rk *ranker) checkNode(tc *tgCtx, ns *nodeState) (int, string, []devPick) {
	if ok, why := rk.classOK(tc, ns); !ok {
		return rejClass, why, nil
	}
	if ok, why := rk.nodeOK(tc, ns); !ok {
		return rejNode, why, nil
	}
	picks, dim := rk.fits(tc, ns, true)
	if dim != "" {
		return rejExhausted, dim, nil
	}
	return okNode, "", picks
}

// selectNode walks the shuffled nodes from the group's cursor, scoring up
// to the sample limit of feasible nodes, and returns the best candidate.
// Nodes found infeasible or full are skipped for the rest of the pass
// (within a pass capacity only shrinks), so the walk is amortised O(1)
// per rejected node and each placement scores O(log n) nodes. The cursor
// does not rotate past chosen nodes: bin-packing keeps filling the same
// few nodes until they are full.
func (rk *ranker) selectNode(tc *tgCtx, prevNode string, desired int) (*cand, int, int) {
	if len(tc.devs) > 0 {
		return rk.selectDeviceNode(tc, prevNode, desired)
	}
	limit := rk.sampleLimit(tc)
	tc.cands = tc.cands[:0]
	led := rk.led
	led.saveCursor(tc)
	nodes := led.candidates()
	evaluated, filtered := 0, 0
	for i := tc.start; i < len(nodes); i++ {
		if limit > 0 && len(tc.cands) >= limit {
			break
		}
		if tc.skip[i] {
			if i == tc.start {
				tc.start++
			}
			continue
		}
		ns := nodes[i]
		evaluated++
		rej, _, picks := rk.checkNode(tc, ns)
		if rej != okNode {
			filtered++
			led.skipNode(tc, i)
			if i == tc.start {
				tc.start++
			}
			continue
		}
		tc.cands = append(tc.cands, rk.score(tc, ns, picks, prevNode, desired))
	}
	if rk.env.err != nil {
		return nil, evaluated, filtered
	}
	return tc.best(), evaluated, filtered
}

// binPackScore is Nomad-style best fit: 20 - (10^freeCPU + 10^freeMem),
// clamped to [0,18] and normalised to [0,1]. Fuller nodes score higher.
func binPackScore(cpuUsed, cpuTotal, memUsed, memTotal int64) float64 {
	if cpuTotal <= 0 || memTotal <= 0 {
		return 0
	}
	return clampFit(20 - fitTotal(cpuUsed, cpuTotal, memUsed, memTotal))
}

// spreadFitScore is Nomad's spread algorithm, the mirror of binPackScore:
// (10^freeCPU + 10^freeMem) - 2, clamped to [0,18] and normalised to
// [0,1]. Emptier nodes score higher.
func spreadFitScore(cpuUsed, cpuTotal, memUsed, memTotal int64) float64 {
	if cpuTotal <= 0 || memTotal <= 0 {
		return 0
	}
	return clampFit(fitTotal(cpuUsed, cpuTotal, memUsed, memTotal) - 2)
}

func fitTotal(cpuUsed, cpuTotal, memUsed, memTotal int64) float64 {
	freeCPU := 1 - float64(cpuUsed)/float64(cpuTotal)
	freeMem := 1 - float64(memUsed)/float64(memTotal)
	return math.Pow(10, freeCPU) + math.Pow(10, freeMem)
}

func clampFit(sc float64) float64 {
	if sc < 0 {
		sc = 0
	}
	if sc > 18 {
		sc = 18
	}
	return sc / 18
}

// fitScore is the node-fit part of a candidate's score (reported under
// "binpack" as Nomad does, whichever the algorithm) after placing.
func (rk *ranker) fitScore(cpuUsed, cpuTotal, memUsed, memTotal int64) float64 {
	if rk.env.opts.Algorithm == AlgorithmSpread {
		return spreadFitScore(cpuUsed, cpuTotal, memUsed, memTotal)
	}
	return binPackScore(cpuUsed, cpuTotal, memUsed, memTotal)
}

// score scores placing the group on ns with the device picks: the mean
// of the node fit and every other score that applies.
func (rk *ranker) score(tc *tgCtx, ns *nodeState, picks []devPick, prevNode string, desired int) cand {
	c := cand{ns: ns, picks: picks}
	u := ns.cap.Used()
	c.binpack = rk.fitScore(u.CPU+tc.cpuOn(ns), ns.cap.CPU, u.MemoryMB+tc.mem, ns.cap.MemoryMB)
	sum, cnt := c.binpack, 1.0
	if col := ns.jobTG[tc.tg.Name]; col > 0 && tc.antiAff {
		if desired < 1 {
			desired = 1
		}
		c.anti = -float64(col+1) / float64(desired)
		c.hasAnti = true
		sum += c.anti
		cnt++
	}
	if prevNode != "" && ns.node.ID == prevNode {
		c.resched, c.hasRes = -1, true
		sum += c.resched
		cnt++
	}
	if len(tc.affs) > 0 {
		var tot, got float64
		for _, a := range tc.affs {
			w := float64(a.Weight)
			tot += abs(w)
			l, lok := resolveNode(a.LTarget, ns.node)
			r, rok := resolveNode(a.RTarget, ns.node)
			if rk.m.check(a.Operand, l, lok, r, rok) {
				got += w
			}
		}
		if tot > 0 && got != 0 {
			c.affinity, c.hasAff = got/tot, true
			sum += c.affinity
			cnt++
		}
	}
	if len(tc.spreads) > 0 {
		if sp := tc.spreadScore(ns.node); sp != 0 {
			c.spread, c.hasSp = sp, true
			sum += sp
			cnt++
		}
	}
	if f, ok := rk.dev.fragScore(ns, picks, tc.cpuOn(ns), tc.mem); ok {
		// The expected workload's fragmentation decides among GPU nodes,
		// for asks with and without GPUs (CPU taken from next to idle
		// GPUs strands them); the other scores break near ties.
		c.devices = f
		c.score = f + fragTieWeight*(sum/cnt)
		return c
	}
	if len(picks) > 0 {
		var d float64
		for _, p := range picks {
			d += p.score
		}
		c.devices = d / float64(len(picks))
		sum += c.devices
		cnt++
	}
	c.score = sum / cnt
	return c
}

// spreadScore is in [-1,1]: positive for values below their target share.
func (tc *tgCtx) spreadScore(n *api.Node) float64 {
	var total, wsum float64
	for _, st := range tc.spreads {
		w := float64(st.sp.Weight)
		if w <= 0 {
			w = 50
		}
		wsum += w
		v, ok := resolveNode(attrTarget(st.sp.Attribute), n)
		if !ok {
			total -= w
			continue
		}
		cur := float64(st.counts[v])
		var sc float64
		if len(st.sp.SpreadTarget) > 0 {
			pct, sumPct, found := 0.0, 0.0, false
			for _, t := range st.sp.SpreadTarget {
				sumPct += float64(t.Percent)
				if t.Value == v {
					pct, found = float64(t.Percent), true
				}
			}
			if !found {
				for _, t := range st.sp.SpreadTarget {
					if t.Value == "*" {
						pct, found = float64(t.Percent), true
					}
				}
			}
			if !found && sumPct < 100 {
				pct = 100 - sumPct
			}
			want := pct / 100 * float64(tc.tg.Count)
			if want <= 0 {
				sc = -1
			} else {
				sc = (want - cur - 1) / want // counting this placement
			}
		} else {
			mx, sumc := cur, cur
			nvals := 1.0
			if _, seen := st.counts[v]; seen {
				sumc, nvals = 0, 0
			}
			for _, c := range st.counts {
				sumc += float64(c)
				nvals++
				if float64(c) > mx {
					mx = float64(c)
				}
			}
			if mx > 0 {
				sc = (sumc/nvals - cur) / mx
			}
		}
		sc = math.Max(-1, math.Min(1, sc))
		total += w * sc
	}
	if wsum == 0 {
		return 0
	}
	return total / wsum
}

// scoreMeta renders the top candidates' score breakdowns.
func scoreMeta(cands []cand, top int) []*api.NodeScoreMeta {
	// Partial selection: the top few in score order, earlier first on ties.
	idx := make([]int, 0, top+1)
	for i := range cands {
		pos := len(idx)
		for pos > 0 && cands[i].score > cands[idx[pos-1]].score {
			pos--
		}
		if pos >= top {
			continue
		}
		idx = append(idx, 0)
		copy(idx[pos+1:], idx[pos:])
		idx[pos] = i
		if len(idx) > top {
			idx = idx[:top]
		}
	}
	out := make([]*api.NodeScoreMeta, 0, len(idx))
	for _, i := range idx {
		c := &cands[i]
		sc := make(api.Scores, 0, 2) // in name order
		if c.hasSp {
			sc = append(sc, api.Score{Name: "allocation-spread", Value: c.spread})
		}
		sc = append(sc, api.Score{Name: "binpack", Value: c.binpack})
		if len(c.picks) > 0 {
			sc = append(sc, api.Score{Name: "devices", Value: c.devices})
		}
		if c.hasAnti {
			sc = append(sc, api.Score{Name: "job-anti-affinity", Value: c.anti})
		}
		if c.hasAff {
			sc = append(sc, api.Score{Name: "node-affinity", Value: c.affinity})
		}
		if c.hasRes {
			sc = append(sc, api.Score{Name: "node-reschedule-penalty", Value: c.resched})
		}
		out = append(out, &api.NodeScoreMeta{NodeID: c.ns.node.ID, Scores: sc, NormScore: c.score})
	}
	return out
}

// eligible reports whether the group may run on ns at all (class and
// node checks, resources aside) and loads the node's usage when it may:
// the first step of every search over nodes with room to make.
func (rk *ranker) eligible(tc *tgCtx, ns *nodeState) bool {
	if ok, _ := rk.classOK(tc, ns); !ok {
		return false
	}
	if ok, _ := rk.nodeOK(tc, ns); !ok {
		return false
	}
	rk.led.load(ns)
	return true
}

// candidates are the candidate nodes, in the pass's shuffled order.
func (rk *ranker) candidates() []*nodeState { return rk.led.candidates() }

// stopped reports whether this plan stops the alloc.
func (rk *ranker) stopped(id string) bool { return rk.led.isStopped(id) }

// notePlaced counts an alloc of group g placed on n in every group's
// distinct_property and spread counters, journaled.
func (rk *ranker) notePlaced(n *api.Node, g string) {
	for _, other := range rk.groups {
		rk.led.countPlaced(other, n, g)
	}
}

// reopen clears every group's skip mark on ns (an eviction gave it room
// again), journaled.
func (rk *ranker) reopen(ns *nodeState) {
	for _, tc := range rk.groups {
		if ns.pos < len(tc.skip) {
			rk.led.unskipNode(tc, ns.pos)
		}
	}
}

// The ranker is the placer's read-only view for the other stages.
var (
	_ preemptView = (*ranker)(nil)
	_ explainView = (*ranker)(nil)
	_ systemNodes = groupNodes{}
)

// groupNodes is the systemNodes a system group's reconciliation gets:
// the ranker's candidates and checks for one group.
type groupNodes struct {
	rk *ranker
	tc *tgCtx
}

func (g groupNodes) candidate(id string) *nodeState { return g.rk.led.candidate(id) }
func (g groupNodes) candidates() []*nodeState       { return g.rk.led.candidates() }

func (g groupNodes) fitsClass(ns *nodeState) bool {
	ok, _ := g.rk.classOK(g.tc, ns)
	return ok
}

func (g groupNodes) fitsNode(ns *nodeState) bool {
	ok, _ := g.rk.nodeOK(g.tc, ns)
	return ok
}

// fragTieWeight is how much the other scores count beside the
// fragmentation score: enough to break its ties, too little to outweigh
// a real difference.
var fragTieWeight = 0.001
