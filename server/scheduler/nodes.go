package scheduler

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
	"github.com/drover/drover/server/glob"
)

// nodeState is one candidate node with its free resources, computed
// lazily (on first visit) from the node's allocations and then updated
// as this pass places and stops allocations. The resource bookkeeping is
// server/capacity's, the same model the plan applier checks plans with.
type nodeState struct {
	node  *api.Node
	pos   int
	class string

	loaded bool
	cap    *capacity.Node
	// capShared: cap is a UsageCache entry's, cloned before the first
	// change (ownCap).
	capShared bool
	usage     *usageEntry       // the UsageCache entry cap came from, if any
	allocs    []*api.Allocation // live allocs (not stopped by this plan)
	jobTG     map[string]int    // live allocs of the scheduled job, by group
	jobTotal  int
	// changed, once loaded, is the pass's log of nodes whose usage
	// changes (see devIndex).
	changed *changeLog
	graphs  map[*api.NodeDeviceResource]*devGraph // device topology, read on first use
}

// graph returns the topology of the node's device group g.
func (ns *nodeState) graph(g *api.NodeDeviceResource) *devGraph {
	if gr := ns.graphs[g]; gr != nil {
		return gr
	}
	if ns.graphs == nil {
		ns.graphs = map[*api.NodeDeviceResource]*devGraph{}
	}
	var healthy []*api.NodeDevice
	for _, d := range g.Instances {
		if d.Healthy {
			healthy = append(healthy, d)
		}
	}
	gr := newDevGraph(healthy)
	ns.graphs[g] = gr
	return gr
}

// nodeIndex is every node of the cluster by ID (any status), read once
// per pass: the reconciler asks it whether an alloc's node is down or
// disconnected, the placer where a gang member runs.
type nodeIndex struct{ all map[string]*api.Node }

// node returns the node of an ID, nil when it is gone.
func (x *nodeIndex) node(id string) *api.Node { return x.all[id] }

// lost reports whether the alloc's node is gone or down.
func (x *nodeIndex) lost(a *api.Allocation) bool {
	n := x.all[a.NodeID]
	return n == nil || n.Status == api.NodeStatusDown
}

// disconnected reports whether the alloc's node is disconnected.
func (x *nodeIndex) disconnected(a *api.Allocation) bool {
	n := x.all[a.NodeID]
	return n != nil && n.Status == api.NodeStatusDisconnected
}

// ledger is the placer's node set and bookkeeping: the candidate nodes
// (ready, in the job's datacenters and pool, shuffled with a seed from the
// eval ID), their usage (nodeState, read on first visit and then kept
// current as the pass places and stops), the allocs this plan stops, the
// log of changed nodes the device indexes follow, and the undo journal
// (journal.go) that checkpoint and rollback use. The queue limits'
// usage (queueLimits) is journaled with it.
type ledger struct {
	env   *passEnv
	idx   *nodeIndex
	quota *queueLimits

	nodes   []*nodeState // candidates, shuffled; ns.pos is the index here
	byID    map[string]*nodeState
	dcAvail map[string]int  // candidates by datacenter (AllocMetric.NodesAvailable)
	stopped map[string]bool // alloc IDs stopped by this plan

	changed   changeLog   // nodes whose usage changed, for device indexes
	undo      []undoEntry // node-state changes since the outermost open checkpoint
	undoDepth int         // open checkpoints
}

// loadNodes reads every node, keeps the ready ones in the job's
// datacenters and pool, and shuffles them with a seed from the eval ID.
func (l *ledger) loadNodes() error {
	env := l.env
	nodes, err := env.st.Nodes()
	if err != nil {
		return fmt.Errorf("schedule eval %s: read nodes: %w", env.eval.ID, err)
	}
	l.idx.all = make(map[string]*api.Node, len(nodes))
	l.dcAvail = map[string]int{}
	l.byID = map[string]*nodeState{}
	store := make([]nodeState, 0, len(nodes))
	for _, n := range nodes {
		l.idx.all[n.ID] = n
		if !n.Ready() || !dcMatch(env.job.Datacenters, n.Datacenter) || !poolMatch(env.job.NodePool, n.NodePool) {
			continue
		}
		l.dcAvail[n.Datacenter]++
		store = append(store, nodeState{node: n})
	}
	l.nodes = make([]*nodeState, len(store))
	for i := range store {
		l.nodes[i] = &store[i]
	}
	// Sort by ID first so the shuffle depends only on the seed, not on
	// the order the state returned nodes in.
	sort.Slice(l.nodes, func(i, j int) bool { return l.nodes[i].node.ID < l.nodes[j].node.ID })
	r := rand.New(rand.NewPCG(env.shuffleK, 0x9e3779b97f4a7c15))
	for i := len(l.nodes) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		l.nodes[i], l.nodes[j] = l.nodes[j], l.nodes[i]
	}
	for i, ns := range l.nodes {
		ns.pos = i
		l.byID[ns.node.ID] = ns
	}
	return nil
}

// load computes the node's usage once.
func (l *ledger) load(ns *nodeState) {
	if ns.loaded {
		return
	}
	ns.loaded = true
	if l.loadCached(ns) {
		ns.changed = &l.changed
		return
	}
	ns.cap = capacity.NewNode(ns.node)
	allocs, err := l.env.st.AllocsByNode(ns.node.ID)
	if err != nil {
		l.env.err = err
		return
	}
	for _, a := range allocs {
		if a.TerminalStatus() || l.stopped[a.ID] {
			continue
		}
		ns.addAlloc(a, l.env.job)
	}
	ns.changed = &l.changed
}

// size is the number of candidate nodes.
func (l *ledger) size() int { return len(l.nodes) }

// candidates are the candidate nodes in the pass's shuffled order (a
// node's pos is its index).
func (l *ledger) candidates() []*nodeState { return l.nodes }

// candidate returns the candidate node of an ID, nil when it is not one.
func (l *ledger) candidate(id string) *nodeState { return l.byID[id] }

// available is the number of candidate nodes by datacenter
// (AllocMetric.NodesAvailable).
func (l *ledger) available() map[string]int { return l.dcAvail }

// isStopped reports whether this plan stops the alloc.
func (l *ledger) isStopped(id string) bool { return l.stopped[id] }

// changes turns on the log of changed nodes (for device indexes) and
// returns it: the positions of loaded nodes whose usage changed, in
// order; entries are only appended.
func (l *ledger) changes() []int32 {
	l.changed.on = true
	return l.changed.nodes
}

// stoppedCount is the number of allocs this plan stops.
func (l *ledger) stoppedCount() int { return len(l.stopped) }

// changeLog lists the positions of loaded nodes whose usage changed, in
// order, once on (a device index exists; other passes keep no log).
type changeLog struct {
	on    bool
	nodes []int32
}

// logChange notes a usage change in the pass's log.
func (ns *nodeState) logChange() {
	if l := ns.changed; l != nil && l.on {
		l.nodes = append(l.nodes, int32(ns.pos))
	}
}

func (ns *nodeState) addAlloc(a *api.Allocation, job *api.Job) {
	ns.insertAlloc(len(ns.allocs), a, job)
}

// ownCap returns cap, first made the pass's own when it is shared.
func (ns *nodeState) ownCap() *capacity.Node {
	if ns.capShared {
		ns.cap, ns.capShared = ns.cap.Clone(), false
	}
	return ns.cap
}

// insertAlloc counts a live alloc at position i of the node's list.
func (ns *nodeState) insertAlloc(i int, a *api.Allocation, job *api.Job) {
	if i == len(ns.allocs) {
		ns.allocs = append(ns.allocs, a)
	} else {
		ns.allocs = slices.Insert(ns.allocs, i, a)
	}
	v := capacity.AllocVector(a.AllocatedResources)
	ns.ownCap().Add(&v)
	ns.logChange()
	if job != nil && a.JobID == job.ID && a.Namespace == job.Namespace {
		if ns.jobTG == nil {
			ns.jobTG = map[string]int{}
		}
		ns.jobTG[a.TaskGroup]++
		ns.jobTotal++
	}
}

// removeAlloc releases a live alloc stopped by this plan and returns its
// former position in the node's list (-1 when it was not there).
func (ns *nodeState) removeAlloc(a *api.Allocation, job *api.Job) int {
	for i, x := range ns.allocs {
		if x.ID != a.ID {
			continue
		}
		ns.allocs = append(ns.allocs[:i:i], ns.allocs[i+1:]...)
		v := capacity.AllocVector(x.AllocatedResources) // what was counted, whatever copy a is
		ns.ownCap().Sub(&v)
		ns.logChange()
		if job != nil && x.JobID == job.ID && x.Namespace == job.Namespace {
			if ns.jobTG[x.TaskGroup]--; ns.jobTG[x.TaskGroup] == 0 {
				delete(ns.jobTG, x.TaskGroup)
			}
			ns.jobTotal--
		}
		return i
	}
	return -1
}

// computedClass returns the node's class key: ComputedClass when the node
// has one, else a hash of everything class-level constraints may read
// (datacenter, pool, class, non-unique attributes and meta, drivers,
// host volumes).
func computedClass(n *api.Node) string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	var sum uint64
	h := fnv.New64a()
	entry := func(kind byte, k, v string) {
		h.Reset()
		h.Write([]byte{kind})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(v))
		sum += h.Sum64() // order independent: no sorting of map keys
	}
	entry('d', n.Datacenter, "")
	entry('p', n.NodePool, "")
	entry('c', n.NodeClass, "")
	for k, v := range n.Attributes {
		if !strings.HasPrefix(k, "unique.") {
			entry('a', k, v)
		}
	}
	for k, v := range n.Meta {
		if !strings.HasPrefix(k, "unique.") {
			entry('m', k, v)
		}
	}
	for k, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			entry('r', k, "")
		}
	}
	for k, v := range n.HostVolumes {
		if v != nil {
			entry('v', k, strconv.FormatBool(v.ReadOnly))
		}
	}
	return "v1:" + strconv.FormatUint(sum, 16)
}

// InScope reports whether job may run on n at all by where it is: its
// datacenters (globs) and node pool, the first feasibility checks (for
// planners outside the scheduler, such as defragmentation).
func InScope(job *api.Job, n *api.Node) bool {
	return dcMatch(job.Datacenters, n.Datacenter) && poolMatch(job.NodePool, n.NodePool)
}

// dcMatch reports whether dc matches any pattern (globs with *).
func dcMatch(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if glob.Match(p, dc) {
			return true
		}
	}
	return false
}

func poolMatch(jobPool, nodePool string) bool {
	if jobPool == "" {
		jobPool = api.DefaultNodePool
	}
	if nodePool == "" {
		nodePool = api.DefaultNodePool
	}
	return jobPool == "all" || jobPool == nodePool
}

func hostIP(n *api.Node) string {
	if ip := n.Attributes["unique.network.ip-address"]; ip != "" {
		return ip
	}
	return "127.0.0.1"
}

// mhzPerCore is the node's CPU shares divided by its core count.
func (ns *nodeState) mhzPerCore() int64 {
	r := ns.node.NodeResources
	if r == nil || r.Cpu.TotalCpuCores == 0 {
		return 0
	}
	return r.Cpu.CpuShares / int64(r.Cpu.TotalCpuCores)
}

// nearCores lists the cores of the NUMA nodes of the devices picked, the
// NUMA node with the most picked devices first (then by ID), so reserved
// cores sit next to the alloc's GPUs where they are free. Nil when the
// node does not report its NUMA cores or no device was picked.
func nearCores(n *api.Node, picks []devPick) []uint16 {
	if len(picks) == 0 || n.NodeResources == nil || len(n.NodeResources.Cpu.NUMA) == 0 {
		return nil
	}
	count := map[int]int{}
	for _, p := range picks {
		for _, inst := range p.group.Instances {
			if slices.Contains(p.ids, inst.ID) {
				count[numaOf(inst)]++
			}
		}
	}
	numa := slices.Clone(n.NodeResources.Cpu.NUMA)
	slices.SortStableFunc(numa, func(a, b api.NodeNUMANode) int {
		if count[a.ID] != count[b.ID] {
			return count[b.ID] - count[a.ID]
		}
		return a.ID - b.ID
	})
	var out []uint16
	for _, nn := range numa {
		if count[nn.ID] == 0 {
			break
		}
		out = append(out, nn.Cores...)
	}
	return out
}

// freeCPUMem is the node's CPU (MHz) and memory (MB) not used.
func (ns *nodeState) freeCPUMem() (int64, int64) {
	u := ns.cap.Used()
	return ns.cap.CPU - u.CPU, ns.cap.MemoryMB - u.MemoryMB
}
