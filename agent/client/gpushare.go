package client

import (
	"context"
	"errors"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/agent/taskrunner"
	"github.com/drover/drover/api"
)

// restoreMPS runs once at Start, before the restored runners: the MPS
// daemons an earlier agent left running (agent/gpushare) stay for the
// GPUs a restored, not yet dead, task holds (it adopts them when it
// reattaches or starts again) and are told to quit for the others.
func (c *Client) restoreMPS(ctx context.Context, allocs []*api.Allocation) {
	var keep []string
	for _, a := range allocs {
		if a.Job == nil || a.AllocatedResources == nil {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			gpus := taskrunner.MPSGPUs(a.AllocatedResources.Tasks[t.Name])
			if len(gpus) == 0 {
				continue
			}
			rec, err := c.db.Task(a.ID, t.Name)
			if err != nil {
				if !errors.Is(err, clientstate.ErrNotFound) {
					c.log.Warn("read task record", "alloc_id", a.ID, "task", t.Name, "error", err)
				}
				continue
			}
			if rec.State != nil && rec.State.State != api.TaskStateDead {
				keep = append(keep, gpus...)
			}
		}
	}
	if err := c.mps.Restore(ctx, keep); err != nil {
		c.log.Warn("restore MPS daemons", "error", err)
	}
}
