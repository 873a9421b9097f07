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
	"github.com/drover/drover/server/fairshare"
)

// ErrBadEval is returned for an evaluation the scheduler cannot work on
// (nil, or without a job ID).
var ErrBadEval = errors.New("scheduler: bad evaluation")

// ErrBadOptions is returned for Options the scheduler cannot work with
// (an unknown Algorithm).
var ErrBadOptions = errors.New("scheduler: bad options")

// sched is one scheduling pass: the state it reads, the plan it builds
// and the per-node bookkeeping placement needs. Single-threaded.
type sched struct {
	st   State
	eval *api.Evaluation
	opts Options
	job  *api.Job
	err  error
	// ctx is the pass's context (ScheduleContext); done is its Done
	// channel, nil when it cannot end (see cancelled).
	ctx  context.Context
	done <-chan struct{}
	// refused are the groups left alone because a count is above
	// Options.MaxGroupCount (refuseOverLimit).
	refused map[string]bool

	rng      *rand.Rand // ids and dynamic ports; seeded from eval ID and snapshot index
	shuffleK uint64

	plan *api.Plan
	res  *Result
	m    matcher

	nodes    []*nodeState // ready nodes in the job's datacenters and pool, shuffled
	byID     map[string]*nodeState
	allNodes map[string]*api.Node
	dcAvail  map[string]int

	stopped map[string]bool // alloc IDs stopped by this plan
	jobLive []*api.Allocation

	failed map[string]*api.AllocMetric
	queued map[string]int
	class  map[string]bool // computed class -> eligible for some group
	escape bool
	// deployBusy: some group still has rollout work (placements,
	// destructive updates waiting, allocs not yet healthy).
	deployBusy bool
	groups     map[string]*tgCtx
	// victimGangs caches other jobs' gangs preemption looked at; unitBuf
	// and singleBuf are its scratch buffers (preempt.go).
	victimGangs map[string]*victimGang
	unitBuf     []victimUnit
	singleBuf   []*api.Allocation
	resv        reserveState // reservations (reserve.go)
	quota       quotaState   // queue limits (quota.go)
	// tally is what each queue holds as this pass places and evicts
	// (reclaim.go; nil without Options.FairShare).
	tally *fairshare.Tally

	changed   changeLog   // nodes whose usage changed, for device indexes
	undo      []undoEntry // node-state changes since the outermost open checkpoint
	undoDepth int         // open checkpoints

	attempt   *gangAttempt    // an open gang attempt: placements held apart from the plan
	noRetry   map[string]bool // failed groups not to retry (timed-out gangs): no blocked eval for them
	gangNotes []string        // for the eval's status description
	// gangsFailed: some gang (or all_at_once job) was not placed.
	gangsFailed bool
	// relaxedPreempt: preemption's victim rules relaxed to every
	// lower-priority alloc, to explain a pending group (explain_pending.go).
	relaxedPreempt bool
	explainQueue   string // the queue whose limit a group explained now is at
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
	s := newPass(st, eval, opts, job)
	s.ctx, s.done = ctx, ctx.Done()
	allocs, err := st.AllocsByJob(ns, eval.JobID)
	if err != nil {
		return nil, fmt.Errorf("schedule eval %s: read allocs: %w", eval.ID, err)
	}
	if job == nil || job.Stop {
		for _, a := range allocs {
			if !a.TerminalStatus() {
				s.stop(a, "alloc not needed since job is stopped", "")
			}
		}
		return s.finish(), nil
	}
	if job.IsPeriodic() || job.IsParameterized() {
		// Templates: their launches (child jobs) are what get placed.
		return s.finish(), nil
	}
	if err := s.loadNodes(); err != nil {
		return nil, err
	}
	s.quotaLoad() // before any stop: stops give back queue usage
	switch job.Type {
	case api.JobTypeSystem, api.JobTypeSysBatch:
		s.scheduleSystem(allocs)
	default:
		s.scheduleGeneric(allocs)
	}
	if s.err != nil {
		return nil, fmt.Errorf("schedule eval %s: %w", eval.ID, s.err)
	}
	return s.finish(), nil
}

// newPass sets up one scheduling pass of eval for job (nil when gone).
func newPass(st State, eval *api.Evaluation, opts Options, job *api.Job) *sched {
	s := &sched{
		st: st, eval: eval, opts: opts, job: job,
		stopped: map[string]bool{},
		failed:  map[string]*api.AllocMetric{},
		queued:  map[string]int{},
		class:   map[string]bool{},
		groups:  map[string]*tgCtx{},
		noRetry: map[string]bool{},
		refused: map[string]bool{},
	}
	h := fnv.New64a()
	h.Write([]byte(eval.ID))
	s.shuffleK = h.Sum64()
	var idx [8]byte
	binary.LittleEndian.PutUint64(idx[:], st.Index())
	h.Write(idx[:])
	s.rng = rand.New(rand.NewPCG(s.shuffleK, h.Sum64()))
	s.plan = &api.Plan{EvalID: eval.ID, Priority: eval.Priority, SnapshotIndex: st.Index()}
	if job != nil {
		s.plan.Job = job
		s.plan.Priority = job.Priority
	}
	s.res = &Result{Plan: s.plan}
	return s
}

// loadNodes reads every node, keeps the ready ones in the job's
// datacenters and pool, and shuffles them with a seed from the eval ID.
func (s *sched) loadNodes() error {
	nodes, err := s.st.Nodes()
	if err != nil {
		return fmt.Errorf("schedule eval %s: read nodes: %w", s.eval.ID, err)
	}
	s.allNodes = make(map[string]*api.Node, len(nodes))
	s.dcAvail = map[string]int{}
	s.byID = map[string]*nodeState{}
	store := make([]nodeState, 0, len(nodes))
	for _, n := range nodes {
		s.allNodes[n.ID] = n
		if !n.Ready() || !dcMatch(s.job.Datacenters, n.Datacenter) || !poolMatch(s.job.NodePool, n.NodePool) {
			continue
		}
		s.dcAvail[n.Datacenter]++
		store = append(store, nodeState{node: n})
	}
	s.nodes = make([]*nodeState, len(store))
	for i := range store {
		s.nodes[i] = &store[i]
	}
	// Sort by ID first so the shuffle depends only on the seed, not on
	// the order the state returned nodes in.
	sort.Slice(s.nodes, func(i, j int) bool { return s.nodes[i].node.ID < s.nodes[j].node.ID })
	r := rand.New(rand.NewPCG(s.shuffleK, 0x9e3779b97f4a7c15))
	for i := len(s.nodes) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		s.nodes[i], s.nodes[j] = s.nodes[j], s.nodes[i]
	}
	for i, ns := range s.nodes {
		ns.pos = i
		s.byID[ns.node.ID] = ns
	}
	return nil
}

// stop records a stop of a live alloc and frees its resources.
func (s *sched) stop(a *api.Allocation, desc, clientStatus string) *api.Allocation {
	s.markStopped(a)
	s.plan.AppendStoppedAlloc(a, desc, clientStatus)
	list := s.plan.NodeUpdate[a.NodeID]
	c := list[len(list)-1]
	c.ModifyTime = s.opts.Now.UnixNano()
	if ns := s.byID[a.NodeID]; ns != nil && ns.loaded {
		s.removeFrom(ns, a)
	}
	return c
}

// cancelled reports whether the pass's context ended, recording its
// error as the pass's. Placement loops check it before each placement (a
// non-blocking receive: cheap enough for every one).
func (s *sched) cancelled() bool {
	select {
	case <-s.done:
		if s.err == nil {
			s.err = fmt.Errorf("placement stopped: %w", s.ctx.Err())
		}
		return true
	default:
		return false
	}
}

// newID returns a random UUID v4 from the pass's seeded generator.
func (s *sched) newID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], s.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], s.rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(out)
}

// finish fills the eval copy, blocked eval and annotations.
func (s *sched) finish() *Result {
	e := s.eval.Copy()
	e.Status = api.EvalStatusComplete
	e.StatusDescription = ""
	e.SnapshotIndex = s.st.Index()
	e.ModifyTime = s.opts.Now.UnixNano()
	e.Reservation = nil // a blocked eval's reservation ends when it is evaluated
	if len(s.failed) > 0 {
		s.explainPending()
		e.FailedTGAllocs = s.failed
		e.StatusDescription = "some allocations could not be placed"
	}
	if len(s.queued) > 0 {
		e.QueuedAllocations = s.queued
	}
	for _, n := range s.gangNotes {
		e.StatusDescription += "; " + n
	}
	retry := false
	for g := range s.failed {
		if !s.noRetry[g] {
			retry = true
		}
	}
	if retry && s.job != nil {
		b := &api.Evaluation{
			ID: s.newID(), Namespace: e.Namespace, Priority: e.Priority, Type: e.Type,
			TriggeredBy: api.EvalTriggerQueuedAllocs, JobID: e.JobID, JobModifyIndex: s.job.JobModifyIndex,
			Status: api.EvalStatusBlocked, StatusDescription: "created to place remaining allocations",
			PreviousEval: e.ID, ClassEligibility: s.class, EscapedComputedClass: s.escape,
			QueuedAllocations: maps.Clone(s.queued), CreateTime: s.opts.Now.UnixNano(), ModifyTime: s.opts.Now.UnixNano(),
		}
		if b.Namespace == "" {
			b.Namespace = api.DefaultNamespace
		}
		b.Reservation = s.reservation()
		s.res.Blocked = b
		e.BlockedEval = b.ID
	}
	for _, f := range s.res.FollowUps {
		f.PreviousEval = e.ID
	}
	if len(s.res.FollowUps) > 0 {
		e.NextEval = s.res.FollowUps[0].ID
	}
	s.res.Eval = e
	if l := s.opts.Logger; l != nil {
		placed := 0
		for _, list := range s.plan.NodeAllocation {
			placed += len(list)
		}
		l.Debug("scheduled eval", "eval", e.ID, "job", e.JobID, "nodes", len(s.nodes),
			"allocs_placed_or_updated", placed, "stopped", len(s.stopped), "failed_groups", len(s.failed),
			"followups", len(s.res.FollowUps))
	}
	return s.res
}

func (s *sched) annotate(group string) *api.DesiredUpdates {
	if s.plan.Annotations == nil {
		s.plan.Annotations = &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{}}
	}
	d := s.plan.Annotations.DesiredTGUpdates[group]
	if d == nil {
		d = &api.DesiredUpdates{}
		s.plan.Annotations.DesiredTGUpdates[group] = d
	}
	return d
}

func itoa(i int) string { return strconv.Itoa(i) }

func durationNS(ns int64) time.Duration { return time.Duration(ns) }
