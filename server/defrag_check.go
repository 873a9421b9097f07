package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/defrag"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// The scheduler's word on a defragmentation plan. The planner models
// capacity, datacenters and pools only; before a plan is shown or applied
// each job's moves go through the defrag eval's own pass (scheduleDefrag)
// on the snapshot, and each pending group the plan claims to unblock is
// scheduled on the state those moves would leave (the why-pending
// question asked again after the moves). Nothing is committed.

// checkDefrag returns the allocs whose move the scheduler refuses and,
// when it refuses none, the pending groups (defrag.Pending.Name) of
// plan.Unblocks that would still place nothing.
func checkDefrag(ctx context.Context, c *serverCore, snap *state.Snapshot, plan *defrag.Plan, pending []*defrag.Pending, now time.Time) (refused, blocked []string, err error) {
	byJob := map[string]map[string]string{}
	jobs := map[string]*api.Job{}
	var keys []string
	for _, m := range plan.Moves {
		k := m.Alloc.Namespace + "/" + m.Alloc.JobID
		if byJob[k] == nil {
			job, err := snap.JobByID(nil, m.Alloc.Namespace, m.Alloc.JobID)
			if err != nil {
				return nil, nil, fmt.Errorf("job of alloc %s: %w", m.Alloc.ID, err)
			}
			byJob[k], jobs[k] = map[string]string{}, job
			keys = append(keys, k)
		}
		byJob[k][m.Alloc.ID] = m.To
	}
	view := &movedView{State: snap.Scheduler(), stopped: map[string]*api.Allocation{}, added: map[string]*api.Allocation{}}
	for _, k := range keys {
		if jobs[k] == nil {
			for id := range byJob[k] {
				refused = append(refused, id)
			}
			continue
		}
		e := c.newJobEval(jobs[k], api.EvalTriggerDefrag)
		e.DefragMoves = byJob[k]
		res, err := scheduleDefrag(ctx, snap.Scheduler(), e, scheduler.Options{Now: now, Logger: c.log})
		if err != nil {
			return nil, nil, fmt.Errorf("check the moves of job %s: %w", k, err)
		}
		kept := map[string]bool{}
		for _, list := range res.Plan.NodeUpdate {
			for _, a := range list {
				kept[a.ID] = true
				view.stopped[a.ID] = a
			}
		}
		for _, list := range res.Plan.NodeAllocation {
			for _, a := range list {
				view.added[a.ID] = a
			}
		}
		for id := range byJob[k] {
			if !kept[id] {
				refused = append(refused, id)
			}
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return refused, nil, nil
	}
	for _, name := range plan.Unblocks {
		i := slices.IndexFunc(pending, func(p *defrag.Pending) bool { return p.Name() == name })
		if i < 0 {
			continue
		}
		p := pending[i]
		e := c.newJobEval(p.Job, api.EvalTriggerQueuedAllocs)
		res, err := scheduler.ScheduleContext(ctx, view, e, scheduler.Options{Now: now, Logger: c.log})
		if err != nil {
			return nil, nil, fmt.Errorf("check pending %s: %w", name, err)
		}
		placed := false
		for _, list := range res.Plan.NodeAllocation {
			for _, a := range list {
				if a.TaskGroup == p.Group {
					if cur, _ := view.AllocByID(a.ID); cur == nil {
						placed = true
					}
				}
			}
		}
		if !placed {
			blocked = append(blocked, name)
		}
	}
	return nil, blocked, nil
}

// movedView is a scheduler state with some allocs stopped and others
// added: what a defragmentation plan's moves would leave.
type movedView struct {
	scheduler.State
	stopped map[string]*api.Allocation // the plan's stopped copies
	added   map[string]*api.Allocation
}

func (v *movedView) swap(list []*api.Allocation, keep func(*api.Allocation) bool) []*api.Allocation {
	out := make([]*api.Allocation, 0, len(list))
	for _, a := range list {
		if s := v.stopped[a.ID]; s != nil {
			a = s
		}
		out = append(out, a)
	}
	for _, a := range v.added {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

func (v *movedView) AllocByID(id string) (*api.Allocation, error) {
	if a := v.added[id]; a != nil {
		return a, nil
	}
	if a := v.stopped[id]; a != nil {
		return a, nil
	}
	return v.State.AllocByID(id)
}

func (v *movedView) AllocsByNode(nodeID string) ([]*api.Allocation, error) {
	list, err := v.State.AllocsByNode(nodeID)
	if err != nil {
		return nil, err
	}
	return v.swap(list, func(a *api.Allocation) bool { return a.NodeID == nodeID }), nil
}

func (v *movedView) AllocsByJob(ns, jobID string) ([]*api.Allocation, error) {
	list, err := v.State.AllocsByJob(ns, jobID)
	if err != nil {
		return nil, err
	}
	return v.swap(list, func(a *api.Allocation) bool { return a.Namespace == ns && a.JobID == jobID }), nil
}
