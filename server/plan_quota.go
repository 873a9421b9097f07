package server

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// Queue limits in the plan applier. The scheduler admits placements under
// the limits of the job's queue and its ancestors on its snapshot; plans
// of other jobs in the same queues, committed or in flight (the overlay)
// since, may have used the room. dropOverQuota re-checks every limited
// queue against the latest state plus the overlay: a plan may not raise
// a queue subtree's holding of any resource above its limit (a holding
// already above it, after a limit was lowered, may only go down). Nodes
// adding to a queue over its limit are rejected, the last in ID order
// first, until none is over; rejecting a node drops its stops too, so
// the caller alternates this with the gang and orphan-preemption drops
// until nothing more is rejected. The worker refreshes and the scheduler
// explains the limit.

// planQuota is the queue accounting of one plan verification, kept per
// limited queue (its subtree's holding).
type planQuota struct {
	snap     *state.Snapshot
	overlay  *planCommit
	limited  []*api.Queue               // queues with a limit, by name
	inFlight map[string]*api.Allocation // the overlay's placements by ID
	levels   map[string][]int           // queue name -> the limited queues whose subtree holds it
	// base is what each limited queue's subtree holds in the latest
	// state plus the overlay.
	base []api.QueueResources
}

// newPlanQuota reads the limited queues; nil when none is (nothing to check).
func newPlanQuota(snap *state.Snapshot, overlay *planCommit) (*planQuota, error) {
	queues, err := snap.Queues(nil, "")
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	q := &planQuota{snap: snap, overlay: overlay, levels: map[string][]int{}}
	for _, x := range queues {
		if l := x.Limit; l != nil && (l.GPUs > 0 || l.CPU > 0 || l.MemoryMB > 0 || len(l.GPUsByModel) > 0) {
			q.limited = append(q.limited, x)
		}
	}
	if len(q.limited) == 0 {
		return nil, nil
	}
	usage, err := snap.QueueUsage(nil)
	if err != nil {
		return nil, fmt.Errorf("read queue usage: %w", err)
	}
	q.base = make([]api.QueueResources, len(q.limited))
	for name, u := range usage {
		for _, i := range q.levelsOf(name) {
			q.base[i].Add(*u, 1)
		}
	}
	if overlay != nil {
		// The overlay's changes not yet in snap: its version of an alloc
		// replaces the stored one (nothing changes once snap holds it).
		q.inFlight = map[string]*api.Allocation{}
		for _, list := range overlay.placed {
			for _, a := range list {
				q.inFlight[a.ID] = a
				if err := q.replace(a.ID, a, overlay.job); err != nil {
					return nil, err
				}
			}
		}
		for id := range overlay.removed {
			if err := q.replace(id, nil, nil); err != nil {
				return nil, err
			}
		}
	}
	return q, nil
}

// levelsOf lists the limited queues whose subtree holds queue name.
func (q *planQuota) levelsOf(name string) []int {
	if l, ok := q.levels[name]; ok {
		return l
	}
	var l []int
	for i, x := range q.limited {
		if name == x.Name || strings.HasPrefix(name, x.Name+"/") {
			l = append(l, i)
		}
	}
	q.levels[name] = l
	return l
}

// count adds sign times what a non-terminal a holds to the limited
// queues over its queue in m (job: a's job when its copy was stripped).
func (q *planQuota) count(m []api.QueueResources, a *api.Allocation, job *api.Job, sign int) {
	if a == nil || a.TerminalStatus() {
		return
	}
	j := a.Job
	if j == nil {
		j = job
	}
	levels := q.levelsOf(api.JobQueue(j))
	if len(levels) == 0 {
		return
	}
	u := a.QueueUsage()
	for _, i := range levels {
		m[i].Add(u, sign)
	}
}

// replace moves base from the stored version of alloc id to next (nil: gone).
func (q *planQuota) replace(id string, next *api.Allocation, job *api.Job) error {
	old, err := q.snap.AllocByID(nil, id)
	if err != nil {
		return fmt.Errorf("alloc %s: %w", id, err)
	}
	q.count(q.base, old, nil, -1)
	q.count(q.base, next, job, 1)
	return nil
}

// current is the alloc as the latest state plus the overlay has it (nil
// for a new one: never stored, CreateIndex 0).
func (q *planQuota) current(a *api.Allocation) (*api.Allocation, *api.Job, error) {
	if o := q.overlay; o != nil {
		if o.removed[a.ID] {
			return nil, nil, nil
		}
		if c := q.inFlight[a.ID]; c != nil {
			return c, o.job, nil
		}
	}
	if a.CreateIndex == 0 {
		return nil, nil, nil
	}
	c, err := q.snap.AllocByID(nil, a.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("alloc %s: %w", a.ID, err)
	}
	return c, nil, nil
}

// nodeDelta is what the plan's part on a node changes per limited queue
// (nil: nothing): its placements replace the current versions, its stops
// and preemptions end them.
func (q *planQuota) nodeDelta(plan *api.Plan, node string) ([]api.QueueResources, error) {
	var d []api.QueueResources
	add := func(a *api.Allocation, job *api.Job, sign int) {
		if a == nil {
			return
		}
		if d == nil {
			d = make([]api.QueueResources, len(q.limited))
		}
		q.count(d, a, job, sign)
	}
	for _, a := range plan.NodeAllocation[node] {
		cur, cj, err := q.current(a)
		if err != nil {
			return nil, err
		}
		add(cur, cj, -1)
		add(a, plan.Job, 1)
	}
	for _, list := range [][]*api.Allocation{plan.NodeUpdate[node], plan.NodePreemptions[node]} {
		for _, a := range list {
			cur, cj, err := q.current(a)
			if err != nil {
				return nil, err
			}
			add(cur, cj, -1)
		}
	}
	return d, nil
}

// raisesOver reports whether delta raises some resource of used above
// limit (zero GPUs, CPU or memory: no cap; a listed model is capped).
func raisesOver(used, delta api.QueueResources, limit *api.QueueResources) bool {
	if delta.GPUs > 0 && limit.GPUs > 0 && api.RoundGPUs(used.GPUs+delta.GPUs) > limit.GPUs ||
		delta.CPU > 0 && limit.CPU > 0 && used.CPU+delta.CPU > limit.CPU ||
		delta.MemoryMB > 0 && limit.MemoryMB > 0 && used.MemoryMB+delta.MemoryMB > limit.MemoryMB {
		return true
	}
	if len(delta.GPUsByModel) == 0 {
		return false
	}
	// A model key counts every model it names, as the scheduler counts
	// them (api.GPUModelKeyMatches).
	for m, lim := range limit.GPUsByModel {
		if n := delta.ModelGPUs(m); n > 0 && api.RoundGPUs(used.ModelGPUs(m)+n) > lim {
			return true
		}
	}
	return false
}

// adds reports whether d adds some resource.
func adds(d api.QueueResources) bool {
	if d.GPUs > 0 || d.CPU > 0 || d.MemoryMB > 0 {
		return true
	}
	for _, n := range d.GPUsByModel {
		if n > 0 {
			return true
		}
	}
	return false
}

// dropOverQuota rejects accepted nodes of plan (fits false) until no
// limited queue is raised above its limit; it reports whether it
// rejected any.
func dropOverQuota(snap *state.Snapshot, plan *api.Plan, overlay *planCommit, fits map[string]bool) (bool, error) {
	q, err := newPlanQuota(snap, overlay)
	if err != nil || q == nil {
		return false, err
	}
	var nodes []string
	deltas := map[string][]api.QueueResources{}
	for id, ok := range fits {
		if !ok {
			continue
		}
		d, err := q.nodeDelta(plan, id)
		if err != nil {
			return false, err
		}
		if d != nil {
			nodes = append(nodes, id)
			deltas[id] = d
		}
	}
	sort.Strings(nodes)
	rejected := false
	for {
		total := make([]api.QueueResources, len(q.limited))
		for _, id := range nodes {
			for i, u := range deltas[id] {
				total[i].Add(u, 1)
			}
		}
		over := -1
		for i, lq := range q.limited {
			if raisesOver(q.base[i], total[i], lq.Limit) {
				over = i
				break
			}
		}
		if over < 0 {
			return rejected, nil
		}
		// Reject the last node that adds to the queue over its limit.
		drop := -1
		for i := len(nodes) - 1; i >= 0 && drop < 0; i-- {
			if adds(deltas[nodes[i]][over]) {
				drop = i
			}
		}
		if drop < 0 {
			return rejected, nil // unreachable: an over-limit raise has a node adding to it
		}
		fits[nodes[drop]] = false
		rejected = true
		nodes = append(nodes[:drop], nodes[drop+1:]...)
	}
}
