package server

import (
	"fmt"
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// preemptionEvals builds one pending eval (TriggeredBy "preemption") per
// distinct job with an alloc in preempted, so the evicted work is placed
// again (elsewhere now, or once capacity frees through a blocked eval).
// The job's current priority and type come from snap; a job that is gone
// falls back to the alloc's copy, and an alloc without either is skipped.
// Evals are ordered by namespace and job ID.
func preemptionEvals(snap *state.Snapshot, preempted map[string][]*api.Allocation, now int64) []*api.Evaluation {
	jobs := map[api.NamespacedID]*api.Job{}
	for _, allocs := range preempted {
		for _, a := range allocs {
			k := api.NamespacedID{Namespace: a.Namespace, ID: a.JobID}
			if _, seen := jobs[k]; seen {
				continue
			}
			j, err := snap.JobByID(nil, a.Namespace, a.JobID)
			if err != nil || j == nil {
				j = a.Job
			}
			jobs[k] = j
		}
	}
	keys := make([]api.NamespacedID, 0, len(jobs))
	for k, j := range jobs {
		if j != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].ID < keys[j].ID
	})
	out := make([]*api.Evaluation, 0, len(keys))
	for _, k := range keys {
		j := jobs[k]
		ns := j.Namespace
		if ns == "" {
			ns = k.Namespace
		}
		out = append(out, &api.Evaluation{
			ID: newID(), Namespace: ns, Priority: j.Priority, Type: j.Type, JobID: j.ID,
			JobModifyIndex: j.JobModifyIndex, TriggeredBy: api.EvalTriggerPreemption,
			Status: api.EvalStatusPending, CreateTime: now, ModifyTime: now,
		})
	}
	return out
}

// dropOrphanPreemptions keeps only the preemptions whose preempting alloc
// is placed: the victims of a placement on a rejected node stay running.
// A placement's victims, a victim gang's members on other nodes included,
// all name it in PreemptedByAllocation, so they go together and a gang is
// never left partly evicted. An accepted node that loses preemptions is
// checked again (another placement there may have counted on the room),
// and a node rejected that way orphans its own placements' victims, until
// nothing changes. fits is updated; the returned plan is a copy when
// anything was dropped (the submitted plan is not modified).
func dropOrphanPreemptions(snap *state.Snapshot, plan *api.Plan, overlay *planCommit, fits map[string]bool) (*api.Plan, error) {
	out := plan
	for {
		placed := map[string]bool{}
		for node, list := range out.NodeAllocation {
			if fits[node] {
				for _, a := range list {
					placed[a.ID] = true
				}
			}
		}
		next, touched := filterAllocs(out.NodePreemptions, nil, func(a *api.Allocation) bool {
			return a.PreemptedByAllocation != "" && !placed[a.PreemptedByAllocation]
		})
		if len(touched) == 0 {
			return out, nil
		}
		c := *out
		c.NodePreemptions = next
		out = &c
		if err := recheckNodes(snap, out, overlay, fits, touched); err != nil {
			return nil, fmt.Errorf("without orphaned preemptions: %w", err)
		}
	}
}
