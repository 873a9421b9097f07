package scheduler

import (
	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
)

// Reclaim: with Options.FairShare, preemption across queues follows the
// queues' fair shares instead of job priority. A job of a queue below its
// fair share may evict allocs of queues above theirs, whatever their
// jobs' priorities, when the whole victim set keeps every victim queue at
// or above its share and lowers the distance from fairness
// (fairshare.Tally.Reclaim: the no-loop invariant). Inside one queue the
// priority rule stays (preemptPriorityDelta). Across queues priority
// alone never preempts: that could undo a reclaim and loop. min_runtime
// and preemptible = false protect work either way, and gangs go whole
// (victimUnits).
//
// The tally counts every placement and eviction of the pass; a gang
// attempt rolled back leaves its counts in (the queue looks fuller, its
// victims' queues emptier than they are), which only makes the rest of
// the pass reclaim less.

// fairTally is the pass's tally of what each queue holds (nil without
// fair shares), created on first use.
func (pr *preemptor) fairTally() *fairshare.Tally {
	if pr.env.opts.FairShare == nil {
		return nil
	}
	if pr.tally == nil {
		pr.tally = pr.env.opts.FairShare.Tally()
	}
	return pr.tally
}

// crossQueue reports whether a belongs to another queue than the job
// being placed, with fair shares on (its eviction is a reclaim).
func (pr *preemptor) crossQueue(a *api.Allocation) bool {
	return pr.env.opts.FairShare != nil && api.JobQueue(a.Job) != api.JobQueue(pr.env.job)
}

// reclaimable reports whether a, of another queue, may be reclaimed for
// the job being placed: its queue is above its fair share and the job's
// below.
func (pr *preemptor) reclaimable(a *api.Allocation) bool {
	t := pr.fairTally()
	return t.Above(api.JobQueue(a.Job)) && t.Below(api.JobQueue(pr.env.job))
}

// reclaimOK checks a victim set for tc's placement against the fair
// shares (true without them, or when every victim is of the job's own
// queue).
func (pr *preemptor) reclaimOK(tc *tgCtx, victims []*api.Allocation) bool {
	t := pr.fairTally()
	if t == nil {
		return true
	}
	ask := groupAsk(tc)
	return t.Reclaim(api.JobQueue(pr.env.job), &ask, victimsByQueue(victims))
}

// groupAsk is what one alloc of tc's group asks as queues count it
// before a node is picked: its CPU, memory and GPU count.
func groupAsk(tc *tgCtx) api.QueueResources {
	ask := api.QueueResources{CPU: tc.cpu, MemoryMB: tc.mem}
	for _, d := range tc.devs {
		if isGPUAsk(d.req.Name) {
			ask.GPUs = api.RoundGPUs(ask.GPUs + fairshare.AskGPUs(d.req))
		}
	}
	return ask
}

// victimsByQueue sums what the allocs hold by their queue.
func victimsByQueue(allocs ...[]*api.Allocation) map[string]*api.QueueResources {
	by := map[string]*api.QueueResources{}
	for _, list := range allocs {
		for _, v := range list {
			q := api.JobQueue(v.Job)
			if by[q] == nil {
				by[q] = &api.QueueResources{}
			}
			by[q].Add(v.QueueUsage(), 1)
		}
	}
	return by
}

// countPlacement keeps the tally current: a placed and the victims it
// evicted.
func (pr *preemptor) countPlacement(a *api.Allocation, victims []*api.Allocation) {
	t := pr.fairTally()
	if t == nil {
		return
	}
	for _, v := range victims {
		u := v.QueueUsage()
		t.Sub(api.JobQueue(v.Job), &u)
	}
	u := a.QueueUsage()
	t.Add(api.JobQueue(pr.env.job), &u)
}

// reclaimAdmits reports whether evicting u after taken keeps every victim
// queue at or above its share (fairshare.Tally.Keeps; true without fair
// shares), so cheapestOn builds only victim sets a reclaim may take.
func (pr *preemptor) reclaimAdmits(taken []*victimUnit, u *victimUnit) bool {
	t := pr.fairTally()
	if t == nil {
		return true
	}
	sets := [][]*api.Allocation{u.all}
	for _, x := range taken {
		sets = append(sets, x.all)
	}
	by := victimsByQueue(sets...)
	return t.Keeps(api.JobQueue(pr.env.job), by)
}
