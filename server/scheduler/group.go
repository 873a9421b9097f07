package scheduler

import (
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

// group returns the group's placement context, prepared on first use.
func (rk *ranker) group(tg *api.TaskGroup) *tgCtx {
	if tc := rk.groups[tg.Name]; tc != nil {
		return tc
	}
	job := rk.env.job
	tc := &tgCtx{tg: tg, classRes: map[string]bool{}, classWhy: map[string]string{}, skip: make([]bool, rk.led.size())}
	rk.groups[tg.Name] = tc
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
	addCons(job.Constraints, true)
	addCons(tg.Constraints, false)
	tc.affs = append(tc.affs, job.Affinities...)
	tc.affs = append(tc.affs, tg.Affinities...)
	spotCons, spotAffs := spotRules(job, tg)
	addCons(spotCons, false)
	tc.affs = append(tc.affs, spotAffs...)
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
	for _, sp := range append(append([]*api.Spread{}, job.Spreads...), tg.Spreads...) {
		tc.spreads = append(tc.spreads, &spreadState{sp: sp, counts: map[string]int{}})
	}
	rk.gangPortAsk(tc)
	tc.antiAff = rk.jobAntiAffinity(tc)
	tc.ask = capacity.Vector{MemoryMB: tc.mem, DiskMB: tc.disk, NumCores: tc.cores}
	for _, p := range tc.ports {
		if p.port.Value == 0 {
			tc.ask.NumDynamicPorts++
		} else {
			tc.ask.Ports = append(tc.ask.Ports, p.port.Value)
		}
	}
	if len(tc.nodeCons) > 0 || len(tc.props) > 0 {
		rk.out.escape = true
	}
	// Seed distinct_property and spread counts from the job's live allocs.
	if len(tc.props) > 0 || len(tc.spreads) > 0 {
		for _, a := range rk.jobLive {
			if rk.led.isStopped(a.ID) {
				continue
			}
			n := rk.nodes.node(a.NodeID)
			if n == nil {
				continue
			}
			tc.count(n, a.TaskGroup, 1)
		}
	}
	return tc
}

// setJobLive gives the job's live allocs, which seed each group's
// distinct_property and spread counters (those not stopped by then).
func (rk *ranker) setJobLive(live []*api.Allocation) { rk.jobLive = live }

// count records an alloc of group g on node n in the group's
// distinct_property and spread counters (delta -1 takes one back).
func (tc *tgCtx) count(n *api.Node, g string, delta int) {
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
func (rk *ranker) jobAntiAffinity(tc *tgCtx) bool {
	job := rk.env.job
	for _, m := range []map[string]string{tc.tg.Meta, job.Meta} {
		if v, ok := m[MetaJobAntiAffinity]; ok {
			if b, err := strconv.ParseBool(v); err == nil {
				return b
			}
		}
	}
	if len(tc.spreads) > 0 {
		return true
	}
	return job.Type == api.JobTypeService && len(tc.devs) == 0
}

// gangPortAsk adds the gang port to a gang group's asks: a dynamic port
// in a network of its own, so the applier checks it like any port.
func (rk *ranker) gangPortAsk(tc *tgCtx) {
	if g, _ := rk.env.job.GangOf(tc.tg); g == nil {
		return
	}
	for _, p := range tc.ports {
		if p.group && p.port.Label == api.GangPortLabel {
			return
		}
	}
	tc.ports = append(tc.ports, portAsk{port: api.Port{Label: api.GangPortLabel}, group: true, netIdx: len(tc.tg.Networks)})
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

// cpuOn is the group's CPU ask in MHz on a node: MHz asked directly plus
// reserved cores at the node's MHz per core.
func (tc *tgCtx) cpuOn(ns *nodeState) int64 {
	if tc.cores == 0 {
		return tc.cpu
	}
	return tc.cpu + int64(tc.cores)*ns.mhzPerCore()
}
