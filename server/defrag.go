package server

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
	"github.com/drover/drover/server/defrag"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// maxDefragReplans is how many times a round plans again without the
// moves the scheduler refused.
const maxDefragReplans = 3

// maxDefragPending bounds the pending groups one defragmentation round
// plans for (highest priority first), so a round stays cheap on a
// cluster with a long backlog.
const maxDefragPending = 64

// Defrag computes a defragmentation plan (server/defrag) from the
// blocked evals' pending groups and, unless dryRun, applies it: one eval
// of trigger api.EvalTriggerDefrag per job whose allocs move. Applying
// is the leader's; a dry run reads this server's state.
func (o *Operator) Defrag(ctx context.Context, dryRun bool) (*api.DefragPlan, error) {
	return defragRound(ctx, &o.serverCore, dryRun, defrag.Budget{PerQueue: o.defragQueueBudget})
}

// defragRound is one round, for the operator endpoint and the leader
// duty.
func defragRound(ctx context.Context, c *serverCore, dryRun bool, budget defrag.Budget) (*api.DefragPlan, error) {
	if !dryRun && !c.isLeader() {
		return nil, errNotLeader()
	}
	snap, err := c.state().Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	in, err := defragInput(snap, budget)
	if err != nil {
		return nil, err
	}
	in.Now = c.clock.Now()
	// The scheduler has the last word (defrag_check.go): a move it
	// refuses pins its alloc, a pending group it would still not place
	// leaves the round, and the round plans again, a few times at most.
	in.Pinned = map[string]bool{}
	var plan *defrag.Plan
	for try := 0; ; try++ {
		plan = defrag.Compute(in)
		refused, blocked, err := checkDefrag(ctx, c, snap, plan, in.Pending, in.Now)
		if err != nil {
			return nil, err
		}
		if len(refused) == 0 && len(blocked) == 0 {
			break
		}
		if try == maxDefragReplans {
			plan = &defrag.Plan{}
			break
		}
		for _, id := range refused {
			in.Pinned[id] = true
		}
		in.Pending = slices.DeleteFunc(in.Pending, func(p *defrag.Pending) bool { return slices.Contains(blocked, p.Name()) })
	}
	out := defragAPIPlan(in.Nodes, plan)
	out.DryRun = dryRun
	if dryRun || len(plan.Moves) == 0 {
		return out, nil
	}
	byJob := map[string]*api.Evaluation{}
	var evals []*api.Evaluation
	for _, m := range plan.Moves {
		k := m.Alloc.Namespace + "/" + m.Alloc.JobID
		e := byJob[k]
		if e == nil {
			job := m.Alloc.Job
			if job == nil {
				if job, err = snap.JobByID(nil, m.Alloc.Namespace, m.Alloc.JobID); err != nil || job == nil {
					return nil, fmt.Errorf("job of alloc %s: %v", m.Alloc.ID, err)
				}
			}
			e = c.newJobEval(job, api.EvalTriggerDefrag)
			e.JobModifyIndex = job.JobModifyIndex
			e.DefragMoves = map[string]string{}
			byJob[k] = e
			evals = append(evals, e)
			out.EvalIDs = append(out.EvalIDs, e.ID)
		}
		e.DefragMoves[m.Alloc.ID] = m.To
	}
	if _, err := c.applyEvals(ctx, evals); err != nil {
		return nil, fmt.Errorf("create defragmentation evals: %w", err)
	}
	c.log.Info("defragmentation round", "moves", len(plan.Moves), "unblocks", plan.Unblocks, "evals", len(evals))
	return out, nil
}

// defragInput reads the nodes, live allocs and pending groups (the
// blocked evals' queued groups) from snap.
func defragInput(snap *state.Snapshot, budget defrag.Budget) (*defrag.Input, error) {
	nodes, err := snap.Nodes(nil, "")
	if err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	in := &defrag.Input{Nodes: nodes, Jobs: map[string]*api.Job{}, Budget: budget}
	for _, n := range nodes {
		allocs, err := snap.AllocsByNode(nil, n.ID)
		if err != nil {
			return nil, fmt.Errorf("allocs of node %s: %w", n.ID, err)
		}
		for _, a := range allocs {
			if !a.TerminalStatus() {
				in.Allocs = append(in.Allocs, a)
			}
		}
	}
	for _, a := range in.Allocs {
		if a.Job != nil {
			continue
		}
		k := a.Namespace + "/" + a.JobID
		if _, ok := in.Jobs[k]; ok {
			continue
		}
		j, err := snap.JobByID(nil, a.Namespace, a.JobID)
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", k, err)
		}
		in.Jobs[k] = j
	}
	evals, err := snap.Evals(nil, state.AllNamespaces, "")
	if err != nil {
		return nil, fmt.Errorf("evals: %w", err)
	}
	for _, e := range evals {
		if e.Status != api.EvalStatusBlocked {
			continue
		}
		job, err := snap.JobByID(nil, e.Namespace, e.JobID)
		if err != nil {
			return nil, fmt.Errorf("job of eval %s: %w", e.ID, err)
		}
		if job == nil || job.Stop {
			continue
		}
		// A blocked eval carries the failed groups' queued counts.
		groups := make([]string, 0, len(e.QueuedAllocations))
		for g, n := range e.QueuedAllocations {
			if n > 0 {
				groups = append(groups, g)
			}
		}
		slices.Sort(groups)
		for _, g := range groups {
			tg := job.LookupTaskGroup(g)
			if tg == nil {
				continue
			}
			n := e.QueuedAllocations[g]
			gang, _ := job.GangOf(tg)
			in.Pending = append(in.Pending, pendingAsk(job, tg, n, gang != nil))
		}
	}
	slices.SortStableFunc(in.Pending, func(a, b *defrag.Pending) int { return b.Job.Priority - a.Job.Priority })
	if len(in.Pending) > maxDefragPending {
		in.Pending = in.Pending[:maxDefragPending]
	}
	return in, nil
}

// pendingAsk is one alloc's ask of group tg: its tasks' cpu, memory,
// cores and whole devices, and the group's disk.
func pendingAsk(job *api.Job, tg *api.TaskGroup, count int, gang bool) *defrag.Pending {
	p := &defrag.Pending{Job: job, Group: tg.Name, Count: count, Gang: gang}
	var v capacity.Vector
	if tg.EphemeralDisk != nil {
		v.DiskMB = int64(tg.EphemeralDisk.SizeMB)
	}
	for _, t := range tg.Tasks {
		r := t.Resources
		if r == nil {
			r = api.DefaultResources()
		}
		v.CPU += int64(r.CPU)
		v.MemoryMB += int64(r.MemoryMB)
		v.NumCores += r.Cores
		for _, d := range r.Devices {
			if d.Share != nil {
				continue // shares are not what defragmentation frees
			}
			p.Devices = append(p.Devices, defrag.DeviceAsk{Name: d.Name, Count: int(d.Count)})
		}
	}
	p.Ask = v
	return p
}

func defragAPIPlan(nodes []*api.Node, p *defrag.Plan) *api.DefragPlan {
	names := map[string]string{}
	for _, n := range nodes {
		names[n.ID] = n.Name
	}
	out := &api.DefragPlan{Unblocks: p.Unblocks, FreedNodes: p.Freed}
	for _, m := range p.Moves {
		out.Moves = append(out.Moves, &api.DefragMove{AllocID: m.Alloc.ID, AllocName: m.Alloc.Name, Namespace: m.Alloc.Namespace,
			JobID: m.Alloc.JobID, From: m.From, FromName: names[m.From], To: m.To, ToName: names[m.To], Why: m.Why})
	}
	return out
}

// scheduleDefrag is the scheduling pass of a defrag eval: the scheduler
// runs on a view where the eval's moved allocs are migrating and only
// their destinations take work, with preemption off; of its plan only
// the moves are kept, each alloc's stop (described "defragmentation")
// with its replacement on the destination, a gang's members all or none.
// The plan is AllAtOnce, so the applier commits the moves with their
// placements or nothing: a move never stops an alloc it cannot place.
// Nothing else of the job changes and no blocked eval is made.
func scheduleDefrag(ctx context.Context, st scheduler.State, e *api.Evaluation, opts scheduler.Options) (*scheduler.Result, error) {
	out := e.Copy()
	out.Status = api.EvalStatusComplete
	res := &scheduler.Result{Eval: out, Plan: &api.Plan{}}
	if len(e.DefragMoves) == 0 {
		return res, nil
	}
	view := &defragView{State: st, moves: e.DefragMoves, dest: map[string]bool{}}
	for _, to := range e.DefragMoves {
		view.dest[to] = true
	}
	opts.Preemption = &api.PreemptionConfig{}
	opts.Usage = nil
	full, err := scheduler.ScheduleContext(ctx, view, e, opts)
	if err != nil {
		return nil, err
	}
	gangs := map[string]string{}
	for id := range e.DefragMoves {
		a, err := st.AllocByID(id)
		if err != nil {
			return nil, fmt.Errorf("alloc %s: %w", id, err)
		}
		if a != nil && a.Gang != nil {
			gangs[id] = a.Gang.ID
		}
	}
	plan, moved := defragKeep(full.Plan, e.DefragMoves, gangs)
	res.Plan = plan
	out.StatusDescription = fmt.Sprintf("defragmentation: %d of %d allocs moved", moved, len(e.DefragMoves))
	return res, nil
}

// defragKeep is the part of full that makes the moves: stops of moved
// allocs with their replacements on the planned node (a gang's members
// all or none; gangs maps a moved member to its gang ID), and the count
// of moves kept.
func defragKeep(full *api.Plan, moves, gangs map[string]string) (*api.Plan, int) {
	plan := &api.Plan{AllAtOnce: true}
	if full == nil {
		return plan, 0
	}
	plan.Job = full.Job
	stops := map[string]*api.Allocation{}
	for _, list := range full.NodeUpdate {
		for _, a := range list {
			if _, ok := moves[a.ID]; ok && !a.ClientTerminalStatus() {
				stops[a.ID] = a
			}
		}
	}
	placed := map[string]*api.Allocation{}
	for node, list := range full.NodeAllocation {
		for _, a := range list {
			if to, ok := moves[a.PreviousAllocation]; ok && to == node {
				placed[a.PreviousAllocation] = a
			}
		}
	}
	ok := func(id string) bool { return stops[id] != nil && placed[id] != nil }
	// A gang moves whole: every member this eval moves must have made it.
	gangOK := map[string]bool{}
	for id := range moves {
		k, in := gangs[id]
		if !in {
			continue
		}
		if _, seen := gangOK[k]; !seen {
			gangOK[k] = true
		}
		gangOK[k] = gangOK[k] && ok(id)
	}
	ids := make([]string, 0, len(moves))
	for id := range moves {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	kept := map[string]bool{}
	for _, id := range ids {
		if !ok(id) {
			continue
		}
		s, a := stops[id], placed[id]
		if k, in := gangs[id]; in && !gangOK[k] {
			continue
		}
		s.DesiredDescription = api.DefragDescription
		plan.NodeUpdate = appendNode(plan.NodeUpdate, s.NodeID, s)
		plan.NodeAllocation = appendNode(plan.NodeAllocation, a.NodeID, a)
		kept[a.ID] = true
		if full.Deployment != nil && a.DeploymentID == full.Deployment.ID {
			plan.Deployment = full.Deployment
		}
	}
	for _, g := range full.Gangs {
		all := len(g.AllocIDs) > 0
		for _, id := range g.AllocIDs {
			all = all && kept[id]
		}
		if all {
			plan.Gangs = append(plan.Gangs, g)
		}
	}
	return plan, len(kept)
}

func appendNode(m map[string][]*api.Allocation, node string, a *api.Allocation) map[string][]*api.Allocation {
	if m == nil {
		m = map[string][]*api.Allocation{}
	}
	m[node] = append(m[node], a)
	return m
}

// defragView is the scheduler's state for a defrag eval: the moved
// allocs are migrating, and every node but the moves' destinations is
// ineligible, so each replacement lands where the plan said or fails.
type defragView struct {
	scheduler.State
	moves map[string]string
	dest  map[string]bool
}

func (v *defragView) node(n *api.Node) *api.Node {
	if n == nil || v.dest[n.ID] {
		return n
	}
	c := n.Copy()
	c.SchedulingEligibility = api.NodeSchedulingIneligible
	return c
}

func (v *defragView) alloc(a *api.Allocation) *api.Allocation {
	if a == nil {
		return nil
	}
	if _, ok := v.moves[a.ID]; !ok || a.TerminalStatus() {
		return a
	}
	c := a.Copy()
	t := true
	c.DesiredTransition.Migrate = &t
	return c
}

func (v *defragView) allocs(list []*api.Allocation, err error) ([]*api.Allocation, error) {
	if err != nil {
		return nil, err
	}
	out := make([]*api.Allocation, len(list))
	for i, a := range list {
		out[i] = v.alloc(a)
	}
	return out, nil
}

func (v *defragView) Nodes() ([]*api.Node, error) {
	list, err := v.State.Nodes()
	if err != nil {
		return nil, err
	}
	out := make([]*api.Node, len(list))
	for i, n := range list {
		out[i] = v.node(n)
	}
	return out, nil
}

func (v *defragView) NodeByID(id string) (*api.Node, error) {
	n, err := v.State.NodeByID(id)
	return v.node(n), err
}

func (v *defragView) AllocByID(id string) (*api.Allocation, error) {
	a, err := v.State.AllocByID(id)
	return v.alloc(a), err
}

func (v *defragView) AllocsByJob(ns, jobID string) ([]*api.Allocation, error) {
	return v.allocs(v.State.AllocsByJob(ns, jobID))
}

func (v *defragView) AllocsByNode(nodeID string) ([]*api.Allocation, error) {
	return v.allocs(v.State.AllocsByNode(nodeID))
}

// DefragConfig is the defragmentation leader duty's settings.
type DefragConfig struct {
	Enabled bool
	// Interval between rounds; 0 means DefaultDefragInterval.
	Interval time.Duration
	// PerQueue bounds the allocs of one queue a round moves (0: none).
	PerQueue int
}

// DefaultDefragInterval is the time between the duty's rounds.
const DefaultDefragInterval = 10 * time.Minute

// defragDuty runs a defragmentation round every interval on the leader.
type defragDuty struct {
	serverCore
	cfg DefragConfig
}

func (d *defragDuty) Run(ctx context.Context) {
	every := d.cfg.Interval
	if every <= 0 {
		every = DefaultDefragInterval
	}
	for {
		tick := make(chan struct{})
		t := d.clock.AfterFunc(every, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		if _, err := defragRound(ctx, &d.serverCore, false, defrag.Budget{PerQueue: d.cfg.PerQueue}); err != nil && ctx.Err() == nil {
			d.log.Warn("defragmentation round", "err", err)
		}
	}
}
