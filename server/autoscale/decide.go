package autoscale

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

// MaxDemandEvals bounds the pending evals one counterfactual schedules
// again (each is a scheduler pass).
const MaxDemandEvals = 256

// DemandInput is what the scale-out counterfactual of one pool reads.
type DemandInput struct {
	State scheduler.State
	// Pending are the evals waiting for capacity (blocked), any order.
	Pending []*api.Evaluation
	Policy  Policy
	// Booting is how many of the pool's instances are on their way.
	Booting int
	// Room is how many more instances the pool may have (max minus the
	// instances it has, booting ones included).
	Room int
	// Options for the scheduler passes (Now, FairShare, Preemption ...).
	Options scheduler.Options
	// Template, when set, is a live node of the pool the virtual nodes
	// copy (its fingerprint: drivers, attributes, resources) instead of
	// the shape's synthesized node, so that work the real nodes cannot
	// run buys nothing.
	Template *api.Node
}

// virtualNode is a new node of the pool: a copy of the template (empty,
// ready) or the shape's node.
func (in *DemandInput) virtualNode(id string) *api.Node {
	pol := in.Policy
	if in.Template == nil {
		return pol.Shape.Node(id, id, pol.Pool)
	}
	n := in.Template.Copy()
	n.ID, n.Name, n.SecretID = id, id, ""
	n.Status, n.SchedulingEligibility, n.Drain, n.DrainStrategy, n.LastDrain = api.NodeStatusReady, api.NodeSchedulingEligible, false, nil, nil
	n.Events = nil
	if n.Meta == nil {
		n.Meta = map[string]string{}
	}
	n.Meta[MetaInstance] = id
	if n.Attributes != nil {
		n.Attributes["unique.hostname"] = id
	}
	return n
}

// DemandResult is the scale-out counterfactual's answer.
type DemandResult struct {
	// New is the number of nodes of the pool's shape to buy.
	New int
	// Allocs is how many allocs the new and booting nodes would take.
	Allocs int
}

// virtualID names the i-th virtual node of a pool (booting: the
// instances on their way; else nodes not bought yet).
func virtualID(pool string, booting bool, i int) string {
	kind := 'n'
	if booting {
		kind = 'b'
	}
	return fmt.Sprintf("autoscale-%s-%c%05d", pool, kind, i)
}

// Demand schedules the pending evals again, highest priority first, on
// the state plus the booting instances as ready nodes, then on Room
// nodes more, and returns how many of those the passes use. The passes
// are the scheduler's own: a gang is placed whole or not at all, queue
// limits hold across the passes (each sees the ones before it), the
// job's pool, datacenters and constraints decide which nodes fit.
func Demand(in DemandInput) (DemandResult, error) {
	var res DemandResult
	pending := append([]*api.Evaluation(nil), in.Pending...)
	sort.SliceStable(pending, func(i, j int) bool {
		if pending[i].Priority != pending[j].Priority {
			return pending[i].Priority > pending[j].Priority
		}
		if pending[i].CreateTime != pending[j].CreateTime {
			return pending[i].CreateTime < pending[j].CreateTime
		}
		return pending[i].ID < pending[j].ID
	})
	if len(pending) == 0 {
		return res, nil
	}
	if len(pending) > MaxDemandEvals {
		pending = pending[:MaxDemandEvals] // the highest priority first; the rest next pass
	}
	// Each pending alloc needs one node at most: no more virtual nodes
	// than that (the passes cost in proportion to the nodes).
	room := min(in.Room, pendingAllocs(in.State, pending))
	ov := newOverlay(in.State)
	pol := in.Policy
	for i := range in.Booting {
		ov.addNode(in.virtualNode(virtualID(pol.Pool, true, i)))
	}
	newNodes := map[string]bool{}
	for i := range room {
		id := virtualID(pol.Pool, false, i)
		newNodes[id] = true
	}
	// First the booting nodes alone, so that new nodes are bought only
	// for what they cannot take; then the new ones.
	rounds := [][]string{nil, nil}
	for id := range newNodes {
		rounds[1] = append(rounds[1], id)
	}
	sort.Strings(rounds[1])
	used := map[string]bool{}
	left := pending
	for r, add := range rounds {
		if r == 1 && (len(add) == 0 || len(left) == 0) {
			break
		}
		for _, id := range add {
			ov.addNode(in.virtualNode(id))
		}
		var still []*api.Evaluation
		for _, e := range left {
			ev := *e
			ev.Status = api.EvalStatusPending
			ev.BlockedEval, ev.NextEval, ev.FailedTGAllocs = "", "", nil
			out, err := scheduler.Schedule(ov, &ev, in.Options)
			if err != nil {
				return res, fmt.Errorf("counterfactual pass of eval %s: %w", e.ID, err)
			}
			placed, err := ov.place(out.Plan)
			if err != nil {
				return res, err
			}
			for _, a := range placed {
				if _, virtual := ov.byID[a.NodeID]; virtual {
					res.Allocs++
					if newNodes[a.NodeID] {
						used[a.NodeID] = true
					}
				}
			}
			if len(out.Eval.FailedTGAllocs) > 0 || out.Blocked != nil {
				still = append(still, e)
			}
		}
		left = still
	}
	// Nodes of one shape are interchangeable: a booting node left empty
	// takes the place of a new one the passes used.
	empty := in.Booting
	for i := range in.Booting {
		if len(ov.byNode[virtualID(pol.Pool, true, i)]) > 0 {
			empty--
		}
	}
	res.New = max(0, len(used)-empty)
	return res, nil
}

// PoolNode is one node of a pool as scale-in sees it.
type PoolNode struct {
	Node *api.Node
	// Instance is the provider's instance ID ("" for a node the provider
	// does not own: never removed).
	Instance string
	// Allocs are the node's non-terminal allocs.
	Allocs []*api.Allocation
	// IdleSince is when the node last became a candidate (empty, or
	// least busy with pending work nowhere); zero: not a candidate now.
	IdleSince time.Time
}

// Busy is the node's largest used share of CPU, memory or GPUs, 0 to 1.
func (p PoolNode) Busy() float64 {
	r := p.Node.NodeResources
	if r == nil {
		return 1
	}
	var cpu, mem int64
	gpus := 0.0
	for _, a := range p.Allocs {
		u := a.QueueUsage()
		cpu += u.CPU
		mem += u.MemoryMB
		gpus += u.GPUs
	}
	busy := 0.0
	if r.Cpu.CpuShares > 0 {
		busy = max(busy, float64(cpu)/float64(r.Cpu.CpuShares))
	}
	if r.Memory.MemoryMB > 0 {
		busy = max(busy, float64(mem)/float64(r.Memory.MemoryMB))
	}
	if n := deviceCount(r); n > 0 {
		busy = max(busy, gpus/float64(n))
	}
	return busy
}

func deviceCount(r *api.NodeResources) int {
	n := 0
	for _, d := range r.Devices {
		if d.Type == "gpu" {
			n += len(d.Instances)
		}
	}
	return n
}

// Candidate reports whether the node may be removed now by the
// strategy, ignoring idle time: an owned, ready node that is empty
// ("empty"), or any owned ready node ("least_busy": its work must also
// move, MovesAway).
func Candidate(strategy string, p PoolNode) bool {
	if p.Instance == "" || p.Node.Status != api.NodeStatusReady || p.Node.Drain {
		return false
	}
	if len(p.Allocs) == 0 {
		return true
	}
	return strategy == StrategyLeastBusy
}

// ScaleInInput is what the scale-in choice of one pool reads.
type ScaleInInput struct {
	State   scheduler.State
	Policy  Policy
	Nodes   []PoolNode
	Now     time.Time
	Count   int // the pool's instances (booting included) and unowned ready nodes
	Options scheduler.Options
}

// ScaleIn picks the nodes to remove: those idle (IdleSince) for the
// policy's idle time, never taking the pool below Min; "empty" takes
// every empty one, "least_busy" at most one per pass, the least busy
// whose work (each gang it holds a member of, whole) the scheduler places
// on the other nodes.
func ScaleIn(in ScaleInInput) ([]PoolNode, error) {
	pol := in.Policy
	spare := in.Count - pol.Min
	if spare <= 0 {
		return nil, nil
	}
	var cands []PoolNode
	for _, p := range in.Nodes {
		if !Candidate(pol.ScaleIn.Strategy, p) || p.IdleSince.IsZero() || in.Now.Sub(p.IdleSince) < pol.ScaleIn.Idle {
			continue
		}
		cands = append(cands, p)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		bi, bj := cands[i].Busy(), cands[j].Busy()
		if bi != bj {
			return bi < bj
		}
		return cands[i].Node.ID < cands[j].Node.ID
	})
	var out []PoolNode
	for _, p := range cands {
		if len(out) == spare {
			break
		}
		if len(p.Allocs) == 0 {
			out = append(out, p)
			continue
		}
		if len(out) > 0 {
			break // one busy node per pass: the next pass sees where its work went
		}
		ok, err := MovesAway(in.State, p, in.Options)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, p)
			break
		}
	}
	return out, nil
}

// MovesAway reports whether the scheduler places every alloc of the
// node elsewhere once the node drains: the what-if hides the node and
// marks its allocs to migrate, with every member of each gang they belong
// to (a gang moves whole or the node stays), and schedules their jobs.
func MovesAway(st scheduler.State, p PoolNode, opts scheduler.Options) (bool, error) {
	ov := newOverlay(st)
	ov.hidden[p.Node.ID] = true
	jobs := map[[2]string]*api.Allocation{}
	for _, a := range p.Allocs {
		ov.migrate[a.ID] = true
		jobs[[2]string{a.Namespace, a.JobID}] = a
		if a.Gang == nil {
			continue
		}
		all, err := st.AllocsByJob(a.Namespace, a.JobID)
		if err != nil {
			return false, fmt.Errorf("read allocs of job %s: %w", a.JobID, err)
		}
		for _, m := range all {
			if m.Gang != nil && m.Gang.ID == a.Gang.ID && !m.TerminalStatus() {
				ov.migrate[m.ID] = true
			}
		}
	}
	keys := make([][2]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1] })
	for _, k := range keys {
		a := jobs[k]
		job := a.Job
		if cur, err := st.JobByID(k[0], k[1]); err == nil && cur != nil {
			job = cur
		}
		if job == nil {
			return false, nil
		}
		if job.Type == api.JobTypeSystem || job.Type == api.JobTypeSysBatch {
			continue // one per node: it goes with the node
		}
		ev := &api.Evaluation{ID: "autoscale-whatif-" + a.ID, Namespace: k[0], JobID: k[1], Priority: job.Priority, Type: job.Type,
			TriggeredBy: api.EvalTriggerNodeDrain, NodeID: p.Node.ID, Status: api.EvalStatusPending}
		out, err := scheduler.Schedule(ov, ev, opts)
		if err != nil {
			return false, fmt.Errorf("what-if of job %s: %w", k[1], err)
		}
		if len(out.Eval.FailedTGAllocs) > 0 || out.Blocked != nil {
			return false, nil
		}
		if _, err := ov.place(out.Plan); err != nil {
			return false, err
		}
	}
	return true, nil
}

// pendingAllocs bounds the allocs the pending evals may place: their
// jobs' group counts.
func pendingAllocs(st scheduler.State, pending []*api.Evaluation) int {
	n := 0
	seen := map[[2]string]bool{}
	for _, e := range pending {
		k := [2]string{e.Namespace, e.JobID}
		if seen[k] {
			continue
		}
		seen[k] = true
		j, err := st.JobByID(e.Namespace, e.JobID)
		if err != nil || j == nil {
			continue
		}
		for _, tg := range j.TaskGroups {
			n += max(tg.Count, 1)
		}
	}
	return n
}
