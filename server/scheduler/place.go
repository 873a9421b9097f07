package scheduler

import (
	"math"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// tgCtx is what placing one task group needs, computed once per pass.
type tgCtx struct {
	tg      *api.TaskGroup
	cpu     int64 // MHz asked directly
	cores   int   // whole cores asked
	mem     int64
	disk    int64
	tasks   []taskAsk
	ports   []portAsk // reserved (Value > 0) and dynamic (Value == 0) ports
	devs    []devAsk
	drivers []string
	ask     capacity.Vector // cpu set per node (cpuOn); static ports, dynamic and core counts

	classCons []*api.Constraint // depend only on the computed class
	nodeCons  []*api.Constraint // read unique node data
	hostsJob  bool              // distinct_hosts at job level
	hostsTG   bool              // distinct_hosts at group or task level
	props     []*distinctProp
	affs      []*api.Affinity
	spreads   []*spreadState
	antiAff   bool // job anti-affinity scores (see jobAntiAffinity)

	classRes map[string]bool
	classWhy map[string]string
	skip     []bool // nodes known infeasible or exhausted for this group
	start    int
	cands    []cand
	devIdx   *devIndex // nodes by device fit (groups asking for devices)
	failed   bool      // one placement failed: later ones are coalesced
}

type taskAsk struct {
	task          *api.Task
	cpu, mem, max int64
	cores         int // whole cores reserved (cpu then comes from the node's MHz per core)
}

type portAsk struct {
	port   api.Port
	group  bool // group network (vs a task network)
	task   string
	netIdx int
}

type distinctProp struct {
	c      *api.Constraint
	tg     bool // group scope (else job)
	limit  int
	counts map[string]int
}

type spreadState struct {
	sp     *api.Spread
	counts map[string]int
}

// cand is one scored candidate node.
type cand struct {
	ns       *nodeState
	score    float64
	binpack  float64
	anti     float64
	resched  float64
	affinity float64
	spread   float64
	devices  float64
	hasAnti  bool
	hasRes   bool
	hasAff   bool
	hasSp    bool
	picks    []devPick
}

// newTG prepares a group's placement context.
func (s *sched) newTG(tg *api.TaskGroup) *tgCtx {
	if tc := s.groups[tg.Name]; tc != nil {
		return tc
	}
	tc := &tgCtx{tg: tg, classRes: map[string]bool{}, classWhy: map[string]string{}, skip: make([]bool, len(s.nodes))}
	s.groups[tg.Name] = tc
	tc.disk = api.DefaultDiskMB
	if tg.EphemeralDisk != nil {
		tc.disk = int64(tg.EphemeralDisk.SizeMB)
	}
	for i, n := range tg.Networks {
		for _, p := range n.ReservedPorts {
			tc.ports = append(tc.ports, portAsk{port: p, group: true, netIdx: i})
		}
		for _, p := range n.DynamicPorts {
			p.Value = 0
			tc.ports = append(tc.ports, portAsk{port: p, group: true, netIdx: i})
		}
	}
	drivers := map[string]bool{}
	addCons := func(cs []*api.Constraint, jobLevel bool) {
		for _, c := range cs {
			switch c.Operand {
			case api.ConstraintDistinctHosts:
				if c.RTarget == "" || c.RTarget == "true" {
					if jobLevel {
						tc.hostsJob = true
					} else {
						tc.hostsTG = true
					}
				}
			case api.ConstraintDistinctProperty:
				lim := 1
				if n, err := strconv.Atoi(c.RTarget); err == nil && n > 0 {
					lim = n
				}
				tc.props = append(tc.props, &distinctProp{c: c, tg: !jobLevel, limit: lim, counts: map[string]int{}})
			default:
				if uniqueTarget(c.LTarget) || uniqueTarget(c.RTarget) {
					tc.nodeCons = append(tc.nodeCons, c)
				} else {
					tc.classCons = append(tc.classCons, c)
				}
			}
		}
	}
	addCons(s.job.Constraints, true)
	addCons(tg.Constraints, false)
	tc.affs = append(tc.affs, s.job.Affinities...)
	tc.affs = append(tc.affs, tg.Affinities...)
	for _, t := range tg.Tasks {
		addCons(t.Constraints, false)
		tc.affs = append(tc.affs, t.Affinities...)
		if t.Driver != "" && !drivers[t.Driver] {
			drivers[t.Driver] = true
			tc.drivers = append(tc.drivers, t.Driver)
		}
		r := t.Resources
		if r == nil {
			r = api.DefaultResources()
		}
		ta := taskAsk{task: t, cpu: int64(r.CPU), mem: int64(r.MemoryMB), max: int64(r.MemoryMaxMB), cores: r.Cores}
		if ta.cores > 0 {
			ta.cpu = 0
		}
		tc.tasks = append(tc.tasks, ta)
		tc.cpu += ta.cpu
		tc.cores += ta.cores
		tc.mem += ta.mem
		for i, n := range r.Networks {
			for _, p := range n.ReservedPorts {
				tc.ports = append(tc.ports, portAsk{port: p, task: t.Name, netIdx: i})
			}
			for _, p := range n.DynamicPorts {
				p.Value = 0
				tc.ports = append(tc.ports, portAsk{port: p, task: t.Name, netIdx: i})
			}
		}
		for _, d := range r.Devices {
			tc.devs = append(tc.devs, devAsk{task: t.Name, req: d})
		}
	}
	for _, sp := range append(append([]*api.Spread{}, s.job.Spreads...), tg.Spreads...) {
		tc.spreads = append(tc.spreads, &spreadState{sp: sp, counts: map[string]int{}})
	}
	s.gangPortAsk(tc)
	tc.antiAff = s.jobAntiAffinity(tc)
	tc.ask = capacity.Vector{MemoryMB: tc.mem, DiskMB: tc.disk, NumCores: tc.cores}
	for _, p := range tc.ports {
		if p.port.Value == 0 {
			tc.ask.NumDynamicPorts++
		} else {
			tc.ask.Ports = append(tc.ask.Ports, p.port.Value)
		}
	}
	if len(tc.nodeCons) > 0 || len(tc.props) > 0 {
		s.escape = true
	}
	// Seed distinct_property and spread counts from the job's live allocs.
	if len(tc.props) > 0 || len(tc.spreads) > 0 {
		for _, a := range s.jobLive {
			if s.stopped[a.ID] {
				continue
			}
			n := s.allNodes[a.NodeID]
			if n == nil {
				continue
			}
			s.countAlloc(tc, n, a.TaskGroup, 1)
		}
	}
	return tc
}

// countAlloc records an alloc of group g on node n in distinct_property
// and spread counters (delta -1 takes one back).
func (s *sched) countAlloc(tc *tgCtx, n *api.Node, g string, delta int) {
	for _, p := range tc.props {
		if p.tg && g != tc.tg.Name {
			continue
		}
		if v, ok := resolveNode(p.c.LTarget, n); ok {
			addCount(p.counts, v, delta)
		}
	}
	if g != tc.tg.Name {
		return
	}
	for _, sp := range tc.spreads {
		if v, ok := resolveNode(attrTarget(sp.sp.Attribute), n); ok {
			addCount(sp.counts, v, delta)
		}
	}
}

// addCount adds delta to m[k], deleting the key at zero: spread scoring
// tells a value never counted from one counted.
func addCount(m map[string]int, k string, delta int) {
	if m[k] += delta; m[k] == 0 {
		delete(m, k)
	}
}

func attrTarget(a string) string {
	if strings.HasPrefix(a, "${") {
		return a
	}
	return "${" + a + "}"
}

// MetaJobAntiAffinity is the group (or job) meta key that turns the job
// anti-affinity score on ("true") or off ("false") whatever the default.
const MetaJobAntiAffinity = "drover.job_anti_affinity"

// jobAntiAffinity says whether placements of the group are scored down on
// nodes that already run allocs of it (as Nomad's job anti-affinity). By
// default only service groups that ask for no devices are: batch work and
// GPU allocs pack (1,000 1-GPU allocs fill 125 8-GPU nodes, not 150+),
// unless the group asks for spreading with a spread block or opts in
// with MetaJobAntiAffinity (group meta first, then job meta).
func (s *sched) jobAntiAffinity(tc *tgCtx) bool {
	for _, m := range []map[string]string{tc.tg.Meta, s.job.Meta} {
		if v, ok := m[MetaJobAntiAffinity]; ok {
			if b, err := strconv.ParseBool(v); err == nil {
				return b
			}
		}
	}
	if len(tc.spreads) > 0 {
		return true
	}
	return s.job.Type == api.JobTypeService && len(tc.devs) == 0
}

func (s *sched) sampleLimit(tc *tgCtx) int {
	if s.opts.SampleLimit != 0 {
		return s.opts.SampleLimit
	}
	if len(tc.affs) > 0 || len(tc.spreads) > 0 {
		// Preferences need a wider view than bin-packing; scoring every
		// node makes a placement O(n) (16 s for 1,000 spread allocs on
		// 5,000 nodes), so a fixed sample of the shuffled nodes is used.
		return preferenceSample
	}
	l := int(math.Ceil(math.Log2(float64(len(s.nodes)))))
	if s.job.Type == api.JobTypeBatch || l < 2 {
		l = 2
	}
	if len(tc.devs) > 0 && l < deviceSample {
		l = deviceSample // of the device index's best fits (devindex.go)
	}
	return l
}

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
func (s *sched) classOK(tc *tgCtx, ns *nodeState) (bool, string) {
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
			ok, why = false, "missing drivers"
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
			if !s.constraintOK(c, n) {
				ok, why = false, c.String()
				break
			}
		}
	}
	tc.classRes[ns.class], tc.classWhy[ns.class] = ok, why
	if ok {
		s.class[ns.class] = true
	} else if _, seen := s.class[ns.class]; !seen {
		s.class[ns.class] = false
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

func (s *sched) constraintOK(c *api.Constraint, n *api.Node) bool {
	l, lok := resolveNode(c.LTarget, n)
	r, rok := resolveNode(c.RTarget, n)
	return s.m.check(c.Operand, l, lok, r, rok)
}

// nodeOK runs the per-node (unique) checks.
func (s *sched) nodeOK(tc *tgCtx, ns *nodeState) (bool, string) {
	n := ns.node
	for _, c := range tc.nodeCons {
		if !s.constraintOK(c, n) {
			return false, c.String()
		}
	}
	if tc.hostsJob || tc.hostsTG {
		s.load(ns)
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

// fits checks resources; it returns the exhausted dimension on failure
// (the capacity.Dim names, or "devices: <ask>").
func (s *sched) fits(tc *tgCtx, ns *nodeState) ([]devPick, string) {
	s.load(ns)
	ask := tc.ask
	ask.CPU = tc.cpuOn(ns)
	if e := ns.cap.Fits(&ask); e != nil {
		return nil, e.Dimension
	}
	var picks []devPick
	if len(tc.devs) > 0 {
		var ok bool
		if picks, ok = s.pickDevices(ns, tc.devs); !ok {
			return nil, "devices: " + s.missingDevice(tc, ns)
		}
	}
	if !s.holdOK(tc, ns, picks) {
		return nil, DimReserved // reserve.go: room kept for a pending gang
	}
	// The relaxed search of explain_pending.go checks the quota itself,
	// with the victims' holdings released.
	if dim := s.quotaFits(tc, ns, picks); dim != "" && !s.relaxedPreempt {
		return nil, dim
	}
	return picks, ""
}

// missingDevice names the first device ask the node cannot satisfy.
func (s *sched) missingDevice(tc *tgCtx, ns *nodeState) string {
	for i := range tc.devs {
		if _, ok := s.pickDevices(ns, tc.devs[i:i+1]); !ok {
			return tc.devs[i].req.Name
		}
	}
	return tc.devs[0].req.Name
}

// checkNode runs every check in order; on success picks holds devices.
func (s *sched) checkNode(tc *tgCtx, ns *nodeState) (int, string, []devPick) {
	if ok, why := s.classOK(tc, ns); !ok {
		return rejClass, why, nil
	}
	if ok, why := s.nodeOK(tc, ns); !ok {
		return rejNode, why, nil
	}
	picks, dim := s.fits(tc, ns)
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
func (s *sched) selectNode(tc *tgCtx, prevNode string, desired int) (*cand, int, int) {
	if len(tc.devs) > 0 {
		return s.selectDeviceNode(tc, prevNode, desired)
	}
	limit := s.sampleLimit(tc)
	tc.cands = tc.cands[:0]
	s.saveCursor(tc)
	evaluated, filtered := 0, 0
	for i := tc.start; i < len(s.nodes); i++ {
		if limit > 0 && len(tc.cands) >= limit {
			break
		}
		if tc.skip[i] {
			if i == tc.start {
				tc.start++
			}
			continue
		}
		ns := s.nodes[i]
		evaluated++
		rej, _, picks := s.checkNode(tc, ns)
		if rej != okNode {
			filtered++
			s.skipNode(tc, i)
			if i == tc.start {
				tc.start++
			}
			continue
		}
		tc.cands = append(tc.cands, s.score(tc, ns, picks, prevNode, desired))
	}
	if s.err != nil {
		return nil, evaluated, filtered
	}
	return tc.best(), evaluated, filtered
}

// best is the highest scored candidate (the earliest on ties), or nil.
func (tc *tgCtx) best() *cand {
	if len(tc.cands) == 0 {
		return nil
	}
	best := 0
	for i := 1; i < len(tc.cands); i++ {
		if tc.cands[i].score > tc.cands[best].score {
			best = i
		}
	}
	return &tc.cands[best]
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
func (s *sched) fitScore(cpuUsed, cpuTotal, memUsed, memTotal int64) float64 {
	if s.opts.Algorithm == AlgorithmSpread {
		return spreadFitScore(cpuUsed, cpuTotal, memUsed, memTotal)
	}
	return binPackScore(cpuUsed, cpuTotal, memUsed, memTotal)
}

func (s *sched) score(tc *tgCtx, ns *nodeState, picks []devPick, prevNode string, desired int) cand {
	c := cand{ns: ns, picks: picks}
	u := ns.cap.Used()
	c.binpack = s.fitScore(u.CPU+tc.cpuOn(ns), ns.cap.CPU, u.MemoryMB+tc.mem, ns.cap.MemoryMB)
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
			if s.m.check(a.Operand, l, lok, r, rok) {
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
		if sp := s.spreadScore(tc, ns.node); sp != 0 {
			c.spread, c.hasSp = sp, true
			sum += sp
			cnt++
		}
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
func (s *sched) spreadScore(tc *tgCtx, n *api.Node) float64 {
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

// explain walks every candidate node with fresh counters to say why a
// placement failed.
func (s *sched) explain(tc *tgCtx) *api.AllocMetric {
	m := &api.AllocMetric{NodesInPool: len(s.nodes), NodesAvailable: s.dcAvail}
	var short devShortfall
	var most resShortfall
	for _, ns := range s.nodes {
		m.NodesEvaluated++
		rej, why, _ := s.checkNode(tc, ns)
		switch rej {
		case rejClass:
			m.NodesFiltered++
			inc(&m.ClassFiltered, ns.class)
			inc(&m.ConstraintFiltered, why)
		case rejNode:
			m.NodesFiltered++
			inc(&m.ConstraintFiltered, why)
		case rejExhausted:
			m.NodesExhausted++
			inc(&m.ClassExhausted, ns.class)
			inc(&m.DimensionExhausted, why)
			if isDeviceDim(why) {
				short.note(s, tc, ns)
			} else {
				most.note(tc, ns, why)
			}
			s.quotaExplain(m, tc, ns, why)
		}
	}
	m.DeviceShortfalls = short.lines()
	m.Reasons = append(short.reasons(), most.reasons(m)...) // the rest at the end of the pass (explainPending)
	return m
}

func inc(m *map[string]int, k string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
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

// cpuOn is the group's CPU ask in MHz on a node: MHz asked directly plus
// reserved cores at the node's MHz per core.
func (tc *tgCtx) cpuOn(ns *nodeState) int64 {
	if tc.cores == 0 {
		return tc.cpu
	}
	return tc.cpu + int64(tc.cores)*ns.mhzPerCore()
}
