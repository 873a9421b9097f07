package scheduler

import (
	"fmt"
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// Reservations keep a pending gang from starving behind a stream of
// smaller work (Slurm's backfill, without run time estimates): when a
// gang group cannot be placed, the pass picks the nodes the gang will use
// once the work on them that ends or can be preempted leaves (the most
// free now first, the previous reservation's nodes before others) and records
// them on the blocked eval (api.Reservation). Every pass reads the active
// reservations (State.Reservations) and, for a job the reservation holds
// back (lower priority, or the same priority and newer), treats the
// reserved capacity as taken: a placement on a reserved node is allowed
// only when the node keeps room for the reservation after it in every
// dimension the placement uses (backfill that cannot delay the gang). The
// reservation ends with its blocked eval.

// DimReserved is the DimensionExhausted key of nodes refused because
// their free capacity is reserved for a pending gang.
const DimReserved = "reserved for a pending gang"

// maxReserveVisits bounds the nodes examined to reserve for one group.
const maxReserveVisits = 2048

// reservations is the pass's view of the active reservations: what they
// hold back from the job being placed, node by node (read once per pass).
type reservations struct {
	env   *passEnv
	read  bool
	holds map[string]*nodeHold // node ID -> what reservations holding back this job need there
}

// nodeHold is the capacity active reservations need on one node.
type nodeHold struct {
	cpu, mem, disk int64
	devs           map[string]int // requested device name -> instances
}

// get returns, by node ID, the capacity held by active reservations
// against the job being placed (read once per pass; nil when none).
func (rv *reservations) get() map[string]*nodeHold {
	if rv.read {
		return rv.holds
	}
	rv.read = true
	rs, err := rv.env.st.Reservations()
	if err != nil {
		rv.env.err = fmt.Errorf("read reservations: %w", err)
		return nil
	}
	job := rv.env.job
	ns := job.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	for _, r := range rs {
		if !r.Holds(ns, job.ID, job.Priority, job.CreateIndex) {
			continue
		}
		for _, n := range r.Nodes {
			if rv.holds == nil {
				rv.holds = map[string]*nodeHold{}
			}
			h := rv.holds[n.NodeID]
			if h == nil {
				h = &nodeHold{}
				rv.holds[n.NodeID] = h
			}
			h.cpu += n.CPU
			h.mem += n.MemoryMB
			h.disk += n.DiskMB
			for _, d := range n.Devices {
				if h.devs == nil {
					h.devs = map[string]int{}
				}
				h.devs[d.Name] += d.Count
			}
		}
	}
	return rv.holds
}

// holdOK reports whether placing the group on ns (with the device picks)
// leaves room for what reservations hold there, in every dimension the
// placement takes from: a CPU-only job may still use a GPU node's spare
// CPU and memory while its GPUs wait for a gang, never the GPUs.
func (rv *reservations) holdOK(tc *tgCtx, ns *nodeState, picks []devPick) bool {
	h := rv.get()[ns.node.ID]
	if h == nil {
		return true
	}
	u := ns.cap.Used()
	for _, d := range [...]struct{ ask, free, held int64 }{
		{tc.cpuOn(ns), ns.cap.CPU - u.CPU, h.cpu},
		{tc.mem, ns.cap.MemoryMB - u.MemoryMB, h.mem},
		{tc.disk, ns.cap.DiskMB - u.DiskMB, h.disk},
	} {
		if d.ask > 0 && d.free-d.ask < d.held {
			return false
		}
	}
	for name, n := range h.devs {
		taken := 0
		for _, p := range picks {
			if deviceNameMatch(name, p.group) {
				taken += len(p.ids)
			}
		}
		if taken > 0 && freeDevices(ns, name, nil)-taken < n {
			return false
		}
	}
	return true
}

// freeDevices counts the healthy instances on ns matching name that are
// unused, or used only by allocs in released.
func freeDevices(ns *nodeState, name string, released map[string]bool) int {
	r := ns.node.NodeResources
	if r == nil {
		return 0
	}
	n := 0
	for _, g := range r.Devices {
		if !deviceNameMatch(name, g) {
			continue
		}
		for _, in := range g.Instances {
			if in.Healthy && (!ns.cap.DeviceUsed(in.ID) || released[in.ID]) {
				n++
			}
		}
	}
	return n
}

// reservation is the blocked eval's reservation, or nil: for each gang
// group left unplaced (every group of a job gang when one failed), the
// members still to place (an elastic gang's min) on the nodes that can
// take them once work of the job's priority or lower leaves them. A group
// those nodes cannot cover gets none (it would hold capacity for nothing).
func (pl *placer) reservation() *api.Reservation {
	if pl.quota.isAtLimit() {
		return nil // at a queue limit: holding nodes would serve nothing
	}
	job, failed, queued := pl.env.job, pl.out.failed, pl.out.queued
	jobGangFailed := false
	if job.Gang != nil {
		for _, tg := range job.TaskGroups {
			jobGangFailed = jobGangFailed || failed[tg.Name] != nil
		}
	}
	var r *api.Reservation
	taken := map[string]*api.ReservedNode{}
	for _, tg := range job.TaskGroups {
		spec, id := job.GangOf(tg)
		if spec == nil || queued[tg.Name] <= 0 || (failed[tg.Name] == nil && !jobGangFailed) {
			continue
		}
		need := queued[tg.Name]
		if id != api.GangJobWide && spec.Min > 0 && spec.Min < need {
			need = spec.Min
		}
		nodes := pl.reserveNodes(pl.rk.group(tg), need, taken)
		if len(nodes) == 0 {
			continue
		}
		if r == nil {
			ns := job.Namespace
			if ns == "" {
				ns = api.DefaultNamespace
			}
			r = &api.Reservation{Namespace: ns, JobID: job.ID, JobCreateIndex: job.CreateIndex,
				Priority: job.Priority, CreateTime: pl.env.opts.Now.UnixNano()}
		}
		r.Groups = append(r.Groups, tg.Name)
		for _, n := range nodes {
			if cur := taken[n.NodeID]; cur != nil {
				cur.Members += n.Members
				cur.CPU += n.CPU
				cur.MemoryMB += n.MemoryMB
				cur.DiskMB += n.DiskMB
				cur.Devices = append(cur.Devices, n.Devices...)
				continue
			}
			taken[n.NodeID] = n
			r.Nodes = append(r.Nodes, n)
		}
	}
	return r
}

// reserveOption is a node that can take members of a group.
type reserveOption struct {
	ns      *nodeState
	fit     int     // members that fit once lower-or-equal priority work leaves
	missing float64 // share of one member's ask not free now (0: fits now)
	prev    bool    // in the reservation the eval had
}

// reserveNodes picks the nodes for need members of the group: previous
// reservation nodes first, then the nodes where a member misses the least
// now; nil when the nodes examined cannot take them all.
func (pl *placer) reserveNodes(tc *tgCtx, need int, taken map[string]*api.ReservedNode) []*api.ReservedNode {
	prev := map[string]bool{}
	var order []*nodeState
	if r := pl.env.eval.Reservation; r != nil {
		for _, n := range r.Nodes {
			if ns := pl.led.candidate(n.NodeID); ns != nil && !prev[n.NodeID] {
				prev[n.NodeID] = true
				order = append(order, ns)
			}
		}
	}
	for i, ns := range pl.led.candidates() {
		if i >= maxReserveVisits {
			break
		}
		if !prev[ns.node.ID] {
			order = append(order, ns)
		}
	}
	var opts []reserveOption
	for _, ns := range order {
		if !pl.rk.eligible(tc, ns) {
			continue
		}
		if pl.env.err != nil {
			return nil
		}
		fit, missing := pl.resv.reserveFit(tc, ns, taken[ns.node.ID])
		if fit > 0 {
			opts = append(opts, reserveOption{ns: ns, fit: fit, missing: missing, prev: prev[ns.node.ID]})
		}
	}
	sort.SliceStable(opts, func(i, j int) bool {
		a, b := &opts[i], &opts[j]
		switch {
		case a.prev != b.prev:
			return a.prev
		case a.missing != b.missing:
			return a.missing < b.missing
		case a.fit != b.fit:
			return a.fit > b.fit
		}
		return a.ns.pos < b.ns.pos
	})
	var out []*api.ReservedNode
	left := need
	for _, o := range opts {
		if left == 0 {
			break
		}
		k := min(o.fit, left)
		left -= k
		rn := &api.ReservedNode{NodeID: o.ns.node.ID, Members: k, CPU: int64(k) * tc.cpuOn(o.ns),
			MemoryMB: int64(k) * tc.mem, DiskMB: int64(k) * tc.disk}
		for _, d := range tc.devs {
			rn.Devices = append(rn.Devices, api.ReservedDevice{Name: d.req.Name, Count: k * devCount(d.req)})
		}
		out = append(out, rn)
	}
	if left > 0 {
		return nil
	}
	return out
}

func devCount(r *api.RequestedDevice) int {
	if r.Count == 0 {
		return 1
	}
	return int(r.Count)
}

// releases reports whether a live alloc of another job will make room for
// the job being placed: batch work of its priority or lower ends by
// itself; work at least preemptPriorityDelta lower that the job's job may
// evict is preempted once its min_runtime has passed. Service work of
// about the same priority may run for ever, so a reservation never counts
// on it (it would hold the node's spare room for nothing).
func (rv *reservations) releases(a *api.Allocation) bool {
	job := rv.env.job
	if a.JobID == job.ID && a.Namespace == job.Namespace {
		return false
	}
	p := allocPriority(a)
	if p > job.Priority {
		return false
	}
	if a.Job != nil && (a.Job.Type == api.JobTypeBatch || a.Job.Type == api.JobTypeSysBatch) {
		return true
	}
	return p <= job.Priority-preemptPriorityDelta && rv.env.preemptionEnabled() &&
		(a.Job == nil || a.Job.Preemptible == nil || *a.Job.Preemptible)
}

// reserveFit returns how many members of the group fit on ns once the
// live allocs that release room (releases) leave (less
// what other reservations holding this job back and this reservation's
// other groups need there), and the share of one member's ask that is
// not free now.
func (rv *reservations) reserveFit(tc *tgCtx, ns *nodeState, mine *api.ReservedNode) (int, float64) {
	u := ns.cap.Used()
	now := [3]int64{ns.cap.CPU - u.CPU, ns.cap.MemoryMB - u.MemoryMB, ns.cap.DiskMB - u.DiskMB}
	if h := rv.get()[ns.node.ID]; h != nil {
		now[0], now[1], now[2] = now[0]-h.cpu, now[1]-h.mem, now[2]-h.disk
	}
	if mine != nil {
		now[0], now[1], now[2] = now[0]-mine.CPU, now[1]-mine.MemoryMB, now[2]-mine.DiskMB
	}
	later := now
	released := map[string]bool{}
	for _, a := range ns.allocs {
		if !rv.releases(a) {
			continue
		}
		v := capacity.AllocVector(a.AllocatedResources)
		later[0], later[1], later[2] = later[0]+v.CPU, later[1]+v.MemoryMB, later[2]+v.DiskMB
		for _, id := range v.Devices {
			released[id] = true
		}
	}
	ask := [3]int64{tc.cpuOn(ns), tc.mem, tc.disk}
	fit := -1
	missing := 0.0
	for i, a := range ask {
		if a <= 0 {
			continue
		}
		k := int(max(later[i], 0) / a)
		if fit < 0 || k < fit {
			fit = k
		}
		if now[i] < a {
			missing += float64(a-max(now[i], 0)) / float64(a)
		}
	}
	for _, d := range tc.devs {
		want := devCount(d.req)
		held := 0
		if h := rv.get()[ns.node.ID]; h != nil {
			held += h.devs[d.req.Name]
		}
		if mine != nil {
			for _, md := range mine.Devices {
				if md.Name == d.req.Name {
					held += md.Count
				}
			}
		}
		laterFree := freeDevices(ns, d.req.Name, released) - held
		nowFree := freeDevices(ns, d.req.Name, nil) - held
		k := max(laterFree, 0) / want
		if fit < 0 || k < fit {
			fit = k
		}
		if nowFree < want {
			// Devices weigh most: a node with the GPUs free now comes first.
			missing += 4 * float64(want-max(nowFree, 0)) / float64(want)
		}
	}
	return max(fit, 0), missing
}
