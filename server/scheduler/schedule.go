package scheduler

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/drover/drover/api"
)

// ErrBadEval is returned for an evaluation the scheduler cannot work on
// (nil, or without a job ID).
var ErrBadEval = errors.New("scheduler: bad evaluation")

// ErrBadOptions is returned for Options the scheduler cannot work with
// (an unknown Algorithm).
var ErrBadOptions = errors.New("scheduler: bad options")

// pass is one scheduling pass: it wires the stages (see doc.go) and runs
// them in order: reconcile each group and apply its decisions, place,
// then explain what stayed pending and finish the eval. The stages and
// the records they share are allocated with it, in one piece, and point
// at each other. Single-threaded.
type pass struct {
	env   passEnv
	out   output
	nodes nodeIndex
	quota queueLimits
	led   ledger
	m     matcher
	dev   devicePicker
	resv  reservations
	rec   reconciler
	rk    ranker
	pre   preemptor
	pl    placer
	gangs gangPlacer
	ex    explainer
	// refused are the groups left alone because a count is above
	// Options.MaxGroupCount (refuseOverLimit).
	refused map[string]bool
	// deployBusy: some group still has rollout work (placements,
	// destructive updates waiting, allocs not yet healthy).
	deployBusy bool
}

// Schedule is ScheduleContext with a context that never ends.
func Schedule(st State, eval *api.Evaluation, opts Options) (*Result, error) {
	return ScheduleContext(context.Background(), st, eval, opts)
}

// ScheduleContext reconciles the eval's job with the cluster and returns
// the plan and the updated eval. It is pure: no I/O besides reading st, no
// clock besides opts.Now, and deterministic for a given state, eval and
// options. When ctx ends (the server stops, leadership is lost, a plan
// request goes away) the pass stops before its next placement and returns
// an error wrapping ctx's.
func ScheduleContext(ctx context.Context, st State, eval *api.Evaluation, opts Options) (*Result, error) {
	if eval == nil || eval.JobID == "" {
		return nil, fmt.Errorf("schedule: %w", ErrBadEval)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("schedule eval %s: %w", eval.ID, err)
	}
	switch opts.Algorithm {
	case "", AlgorithmBinpack, AlgorithmSpread:
	default:
		return nil, fmt.Errorf("schedule eval %s: algorithm %q (want %q or %q): %w",
			eval.ID, opts.Algorithm, AlgorithmBinpack, AlgorithmSpread, ErrBadOptions)
	}
	ns := eval.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	job, err := st.JobByID(ns, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("schedule eval %s: read job %q: %w", eval.ID, eval.JobID, err)
	}
	p := newPass(st, eval, opts, job)
	p.env.ctx, p.env.done = ctx, ctx.Done()
	allocs, err := st.AllocsByJob(ns, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("schedule eval %s: read allocs: %w", eval.ID, err)
	}
	if job == nil || job.Stop {
		for _, a := range allocs {
			if !a.TerminalStatus() {
				p.pl.stop(a, "alloc not needed since job is stopped", "")
			}
		}
		return p.finish(), nil
	}
	if job.IsPeriodic() || job.IsParameterized() {
		// Templates: their launches (child jobs) are what get placed.
		return p.finish(), nil
	}
	if err := p.loadNodes(); err != nil {
		return nil, err
	}
	p.pl.loadQuota() // before any stop: stops give back queue usage
	switch job.Type {
	case api.JobTypeSystem, api.JobTypeSysBatch:
		p.scheduleSystem(allocs)
	default:
		p.scheduleGeneric(allocs)
	}
	if p.env.err != nil {
		return nil, fmt.Errorf("schedule eval %s: %w", eval.ID, p.env.err)
	}
	return p.finish(), nil
}

// newPass sets up one scheduling pass of eval for job (nil when gone):
// the shared inputs, the plan, and the stages wired to them.
func newPass(st State, eval *api.Evaluation, opts Options, job *api.Job) *pass {
	p := &pass{refused: map[string]bool{}}
	env := &p.env
	*env = passEnv{st: st, eval: eval, opts: opts, job: job}
	h := fnv.New64a()
	h.Write([]byte(eval.ID))
	env.shuffleK = h.Sum64()
	var idx [8]byte
	binary.LittleEndian.PutUint64(idx[:], st.Index())
	h.Write(idx[:])
	env.rng = rand.New(rand.NewPCG(env.shuffleK, h.Sum64()))
	plan := &api.Plan{EvalID: eval.ID, Priority: eval.Priority, SnapshotIndex: st.Index()}
	if job != nil {
		plan.Job = job
		plan.Priority = job.Priority
	}
	out := &p.out
	*out = output{
		plan: plan, res: &Result{Plan: plan},
		failed: map[string]*api.AllocMetric{}, queued: map[string]int{},
		noRetry: map[string]bool{}, class: map[string]bool{},
	}
	p.led = ledger{env: env, idx: &p.nodes, quota: &p.quota, stopped: map[string]bool{}}
	p.dev = devicePicker{m: &p.m, shapes: opts.Workload}
	if len(opts.Workload) > 0 {
		p.dev.weigh = p.led.scarcity
	}
	p.resv = reservations{env: env}
	p.rec = reconciler{env: env, nodes: &p.nodes, plan: plan}
	p.rk = ranker{env: env, out: out, led: &p.led, nodes: &p.nodes, quota: &p.quota, resv: &p.resv,
		dev: &p.dev, m: &p.m, groups: map[string]*tgCtx{}}
	p.pre = preemptor{env: env, room: &p.rk}
	p.pl = placer{env: env, out: out, led: &p.led, rk: &p.rk, pre: &p.pre, quota: &p.quota, resv: &p.resv,
		dev: &p.dev, gangs: &p.gangs}
	p.gangs = gangPlacer{env: env, out: out, pl: &p.pl, rk: &p.rk, led: &p.led, nodes: &p.nodes}
	p.ex = explainer{env: env, room: &p.rk, pre: &p.pre, quota: &p.quota}
	return p
}

// loadNodes reads every node and keeps the placement candidates (see
// ledger.loadNodes).
func (p *pass) loadNodes() error {
	return p.led.loadNodes()
}

// scheduleGeneric reconciles a service or batch job group by group, then
// makes the placements (stops first, so freed capacity is reusable).
func (p *pass) scheduleGeneric(allocs []*api.Allocation) {
	job := p.env.job
	byGroup := map[string][]*api.Allocation{}
	var names []string
	var live []*api.Allocation
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live = append(live, a)
		}
		if _, ok := byGroup[a.TaskGroup]; !ok {
			names = append(names, a.TaskGroup)
		}
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	p.rk.setJobLive(live)
	sort.Strings(names)
	for _, g := range names {
		if job.LookupTaskGroup(g) != nil {
			continue
		}
		for _, a := range byGroup[g] {
			if !a.TerminalStatus() {
				p.pl.stop(a, "alloc not needed since its group was removed from the job", "")
				p.out.annotate(g).Stop++
			}
		}
	}
	p.refuseOverLimit()
	var places []*placement
	for _, tg := range job.TaskGroups {
		if p.refused[tg.Name] {
			continue
		}
		places = append(places, p.applyGroup(p.rec.group(tg, byGroup[tg.Name]))...)
	}
	p.rec.completeDeployment(p.deployBusy, len(p.out.failed) > 0)
	// Every group's context exists before the first placement so that
	// job-wide counters (distinct_property) see all of this pass's allocs.
	for _, tg := range job.TaskGroups {
		p.rk.group(tg)
	}
	// Place the groups in job order, each group's allocs by index; a
	// gang's groups together, all-or-nothing (gang.go).
	p.pl.placeAll(places, byGroup, p.refused)
}

// applyGroup writes one group's decisions into the plan: the annotation,
// the stops (releasing their node usage), the updates, the follow-up evals
// and the deployment verdict. It returns the placements to make.
func (p *pass) applyGroup(r *groupResult) []*placement {
	addDesired(p.out.annotate(r.tg.Name), &r.desired)
	for _, st := range r.stops {
		p.pl.stop(st.alloc, st.desc, st.client)
	}
	for _, c := range r.updates {
		p.out.plan.AppendAlloc(c)
	}
	p.out.res.FollowUps = append(p.out.res.FollowUps, r.followUps...)
	if r.failDeployment {
		p.rec.failDeployment(r.tg.Name)
	}
	if r.deployBusy {
		p.deployBusy = true
	}
	return r.places
}

// refuseOverLimit leaves alone every group whose count is above
// Options.MaxGroupCount, with the other groups of its gang (all groups of
// an all_at_once job): nothing of them is reconciled or placed, each fails
// with an api.PendingCountLimit reason and no blocked eval (more capacity
// would not help; a new job version brings a new eval). Running allocs
// keep running: a job stored before the bound was set or lowered is not
// cut down by it.
func (p *pass) refuseOverLimit() {
	limit := p.env.opts.MaxGroupCount
	if limit <= 0 {
		limit = DefaultMaxGroupCount
	}
	job := p.env.job
	why := map[string]string{} // gang ID -> the reason its groups are refused
	for _, tg := range job.TaskGroups {
		if tg.Count <= limit {
			continue
		}
		msg := fmt.Sprintf("group %q count %d is above the server's limit of %d (job_max_group_count): nothing of it is placed until the job is changed",
			tg.Name, tg.Count, limit)
		p.refuseGroup(tg, msg)
		if id := gangID(job, tg); id != "" && why[id] == "" {
			why[id] = msg
		}
	}
	for _, tg := range job.TaskGroups {
		if id := gangID(job, tg); id != "" && why[id] != "" && !p.refused[tg.Name] {
			p.refuseGroup(tg, fmt.Sprintf("placed together with another group: %s", why[id]))
		}
	}
}

// gangID names the gang a group is placed with (the job-wide one of an
// all_at_once job without gang blocks, as placeAll), or "".
func gangID(job *api.Job, tg *api.TaskGroup) string {
	g, id := job.GangOf(tg)
	if g == nil && job.AllAtOnce {
		return api.GangJobWide
	}
	return id
}

func (p *pass) refuseGroup(tg *api.TaskGroup, msg string) {
	p.refused[tg.Name] = true
	p.out.failed[tg.Name] = &api.AllocMetric{NodesInPool: p.led.size(),
		Reasons: []api.PendingReason{{Kind: api.PendingCountLimit, Message: msg}}}
	p.out.noRetry[tg.Name] = true
	p.out.queued[tg.Name] = 0
}

// explainPending fills the Reasons and Counterfactuals of every failed
// group (the explainer).
func (p *pass) explainPending() {
	p.ex.pending(p.out.failed, p.refused)
}

// finish fills the eval copy, blocked eval and annotations.
func (p *pass) finish() *Result {
	env, out := p.env, p.out
	e := env.eval.Copy()
	e.Status = api.EvalStatusComplete
	e.StatusDescription = ""
	e.SnapshotIndex = env.st.Index()
	e.ModifyTime = env.opts.Now.UnixNano()
	e.Reservation = nil // a blocked eval's reservation ends when it is evaluated
	if len(out.failed) > 0 {
		p.explainPending()
		e.FailedTGAllocs = out.failed
		e.StatusDescription = "some allocations could not be placed"
	}
	if len(out.queued) > 0 {
		e.QueuedAllocations = out.queued
	}
	for _, n := range out.notes {
		e.StatusDescription += "; " + n
	}
	retry := false
	for g := range out.failed {
		if !out.noRetry[g] {
			retry = true
		}
	}
	res := out.res
	if retry && env.job != nil {
		b := &api.Evaluation{
			ID: env.newID(), Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
			TriggeredBy: api.EvalTriggerQueuedAllocs, JobID: e.JobID, JobModifyIndex: env.job.JobModifyIndex,
			Status: api.EvalStatusBlocked, StatusDescription: "created to place remaining allocations",
			PreviousEval: e.ID, ClassEligibility: out.class, EscapedComputedClass: out.escape,
			QueuedAllocations: maps.Clone(out.queued), CreateTime: env.opts.Now.UnixNano(), ModifyTime: env.opts.Now.UnixNano(),
		}
		if b.Namespace == "" {
			b.Namespace = api.DefaultNamespace
		}
		b.Reservation = p.pl.reservation()
		res.Blocked = b
		e.BlockedEval = b.ID
	}
	for _, f := range res.FollowUps {
		f.PreviousEval = e.ID
	}
	if len(res.FollowUps) > 0 {
		e.NextEval = res.FollowUps[0].ID
	}
	res.Eval = e
	if l := env.opts.Logger; l != nil {
		placed := 0
		for _, list := range out.plan.NodeAllocation {
			placed += len(list)
		}
		l.Debug("scheduled eval", "eval", e.ID, "job", e.JobID, "nodes", p.led.size(),
			"allocs_placed_or_updated", placed, "stopped", p.led.stoppedCount(), "failed_groups", len(out.failed),
			"followups", len(res.FollowUps))
	}
	return res
}

func itoa(i int) string { return strconv.Itoa(i) }

func durationNS(ns int64) time.Duration { return time.Duration(ns) }
