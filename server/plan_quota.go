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

// planQuota is the queue accounting of one plan verification.
type planQuota struct {
	snap     *state.Snapshot
	overlay  *planCommit
	limited  []*api.Queue               // queues with a limit, by name
	inFlight map[string]*api.Allocation // the overlay's placements by ID
	// base is what each queue holds in the latest state plus the overlay.
	base map[string]api.QueueResources
}

// newPlanQuota reads the limited queues; nil when none is (nothing to check).
func newPlanQuota(snap *state.Snapshot, overlay *planCommit) (*planQuota, error) {
	queues, err := snap.Queues(nil, "")
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", err)
	}
	q := &planQuota{snap: snap, overlay: overlay}
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
	q.base = make(map[string]api.QueueResources, len(usage))
	for name, u := range usage {
		q.base[name] = *u.Copy()
	}
	if overlay != nil {
		// The overlay's changes not yet in snap: its version of an alloc
		// replaces the stored one (nothing changes once snap holds it).
		q.inFlight = map[string]*api.Allocation{}
		for _, list := range overlay.placed {
			for _, a := range list {
				q.inFlight[a.ID] = a
				if err := q.replace(q.base, a.ID, a, overlay.job); err != nil {
					return nil, err
				}
			}
		}
		for id := range overlay.removed {
			if err := q.replace(q.base, id, nil, nil); err != nil {
				return nil, err
			}
		}
	}
	return q, nil
}

// stored is the alloc as snap has it.
func (q *planQuota) stored(id string) (*api.Allocation, error) {
	a, err := q.snap.AllocByID(nil, id)
	if err != nil {
		return nil, fmt.Errorf("alloc %s: %w", id, err)
	}
	return a, nil
}

// current is the alloc as the latest state plus the overlay has it.
func (q *planQuota) current(id string) (*api.Allocation, *api.Job, error) {
	if o := q.overlay; o != nil {
		if o.removed[id] {
			return nil, nil, nil
		}
		if a := q.inFlight[id]; a != nil {
			return a, o.job, nil
		}
	}
	a, err := q.stored(id)
	return a, nil, err
}

// replace moves m from the stored version of alloc id to next (nil: gone).
func (q *planQuota) replace(m map[string]api.QueueResources, id string, next *api.Allocation, job *api.Job) error {
	old, err := q.stored(id)
	if err != nil {
		return err
	}
	count(m, old, nil, -1)
	count(m, next, job, 1)
	return nil
}

// count adds sign times what a non-terminal a holds to its queue in m
// (job: a's job when its copy was stripped).
func count(m map[string]api.QueueResources, a *api.Allocation, job *api.Job, sign int) {
	if a == nil || a.TerminalStatus() {
		return
	}
	j := a.Job
	if j == nil {
		j = job
	}
	name := api.JobQueue(j)
	u := m[name]
	u.Add(a.QueueUsage(), sign)
	m[name] = u
}

// nodeDelta is what the plan's part on a node changes per queue: its
// placements replace the current versions, its stops and preemptions end
// them.
func (q *planQuota) nodeDelta(plan *api.Plan, node string) (map[string]api.QueueResources, error) {
	d := map[string]api.QueueResources{}
	for _, a := range plan.NodeAllocation[node] {
		cur, cj, err := q.current(a.ID)
		if err != nil {
			return nil, err
		}
		count(d, cur, cj, -1)
		count(d, a, plan.Job, 1)
	}
	for _, list := range [][]*api.Allocation{plan.NodeUpdate[node], plan.NodePreemptions[node]} {
		for _, a := range list {
			cur, cj, err := q.current(a.ID)
			if err != nil {
				return nil, err
			}
			count(d, cur, cj, -1)
		}
	}
	return d, nil
}

// raisesOver reports whether delta raises some resource of used above
// limit (zero GPUs, CPU or memory: no cap; a listed model is capped).
func raisesOver(used, delta api.QueueResources, limit *api.QueueResources) bool {
	if delta.GPUs > 0 && limit.GPUs > 0 && used.GPUs+delta.GPUs > limit.GPUs ||
		delta.CPU > 0 && limit.CPU > 0 && used.CPU+delta.CPU > limit.CPU ||
		delta.MemoryMB > 0 && limit.MemoryMB > 0 && used.MemoryMB+delta.MemoryMB > limit.MemoryMB {
		return true
	}
	for m, n := range delta.GPUsByModel {
		if lim, ok := limit.GPUsByModel[m]; ok && n > 0 && used.GPUsByModel[m]+n > lim {
			return true
		}
	}
	return false
}

// subtree sums m over the queue root and its descendants.
func subtree(m map[string]api.QueueResources, root string) api.QueueResources {
	var out api.QueueResources
	for name, u := range m {
		if name == root || strings.HasPrefix(name, root+"/") {
			out.Add(u, 1)
		}
	}
	return out
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
	deltas := map[string]map[string]api.QueueResources{}
	for id, ok := range fits {
		if !ok {
			continue
		}
		d, err := q.nodeDelta(plan, id)
		if err != nil {
			return false, err
		}
		nodes = append(nodes, id)
		deltas[id] = d
	}
	sort.Strings(nodes)
	rejected := false
	for {
		total := map[string]api.QueueResources{}
		for _, id := range nodes {
			for name, u := range deltas[id] {
				t := total[name]
				t.Add(u, 1)
				total[name] = t
			}
		}
		var over *api.Queue
		for _, lq := range q.limited {
			if raisesOver(subtree(q.base, lq.Name), subtree(total, lq.Name), lq.Limit) {
				over = lq
				break
			}
		}
		if over == nil {
			return rejected, nil
		}
		// Reject the last node that adds to the queue over its limit.
		drop := -1
		for i := len(nodes) - 1; i >= 0 && drop < 0; i-- {
			d := subtree(deltas[nodes[i]], over.Name)
			if d.GPUs > 0 || d.CPU > 0 || d.MemoryMB > 0 || anyPositive(d.GPUsByModel) {
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

func anyPositive(m map[string]int) bool {
	for _, n := range m {
		if n > 0 {
			return true
		}
	}
	return false
}
