package scheduler

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// Why pending: at the end of a pass every failed group's metric gets its
// structured reasons (api.PendingReason, from the metric's counters and
// the device shortfalls placer.failureMetric found) and its counterfactuals
// (api.Counterfactual): the preemption that would make room but was not
// made (disabled for the job type, a priority gap under
// preemptPriorityDelta, victims protected by preemptible = false or
// min_runtime), and the running job whose end frees room soonest. A
// group at a queue limit (quota reasons) only looks at work of that
// queue and the queues below it: nothing else frees its quota. Both
// searches look at no more nodes than preemption does (maxPreemptNodes
// with other jobs' allocs among maxPreemptVisits) and leave every node's
// usage and alloc order as they found them.

// maxEndJobsPerNode bounds the jobs tried per node for "when job z ends".
const maxEndJobsPerNode = 16

// maxCounterfactuals bounds the counterfactuals of one group.
const maxCounterfactuals = 3

// explainer is the why-pending stage: at the end of a pass it gives every
// failed group's metric its structured reasons and counterfactuals (see
// above). It reads the placer through explainView and runs the
// preemptor's search with the relaxed victimRule; it may move node usage
// and the queue limits' ledger to try a release but puts them back as
// it found them. The queue a group's limit is at is a parameter of each
// search, not state.
type explainer struct {
	env   *passEnv
	room  explainView
	pre   *preemptor
	quota *queueLimits
}

// explainView is what the explainer reads of the placer: the candidate
// nodes, a group's context and the feasibility checks placement uses.
type explainView interface {
	candidates() []*nodeState
	group(tg *api.TaskGroup) *tgCtx
	eligible(tc *tgCtx, ns *nodeState) bool
	fits(tc *tgCtx, ns *nodeState, quota bool) ([]devPick, string)
}

// pending fills Reasons and Counterfactuals of every failed group but
// the refused ones (over the count limit: their reason is all there is).
func (x *explainer) pending(failed map[string]*api.AllocMetric, refused map[string]bool) {
	job := x.env.job
	groups := make([]string, 0, len(failed))
	for g := range failed {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		m := failed[g]
		if m == nil {
			continue
		}
		if refused[g] {
			continue // its count-limit reason is all there is (refuseOverLimit)
		}
		m.Reasons = pendingReasons(m)
		m.Counterfactuals = nil
		if m.ConstraintFiltered[missingDrivers] > 0 && job != nil {
			tg := job.LookupTaskGroup(g)
			if tg != nil {
				m.Reasons = withDriverReasons(m.Reasons, driverReasons(tg, x.room.candidates()))
			}
		}
		if job == nil || x.env.err != nil || job.Type == api.JobTypeSystem || job.Type == api.JobTypeSysBatch {
			continue // a system job's allocs each need their own node
		}
		tg := job.LookupTaskGroup(g)
		if tg == nil || len(x.room.candidates()) == 0 {
			continue
		}
		// At a queue limit, only work of that queue's subtree ending or
		// being preempted frees quota.
		m.Counterfactuals = x.counterfactuals(x.room.group(tg), quotaQueue(m.Reasons, job))
		if x.env.err != nil {
			m.Counterfactuals = nil // a state read failed: best effort only
		}
	}
}

// pendingReasons derives the structured reasons from a metric; device
// reasons explain already put there are kept. Every metric gets at least
// one reason.
func pendingReasons(m *api.AllocMetric) []api.PendingReason {
	var out, devs []api.PendingReason
	detail := map[string]api.PendingReason{} // exhausted dimensions explain measured
	for _, r := range m.Reasons {
		switch {
		case r.Kind == api.PendingDevices:
			devs = append(devs, r)
		case r.Kind == api.PendingExhausted && r.Node != "" && r.Dimension != "":
			detail[r.Dimension] = r
		}
	}
	for _, q := range m.QuotaExhausted {
		out = append(out, quotaReason(q))
	}
	if m.GangFailure != "" {
		out = append(out, api.PendingReason{Kind: api.PendingGang, Message: m.GangFailure})
	}
	if m.NodesEvaluated == 0 && m.GangFailure == "" && len(m.QuotaExhausted) == 0 {
		out = append(out, api.PendingReason{Kind: api.PendingNoNodes,
			Message: "no ready nodes in the job's datacenters and node pool"})
	}
	for _, dc := range sortedNames(m.NodesAvailable) {
		if m.NodesAvailable[dc] == 0 {
			out = append(out, api.PendingReason{Kind: api.PendingNoNodes, Datacenter: dc,
				Message: "no ready nodes in datacenter " + dc})
		}
	}
	out = append(out, devs...)
	for _, dim := range sortedKeys(m.DimensionExhausted) {
		if len(devs) > 0 && isDeviceDim(dim) || len(m.QuotaExhausted) > 0 && isQuotaDim(dim) {
			continue // said better by the device or quota reasons
		}
		n := m.DimensionExhausted[dim]
		if r, ok := detail[dim]; ok && r.Count == n {
			out = append(out, r)
			continue
		}
		out = append(out, api.PendingReason{Kind: api.PendingExhausted, Dimension: dim, Count: n,
			Message: dim + " exhausted on " + plural(n, "node")})
	}
	for _, c := range sortedKeys(m.ConstraintFiltered) {
		n := m.ConstraintFiltered[c]
		out = append(out, api.PendingReason{Kind: api.PendingConstraint, Constraint: c, Count: n,
			Message: "constraint " + c + " excludes " + plural(n, "node")})
	}
	if len(out) == 0 {
		// Nodes evaluated, none rejected, yet unplaced: placements earlier
		// in this pass took the room the counters saw.
		out = append(out, api.PendingReason{Kind: api.PendingExhausted, Count: m.NodesEvaluated,
			Message: "no room left on the " + plural(m.NodesEvaluated, "node") + " evaluated after this pass's other placements"})
	}
	return out
}

// quotaReason renders a QuotaExhausted entry. The scheduler's admission
// writes "queue team-a: gpu 16 of 16 used, 1 more asked", rendered "queue
// team-a is at its limit: gpu 16 of 16 used, 1 more asked"; an ask over
// the limit by itself ("...: it can never run under this limit") reads
// "queue team-a can never run it: gpu limit 4, 8 asked by one allocation
// (raise the limit or ask less)". Other entries that start with "queue
// NAME" or "NAME:" name their queue too.
func quotaReason(q string) api.PendingReason {
	r := api.PendingReason{Kind: api.PendingQuota, Message: q}
	rest, prefixed := strings.CutPrefix(q, "queue ")
	if name, detail, ok := strings.Cut(rest, ": "); ok && api.ValidQueueName(name) {
		r.Queue = name
		r.Message = "queue " + name + " is at its limit: " + detail
		if d, never := strings.CutSuffix(detail, neverFits); never {
			r.Message = "queue " + name + " can never run it: " + d + " (raise the limit or ask less)"
		}
		return r
	}
	if prefixed {
		name, _, _ := strings.Cut(rest, " ")
		if api.ValidQueueName(name) {
			r.Queue = name
		}
	}
	return r
}

// quotaQueue is the queue a group's quota reasons name (the job's own
// when they name none), or "" without quota reasons.
func quotaQueue(rs []api.PendingReason, job *api.Job) string {
	q := ""
	for _, r := range rs {
		if r.Kind != api.PendingQuota {
			continue
		}
		if r.Queue != "" {
			return r.Queue
		}
		q = api.JobQueue(job)
	}
	return q
}

// counterfactuals finds, for one alloc of the group, the preemption that
// was not made and the job whose end frees room; queue is the queue whose
// limit the group is at ("" when none): only its subtree's work counts.
func (x *explainer) counterfactuals(tc *tgCtx, queue string) []api.Counterfactual {
	rule := victimRule{relaxed: true, queue: queue}
	var out []api.Counterfactual
	if c := x.blockedPreemption(tc, rule); c != nil {
		out = append(out, *c)
	}
	if c := x.soonestEnd(tc, rule); c != nil {
		out = append(out, *c)
	}
	if len(out) > maxCounterfactuals {
		out = out[:maxCounterfactuals]
	}
	return out
}

// blockedPreemption runs the preemption search with the relaxed rule
// (every lower-priority alloc of another job, protected or not) and says
// what kept the scheduler from evicting the victims it finds.
func (x *explainer) blockedPreemption(tc *tgCtx, rule victimRule) *api.Counterfactual {
	var node *nodeState
	var victims []*api.Allocation
	if rule.queue != "" {
		node, victims = x.quotaVictims(tc, rule)
	}
	if node == nil {
		c, vs, ok := x.pre.preempt(tc, x.room.candidates(), "", rule)
		if !ok || len(vs) == 0 || !x.quotaFitsWithout(tc, c.ns, c.picks, vs) {
			return nil
		}
		node, victims = c.ns, vs
	}
	return x.describePreemption(node, victims, rule.queue)
}

// quotaVictims is the preemption search of a group at a queue limit
// whose ask fits a node's free room: the fewest lower-priority allocs of
// the queue's subtree (lowest priority, then smallest, first) on the
// nodes sampled whose release brings the queue back within its limit.
// It returns nil when no node has room or the sample frees too little.
func (x *explainer) quotaVictims(tc *tgCtx, rule victimRule) (*nodeState, []*api.Allocation) {
	var room *nodeState
	var picks []devPick
	var cands []*api.Allocation
	examined := 0
	for i, ns := range x.room.candidates() {
		if examined >= maxPreemptNodes || i >= maxPreemptVisits || x.env.err != nil {
			break
		}
		if !x.room.eligible(tc, ns) {
			continue
		}
		if room == nil {
			if p, dim := x.room.fits(tc, ns, false); dim == "" { // without the quota check
				room, picks = ns, p
			}
		}
		found := false
		for _, a := range ns.allocs {
			if x.pre.evictable(a, rule) {
				cands = append(cands, a)
				found = true
			}
		}
		if found {
			examined++
		}
	}
	if room == nil || len(cands) == 0 {
		return nil, nil
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if pi, pj := allocPriority(cands[i]), allocPriority(cands[j]); pi != pj {
			return pi < pj
		}
		return allocWeight(cands[i]) < allocWeight(cands[j])
	})
	var victims []*api.Allocation
	ok := false
	for _, a := range cands {
		victims = append(victims, a)
		x.quota.apply(a, -1)
		if x.quota.fits(tc, room, picks) == "" {
			ok = true
			break
		}
	}
	for _, a := range victims {
		x.quota.apply(a, 1)
	}
	if !ok {
		return nil, nil
	}
	return room, victims
}

// describePreemption renders the counterfactual of evicting victims to
// place on node, with what kept the scheduler from doing it (queue: the
// queue whose limit the group is at, named with each victim job).
func (x *explainer) describePreemption(node *nodeState, victims []*api.Allocation, queue string) *api.Counterfactual {
	job := x.env.job
	byJob := map[string][]*api.Allocation{}
	var keys []string
	for _, v := range victims {
		k := v.Namespace + "/" + v.JobID
		if _, ok := byJob[k]; !ok {
			keys = append(keys, k)
		}
		byJob[k] = append(byJob[k], v)
	}
	// The highest-priority victim job first: it decides the gap.
	sort.SliceStable(keys, func(i, j int) bool {
		return allocPriority(byJob[keys[i]][0]) > allocPriority(byJob[keys[j]][0])
	})
	var blocked []string
	if !x.env.preemptionEnabled() {
		blocked = append(blocked, "preemption is disabled for "+job.Type+" jobs")
	}
	now := x.env.opts.Now.UnixNano()
	var names []string
	for _, k := range keys {
		a := byJob[k][0]
		switch {
		case x.pre.crossQueue(a):
			names = append(names, fmt.Sprintf("job %s (queue %s, above its fair share)", a.JobID, api.JobQueue(a.Job)))
		case queue != "":
			names = append(names, fmt.Sprintf("job %s (priority %d, queue %s)", a.JobID, allocPriority(a), api.JobQueue(a.Job)))
		default:
			names = append(names, fmt.Sprintf("job %s (priority %d)", a.JobID, allocPriority(a)))
		}
		if gap := job.Priority - allocPriority(a); gap < preemptPriorityDelta && !x.pre.crossQueue(a) {
			blocked = append(blocked, fmt.Sprintf("job %s is only %d priority below, under %d", a.JobID, gap, preemptPriorityDelta))
		}
		for _, v := range byJob[k] {
			if why := protectedWhy(v, now); why != "" {
				blocked = append(blocked, "job "+a.JobID+" "+why)
				break
			}
		}
	}
	first := byJob[keys[0]][0]
	out := &api.Counterfactual{Kind: api.CounterPreempt, Namespace: first.Namespace, JobID: first.JobID,
		Priority: allocPriority(first), Node: node.node.Name, Allocs: len(victims),
		Blocked: strings.Join(blocked, "; ")}
	if first.Job != nil {
		out.JobType = first.Job.Type
	}
	out.Message = "would run on node " + node.node.Name + " if " + joinAnd(names) + " were preempted"
	if out.Blocked != "" {
		out.Message += "; not done: " + out.Blocked
	}
	return out
}

// quotaFitsWithout reports whether a placement on ns with picks stays
// within the queue limits once the victims' holdings are released (the
// quota accounting is put back as it was).
func (x *explainer) quotaFitsWithout(tc *tgCtx, ns *nodeState, picks []devPick, victims []*api.Allocation) bool {
	if !x.quota.limited() {
		return true
	}
	for _, v := range victims {
		x.quota.apply(v, -1)
	}
	ok := x.quota.fits(tc, ns, picks) == ""
	for _, v := range victims {
		x.quota.apply(v, 1)
	}
	return ok
}

// protectedWhy says why an alloc is protected from preemption ("" when
// it is not); see preemptProtected.
func protectedWhy(a *api.Allocation, now int64) string {
	j := a.Job
	if j == nil || !preemptProtected(a, now) {
		return ""
	}
	if j.Preemptible != nil && !*j.Preemptible {
		return "is not preemptible"
	}
	ran := time.Duration(now - a.CreateTime).Round(time.Second)
	return "has run " + ran.String() + " of its min_runtime " + j.MinRuntimeOf(a.TaskGroup).String()
}

// endCand is a job whose allocs on one node, gone, let the group fit.
type endCand struct {
	ns     *nodeState
	key    string
	first  *api.Allocation
	allocs int
	oldest int64
}

// better: batch jobs first (they end by themselves), then the longest
// running, then by job ID.
func (a *endCand) better(b *endCand) bool {
	ab, bb := isBatch(a.first), isBatch(b.first)
	if ab != bb {
		return ab
	}
	if a.oldest != b.oldest {
		return a.oldest < b.oldest
	}
	return a.key < b.key
}

func isBatch(a *api.Allocation) bool {
	return a.Job != nil && (a.Job.Type == api.JobTypeBatch || a.Job.Type == api.JobTypeSysBatch)
}

// soonestEnd finds the running job of another job whose allocs on one
// node, if they ended, would let one alloc of the group fit there (of
// rule's queue subtree when it names one).
func (x *explainer) soonestEnd(tc *tgCtx, rule victimRule) *api.Counterfactual {
	job := x.env.job
	var best *endCand
	examined := 0
	for i, ns := range x.room.candidates() {
		if examined >= maxPreemptNodes || i >= maxPreemptVisits || x.env.err != nil {
			break
		}
		if !x.room.eligible(tc, ns) {
			continue
		}
		jobs := map[string][]*api.Allocation{}
		var keys []string
		for _, a := range ns.allocs {
			if (a.JobID == job.ID && a.Namespace == job.Namespace) || !rule.inQueue(a) {
				continue
			}
			k := a.Namespace + "/" + a.JobID
			if _, ok := jobs[k]; !ok {
				if len(keys) == maxEndJobsPerNode {
					continue
				}
				keys = append(keys, k)
			}
			jobs[k] = append(jobs[k], a)
		}
		if len(keys) == 0 {
			continue
		}
		examined++
		order := ns.allocs
		for _, k := range keys {
			list := jobs[k]
			for _, a := range list {
				ns.removeAlloc(a, job)
				x.quota.apply(a, -1) // its end frees its queue's quota too
			}
			_, dim := x.room.fits(tc, ns, true)
			for _, a := range list {
				ns.addAlloc(a, job)
				x.quota.apply(a, 1)
			}
			ns.allocs = order
			if dim != "" {
				continue
			}
			c := &endCand{ns: ns, key: k, first: list[0], allocs: len(list), oldest: list[0].CreateTime}
			for _, a := range list {
				c.oldest = min(c.oldest, a.CreateTime)
			}
			if best == nil || c.better(best) {
				best = c
			}
		}
	}
	if best == nil {
		return nil
	}
	a := best.first
	out := &api.Counterfactual{Kind: api.CounterJobEnds, Namespace: a.Namespace, JobID: a.JobID,
		Priority: allocPriority(a), Node: best.ns.node.Name, Allocs: best.allocs}
	what := "job"
	if a.Job != nil {
		out.JobType = a.Job.Type
		what = a.Job.Type + " job"
	}
	out.Message = fmt.Sprintf("would run on node %s when %s %s (priority %d) ends", best.ns.node.Name, what, a.JobID, out.Priority)
	if rule.queue != "" {
		out.Message = fmt.Sprintf("would run on node %s when %s %s (priority %d, queue %s) ends", best.ns.node.Name, what, a.JobID, out.Priority, api.JobQueue(a.Job))
	}
	return out
}

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return itoa(n) + " " + what + "s"
}

func sortedNames(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
