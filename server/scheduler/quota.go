package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/drover/drover/api"
)

// Queue limits (admission by quota). A placement is made only when, for
// the job's queue and each of its ancestors that has a Limit, what that
// queue's subtree holds plus the placement stays within the limit (any
// GPU, each listed GPU model, CPU MHz, memory MB; see
// api.QueueResources.Exceeds for what a zero means). What a subtree holds
// is the state's QueueUsage, minus the allocs this plan stops or
// preempts, plus the allocs it places; the journal undoes both with a
// rolled-back gang attempt. A group over a limit fails with
// AllocMetric.QuotaExhausted lines ("queue team-a: gpu 16 of 16 used, 1
// more asked"), makes no reservation, and its blocked eval escapes the
// computed-class filter: the queue's usage drops wherever its allocs run.
// The plan applier re-checks the limits against the latest state.

// quotaLevel is one limited queue of the job's queue chain.
type quotaLevel struct {
	name  string
	limit *api.QueueResources
	used  api.QueueResources // the subtree's holding, with this plan's changes
}

// queueLimits is the pass's view of the job's queue chain limits: a
// ledger of what each limited queue's subtree holds, kept current by the
// ledger (countQuota, journaled) as the pass places and stops. The
// explainer may move it to try a release and puts it back.
type queueLimits struct {
	loaded  bool
	levels  []quotaLevel // the job's queue first, then its ancestors; only limited ones
	atLimit bool         // some placement failed on a limit
}

// load reads the queues and their usage on first use (nothing without
// a job).
func (q *queueLimits) load(st State, job *api.Job) error {
	if q.loaded || job == nil {
		return nil
	}
	q.loaded = true
	queues, err := st.Queues()
	if err != nil {
		return fmt.Errorf("read queues: %w", err)
	}
	byName := make(map[string]*api.Queue, len(queues))
	for _, x := range queues {
		byName[x.Name] = x
	}
	for _, name := range api.QueueAncestry(api.JobQueue(job)) {
		if x := byName[name]; x != nil && limits(x.Limit) {
			q.levels = append(q.levels, quotaLevel{name: name, limit: x.Limit})
		}
	}
	if len(q.levels) == 0 {
		return nil
	}
	usage, err := st.QueueUsage()
	if err != nil {
		return fmt.Errorf("read queue usage: %w", err)
	}
	for name, u := range usage {
		for i := range q.levels {
			if inQueueTree(name, q.levels[i].name) {
				q.levels[i].used.Add(*u, 1)
			}
		}
	}
	return nil
}

// limited reports whether some queue of the job's chain has a limit.
func (q *queueLimits) limited() bool { return len(q.levels) > 0 }

// markAtLimit records that a placement failed on a limit; isAtLimit
// reports it (no reservation then: holding nodes would serve nothing).
func (q *queueLimits) markAtLimit()    { q.atLimit = true }
func (q *queueLimits) isAtLimit() bool { return q.atLimit }

// limits reports whether l caps anything.
func limits(l *api.QueueResources) bool {
	return l != nil && (l.GPUs > 0 || l.CPU > 0 || l.MemoryMB > 0 || len(l.GPUsByModel) > 0)
}

// inQueueTree reports whether queue is root or one of its descendants.
func inQueueTree(queue, root string) bool {
	return queue == root || strings.HasPrefix(queue, root+"/")
}

// apply adds sign times what a holds to the limited queues whose subtree
// a's queue is in (not journaled: see ledger.countQuota).
func (q *queueLimits) apply(a *api.Allocation, sign int) {
	name := api.JobQueue(a.Job)
	var u api.QueueResources
	for i := range q.levels {
		l := &q.levels[i]
		if !inQueueTree(name, l.name) {
			continue
		}
		if u.IsZero() {
			u = a.QueueUsage()
		}
		l.used.Add(u, sign)
	}
}

// quotaAsk is what a placement of the group on ns holds (the queue
// accounting of its alloc: CPU, memory, the picked GPUs by model, a share
// as its fraction).
func quotaAsk(tc *tgCtx, ns *nodeState, picks []devPick) api.QueueResources {
	r := api.QueueResources{CPU: tc.cpuOn(ns), MemoryMB: tc.mem}
	for _, p := range picks {
		if p.group.Type != api.DeviceTypeGPU || len(p.ids) == 0 {
			continue
		}
		n := (&api.AllocatedDeviceResource{DeviceIDs: p.ids, Share: p.share}).GPUs()
		r.GPUs = api.RoundGPUs(r.GPUs + n)
		if r.GPUsByModel == nil {
			r.GPUsByModel = map[string]float64{}
		}
		r.GPUsByModel[p.group.ID()] = api.RoundGPUs(r.GPUsByModel[p.group.ID()] + n)
	}
	return r
}

// fits checks a placement on ns against the limits; it returns the
// exhausted dimension ("quota: queue team-a gpu") or "".
func (q *queueLimits) fits(tc *tgCtx, ns *nodeState, picks []devPick) string {
	if len(q.levels) == 0 {
		return ""
	}
	ask := quotaAsk(tc, ns, picks)
	for i := range q.levels {
		l := &q.levels[i]
		if over := quotaOver(l.used, ask, l.limit); len(over) > 0 {
			return "quota: queue " + l.name + " " + strings.SplitN(over[0], " ", 2)[0]
		}
	}
	return ""
}

// lines explains each limit the ask would pass.
func (q *queueLimits) lines(ask api.QueueResources) []string {
	var out []string
	for i := range q.levels {
		l := &q.levels[i]
		for _, o := range quotaOver(l.used, ask, l.limit) {
			out = append(out, "queue "+l.name+": "+o)
		}
	}
	return out
}

// quotaOver says, for each resource where used plus ask passes the
// limit, "gpu 16 of 16 used, 1 more asked" (also "gpu nvidia/gpu/H100 8
// of 8 used, 2 more asked", "cpu 30000 of 32000 MHz used, 4000 more
// asked", "memory ... MB").
//
// An ask over the limit by itself gets "gpu limit 4, 8 asked by one
// allocation" + neverFits instead: no release of the queue's usage
// would let it run, only a higher limit or a smaller ask.
func quotaOver(used, ask api.QueueResources, limit *api.QueueResources) []string {
	var out []string
	g := api.FormatGPUs
	never := func(dim, lim, asked string) string {
		return fmt.Sprintf("%s limit %s, %s asked by one allocation%s", dim, lim, asked, neverFits)
	}
	switch {
	case limit.GPUs > 0 && ask.GPUs > limit.GPUs:
		out = append(out, never("gpu", g(limit.GPUs), g(ask.GPUs)))
	case limit.GPUs > 0 && ask.GPUs > 0 && api.RoundGPUs(used.GPUs+ask.GPUs) > limit.GPUs:
		out = append(out, fmt.Sprintf("gpu %s of %s used, %s more asked", g(used.GPUs), g(limit.GPUs), g(ask.GPUs)))
	}
	if len(ask.GPUsByModel) > 0 {
		// A limit's model key counts every model it names ("H100" counts
		// "nvidia/gpu/NVIDIA H100 80GB HBM3"): api.GPUModelKeyMatches, as
		// the plan applier counts them.
		models := make([]string, 0, len(limit.GPUsByModel))
		for m := range limit.GPUsByModel {
			models = append(models, m)
		}
		sort.Strings(models)
		for _, m := range models {
			lim := limit.GPUsByModel[m]
			switch n := ask.ModelGPUs(m); {
			case n > lim:
				out = append(out, never("gpu "+m, g(lim), g(n)))
			case n > 0 && api.RoundGPUs(used.ModelGPUs(m)+n) > lim:
				out = append(out, fmt.Sprintf("gpu %s %s of %s used, %s more asked", m, g(used.ModelGPUs(m)), g(lim), g(n)))
			}
		}
	}
	switch {
	case limit.CPU > 0 && ask.CPU > limit.CPU:
		out = append(out, never("cpu", fmt.Sprintf("%d MHz", limit.CPU), fmt.Sprintf("%d MHz", ask.CPU)))
	case limit.CPU > 0 && ask.CPU > 0 && used.CPU+ask.CPU > limit.CPU:
		out = append(out, fmt.Sprintf("cpu %d of %d MHz used, %d more asked", used.CPU, limit.CPU, ask.CPU))
	}
	switch {
	case limit.MemoryMB > 0 && ask.MemoryMB > limit.MemoryMB:
		out = append(out, never("memory", fmt.Sprintf("%d MB", limit.MemoryMB), fmt.Sprintf("%d MB", ask.MemoryMB)))
	case limit.MemoryMB > 0 && ask.MemoryMB > 0 && used.MemoryMB+ask.MemoryMB > limit.MemoryMB:
		out = append(out, fmt.Sprintf("memory %d of %d MB used, %d more asked", used.MemoryMB, limit.MemoryMB, ask.MemoryMB))
	}
	return out
}

// neverFits ends a quota line whose ask is over the limit by itself.
const neverFits = ": it can never run under this limit"

// isGPUAsk reports whether a device ask names GPUs ("gpu", "nvidia/gpu",
// "nvidia/gpu/H100"; not MIG instances, which queues do not count: see
// api.GPUAskModel).
func isGPUAsk(name string) bool {
	_, ok := api.GPUAskModel(name)
	return ok
}

// isQuotaDim reports whether an exhausted dimension is a queue limit.
func isQuotaDim(why string) bool { return strings.HasPrefix(why, "quota: ") }

// loadQuota reads the queue limits on first use (queueLimits.load).
func (pl *placer) loadQuota() {
	if err := pl.quota.load(pl.env.st, pl.env.job); err != nil {
		pl.env.err = err
	}
}

// quotaPrecheck tells, before any node is looked at, whether the group's
// smallest possible ask (its direct CPU, memory and GPU count) is over a
// limit already; it returns the explanation lines.
func (pl *placer) quotaPrecheck(tc *tgCtx) []string {
	pl.loadQuota()
	if !pl.quota.limited() {
		return nil
	}
	return pl.quota.lines(groupAsk(tc))
}

// quotaFail records a group failing on a limit before any node was
// looked at.
func (pl *placer) quotaFail(tc *tgCtx, lines []string) {
	pl.quota.markAtLimit()
	pl.out.escape = true
	pl.led.failGroup(tc)
	pl.out.failed[tc.tg.Name] = &api.AllocMetric{NodesInPool: pl.led.size(), NodesAvailable: pl.led.available(), QuotaExhausted: lines}
	pl.out.queued[tc.tg.Name]++
}

// quotaExplain adds the limit lines of a node rejected on a quota
// dimension to m (each line once) and marks the pass quota-blocked.
func (pl *placer) quotaExplain(m *api.AllocMetric, tc *tgCtx, ns *nodeState, why string) {
	if !isQuotaDim(why) {
		return
	}
	pl.quota.markAtLimit()
	pl.out.escape = true
	var picks []devPick
	if len(tc.devs) > 0 {
		picks, _ = pl.dev.pick(ns, tc.devs)
	}
	for _, l := range pl.quota.lines(quotaAsk(tc, ns, picks)) {
		if !slices.Contains(m.QuotaExhausted, l) {
			m.QuotaExhausted = append(m.QuotaExhausted, l)
		}
	}
}
