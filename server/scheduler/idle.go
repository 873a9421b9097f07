package scheduler

import (
	"fmt"

	"github.com/drover/drover/api"
)

// Idle-GPU reclaim by preemption: an alloc whose GPUs have been idle
// (api.GPUUsage) for its idle_timeout, in a queue whose idle_action is
// preempt, may be evicted for a placement that asks for devices, whatever
// its priority or protection, cheapest of all victims, with the reason
// api.IdleReclaimDescription. Pending work that needs no devices, or
// finds room without it, never takes it.

// idleReclaimable reports whether the preemption search of the current
// placement may take a as an idle-GPU victim.
func (pr *preemptor) idleReclaimable(a *api.Allocation) bool {
	return pr.devAsk && pr.idleVictim(a)
}

// idleVictim reports whether a holds GPUs idle past its idle_timeout in a
// queue whose idle_action is preempt.
func (pr *preemptor) idleVictim(a *api.Allocation) bool {
	if a.GPUUsage == nil || a.GPUUsage.IdleSince == 0 || a.Job == nil {
		return false
	}
	q := pr.queue(api.JobQueue(a.Job))
	if q == nil || q.IdleAction != api.IdleActionPreempt {
		return false
	}
	_, idle := a.GPUIdle(api.IdleTimeout(a.Job, a.Job.LookupTaskGroup(a.TaskGroup), q), pr.env.opts.Now)
	return idle
}

// queue returns the queue by name (the state's queues, read once per
// pass), or nil.
func (pr *preemptor) queue(name string) *api.Queue {
	if pr.queues == nil {
		pr.queues = map[string]*api.Queue{}
		qs, err := pr.env.st.Queues()
		if err != nil {
			if pr.env.err == nil {
				pr.env.err = fmt.Errorf("queues: %w", err)
			}
			return nil
		}
		for _, q := range qs {
			pr.queues[q.Name] = q
		}
	}
	return pr.queues[name]
}

// markIdleEvictions gives the plan's evictions of idle-GPU victims the
// reason api.IdleReclaimDescription.
func (pl *placer) markIdleEvictions(victims []*api.Allocation) {
	for _, v := range victims {
		if !pl.pre.idleVictim(v) {
			continue
		}
		for _, c := range pl.out.plan.NodePreemptions[v.NodeID] {
			if c.ID == v.ID {
				c.DesiredDescription = api.IdleReclaimDescription + " (" + c.DesiredDescription + ")"
			}
		}
	}
}
