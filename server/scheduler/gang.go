package scheduler

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/drover/drover/api"
)

// Gang placement: a gang's new allocs are placed as one unit. The members
// are placed one by one with the normal machinery inside a checkpoint;
// while the attempt is open each placement is held apart from the plan
// (alloc, victims, replaced alloc), and only when enough members fit are
// they written to the plan. Otherwise the checkpoint is rolled back
// (node usage, victims' stops, group cursors) and nothing is held.
//
// How many must fit: every member of a fresh gang (Min == 0) or Min; with
// members running, what is missing to reach Min (a gang running at or
// above Min gets its replacements placed one by one). A rigid gang whose
// size a job update changed, or one below Min past its stale grace, is
// stopped and placed again whole (restartGang). Job-level
// all_at_once without a gang block is the same machinery with every
// placement of the pass needed and no gang info.

// gangRun is one gang of the job in this pass.
type gangRun struct {
	id     string
	gang   *api.Gang
	plain  bool // all_at_once without a gang: all-or-nothing, no gang info
	groups []*api.TaskGroup
	places []*placement
	live   []*api.Allocation // running members (not stopped by this plan)
	done   int               // finished batch members (they keep their slot)
	total  int               // members wanted: the groups' counts
	since  int64             // newest failed or lost member's ModifyTime, 0 when none
	// staleStops are the members stopped because the gang went stale;
	// they stay stopped even when the gang cannot be placed again.
	staleStops map[string]bool
}

// min is the fewest members the gang runs with.
func (g *gangRun) min() int {
	if g.gang.Min > 0 && g.gang.Min < g.total {
		return g.gang.Min
	}
	return g.total
}

// gangPlacer is the placer's part that places gangs (and all_at_once
// jobs) as units: an attempt places the members one by one with the
// placer inside a ledger checkpoint, holding them apart from the plan,
// and keeps them all or rolls them back (topology.go: which nodes an
// attempt may use). It writes the gang's info on its members, its
// failure metrics and follow-up evals.
type gangPlacer struct {
	env   *passEnv
	out   *output
	pl    *placer
	rk    *ranker
	led   *ledger
	nodes *nodeIndex
}

// members fills the gang's running and finished members and the time
// the newest member failed or was lost.
func (g *gangPlacer) members(run *gangRun, byGroup map[string][]*api.Allocation) {
	stopped := g.led.isStopped
	for _, tg := range run.groups {
		count := max(tg.Count, 0)
		run.total += count
		liveIdx := map[int]bool{}
		for _, a := range byGroup[tg.Name] {
			switch {
			case !a.TerminalStatus() && !stopped(a.ID):
				run.live = append(run.live, a)
				liveIdx[a.Index()] = true
			case a.ClientStatus == api.AllocClientStatusFailed || a.ClientStatus == api.AllocClientStatusLost:
				run.since = max(run.since, a.ModifyTime)
			}
		}
		for _, a := range byGroup[tg.Name] {
			if stopped(a.ID) && a.ClientStatus != api.AllocClientStatusComplete && g.nodes.lost(a) {
				run.since = max(run.since, g.env.opts.Now.UnixNano()) // lost in this pass
			}
		}
		if g.env.job.Type == api.JobTypeBatch {
			// Only work that finished by itself keeps its slot, as in the
			// reconciler (terminalSlots): a member the server stopped
			// (preempted, drained, stale, updated) that the client then
			// reports complete did not finish and is placed again, so it
			// must not count toward the gang's min.
			seen := map[int]bool{}
			for _, a := range byGroup[tg.Name] {
				i := a.Index()
				if a.ClientStatus == api.AllocClientStatusComplete && a.DesiredStatus == api.AllocDesiredStatusRun &&
					a.NextAllocation == "" && i < count && !liveIdx[i] && !seen[i] {
					seen[i] = true
					run.done++
				}
			}
		}
	}
}

// place places one gang all-or-nothing (see the top of the file),
// stopping it first when it stayed below Min past its grace period, and
// reports a gang that could not be placed: it returns false then.
func (g *gangPlacer) place(run *gangRun, byGroup map[string][]*api.Allocation) bool {
	now := g.env.opts.Now
	g.members(run, byGroup)
	have := len(run.live) + run.done
	need := len(run.places) // all_at_once: the whole pass or nothing
	var staleAt time.Time   // when a gang below min goes stale
	if !run.plain {
		need = max(0, run.min()-have)
		if from := g.resized(run); from > 0 {
			// Its running members were started for another size (their
			// world size, ranks and member list): the gang restarts
			// whole at the new size, or holds nothing.
			g.restartGang(run, fmt.Sprintf("gang %s resized from %d to %d members", run.id, from, run.total))
			have = run.done
			need = run.min() - have
		} else if have < run.min() && len(run.live) > 0 && run.since > 0 {
			grace := run.gang.StaleGrace
			if grace <= 0 {
				grace = api.DefaultGangStaleGrace
			}
			below := now.Sub(time.Unix(0, run.since))
			if below >= grace {
				g.restartGang(run, fmt.Sprintf("gang %s below min for %s (%d of %d members running)", run.id, below.Round(time.Second), len(run.live), run.min()))
				have = run.done
				need = run.min() - have
			} else {
				staleAt = time.Unix(0, run.since).Add(grace)
			}
		}
	}
	if len(run.places) < need && !staleAt.IsZero() {
		// Members wait (reschedule delays, no room): check again when
		// the grace period ends.
		g.followUp(staleAt, "created to check gang "+run.id+" below min")
	}
	if len(run.places) == 0 {
		return true
	}
	held, ok, why := g.attempt(run, need)
	if g.env.err != nil {
		return true
	}
	if ok {
		if !run.plain {
			g.info(run, held, need > 0)
		}
		for _, h := range held {
			g.pl.keep(h)
		}
		return true
	}
	g.failed(run, have, need, len(held), why)
	if !staleAt.IsZero() {
		g.followUp(staleAt, "created to check gang "+run.id+" below min")
	}
	return false
}

// resized returns the size a rigid gang's running members were placed
// for when the job changed it since (0 when none was, or the gang is
// elastic: its members come and go one by one). A member's size is its
// own job version's (the group counts of the gang there).
func (g *gangPlacer) resized(run *gangRun) int {
	if run.min() < run.total {
		return 0
	}
	for _, a := range run.live {
		if a.Job == nil || a.Job == g.env.job {
			continue
		}
		n := 0
		for _, tg := range a.Job.TaskGroups {
			if _, id := a.Job.GangOf(tg); id == run.id {
				n += max(tg.Count, 0)
			}
		}
		if n > 0 && n != run.total {
			return n
		}
	}
	return 0
}

// restartGang stops a gang's running members (desc says why: stale,
// resized) so the whole gang is placed again in this pass; an in-place
// update the plan made for one is dropped with it.
func (g *gangPlacer) restartGang(run *gangRun, desc string) {
	job, out := g.env.job, g.out
	taken := map[string]map[int]bool{}
	for _, p := range run.places {
		if taken[p.tg.Name] == nil {
			taken[p.tg.Name] = map[int]bool{}
		}
		taken[p.tg.Name][p.index] = true
	}
	for _, a := range run.live {
		if out.dropUpdate(a) {
			out.annotate(a.TaskGroup).InPlaceUpdate--
		}
		g.pl.stop(a, desc, "")
		run.staleStops[a.ID] = true
		out.annotate(a.TaskGroup).Stop++
		out.annotate(a.TaskGroup).Place++
		tg := job.LookupTaskGroup(a.TaskGroup)
		if taken[a.TaskGroup] == nil {
			taken[a.TaskGroup] = map[int]bool{}
		}
		taken[a.TaskGroup][a.Index()] = true
		run.places = append(run.places, &placement{tg: tg, index: a.Index(), prev: a, stopped: true})
	}
	run.live = nil
	// Slots still empty (members failed past their reschedule attempts,
	// or waiting for a delay) are placed too: the gang restarts whole.
	for _, tg := range run.groups {
		for i := 0; i < tg.Count; i++ {
			if !taken[tg.Name][i] && len(run.places)+run.done < run.total {
				run.places = append(run.places, &placement{tg: tg, index: i})
				out.annotate(tg.Name).Place++
			}
		}
	}
	sort.SliceStable(run.places, func(i, j int) bool {
		gi, gj := groupPos(job, run.places[i].tg.Name), groupPos(job, run.places[j].tg.Name)
		if gi != gj {
			return gi < gj
		}
		return run.places[i].index < run.places[j].index
	})
}

func groupPos(j *api.Job, name string) int {
	for i, tg := range j.TaskGroups {
		if tg.Name == name {
			return i
		}
	}
	return len(j.TaskGroups)
}

// gangMetrics is the failure metrics and queued counts of a gang's
// groups before an attempt.
type gangMetrics struct {
	failed map[string]*api.AllocMetric
	queued map[string]int
	hasQ   map[string]bool
}

func (g *gangPlacer) saveMetrics(run *gangRun) gangMetrics {
	m := gangMetrics{failed: map[string]*api.AllocMetric{}, queued: map[string]int{}, hasQ: map[string]bool{}}
	for _, tg := range run.groups {
		m.failed[tg.Name] = g.out.failed[tg.Name]
		m.queued[tg.Name], m.hasQ[tg.Name] = g.out.queued[tg.Name]
	}
	return m
}

// restoreMetrics puts back the metrics of saved and returns the failure
// metrics the attempt had written.
func (g *gangPlacer) restoreMetrics(run *gangRun, saved gangMetrics) map[string]*api.AllocMetric {
	failed, queued := g.out.failed, g.out.queued
	got := map[string]*api.AllocMetric{}
	for _, tg := range run.groups {
		n := tg.Name
		if m := failed[n]; m != saved.failed[n] {
			got[n] = m
		}
		if saved.failed[n] == nil {
			delete(failed, n)
		} else {
			failed[n] = saved.failed[n]
		}
		if saved.hasQ[n] {
			queued[n] = saved.queued[n]
		} else {
			delete(queued, n)
		}
	}
	return got
}

// tryGang places the gang's members on the nodes allowed admits (nil:
// any node) and keeps the attempt when at least need fit; otherwise it
// rolls back and returns the failure metrics of the attempt.
func (g *gangPlacer) tryGang(run *gangRun, need int, allowed func(*nodeState) bool) ([]heldAlloc, bool, map[string]*api.AllocMetric) {
	saved := g.saveMetrics(run)
	cp := g.led.checkpoint()
	if allowed != nil {
		for _, tg := range run.groups {
			tc := g.rk.group(tg)
			for i, ns := range g.led.candidates() {
				if !tc.skip[i] && !allowed(ns) {
					g.led.skipNode(tc, i)
				}
			}
		}
	}
	held := g.placeHeld(run)
	if g.env.err == nil && len(held) >= need {
		g.led.release(cp)
		return held, true, nil
	}
	g.led.rollback(cp)
	g.dropCanaries(held)
	return held, false, g.restoreMetrics(run, saved)
}

// dropCanaries takes held canaries back out of the deployment (buildAlloc
// records them there when it builds them).
func (g *gangPlacer) dropCanaries(held []heldAlloc) {
	dep := g.out.plan.Deployment
	for _, h := range held {
		if !h.p.canary || dep == nil {
			continue
		}
		if st := dep.TaskGroups[h.p.tg.Name]; st != nil {
			st.PlacedCanaries = slices.DeleteFunc(st.PlacedCanaries, func(id string) bool { return id == h.a.ID })
		}
	}
}

// failed reports a gang that could not be placed: every member is
// queued, each group failed with the gang's reason; the stops made for
// its replacements are taken back (stale members stay stopped). A gang
// past its timeout gets no blocked eval; one still waiting gets a
// follow-up eval at its deadline.
func (g *gangPlacer) failed(run *gangRun, have, need, fit int, why string) {
	job, out, now := g.env.job, g.out, g.env.opts.Now
	n := map[string]int{}
	for _, p := range run.places {
		n[p.tg.Name]++
		if p.prev != nil && p.stopped && !run.staleStops[p.prev.ID] && p.prev.ClientStatus != api.AllocClientStatusLost && !g.nodes.lost(p.prev) {
			g.pl.unstop(p.prev)
		}
	}
	reason := fmt.Sprintf("gang %s needs %d members, %d fit", run.id, need, fit)
	if run.plain {
		reason = fmt.Sprintf("all_at_once: %d of %d allocs fit", fit, need)
	} else if have > 0 {
		reason = fmt.Sprintf("gang %s needs %d more members (min %d, %d running), %d fit", run.id, need, run.min(), have, fit)
	}
	if why != "" {
		reason += "; " + why
	}
	timedOut := false
	if t := run.gang.Timeout; t > 0 && have == 0 && !run.plain && job.SubmitTime > 0 {
		deadline := time.Unix(0, job.SubmitTime).Add(t)
		if !now.Before(deadline) {
			timedOut = true
			reason = fmt.Sprintf("gang %s timed out after %s waiting for room; %s", run.id, t, reason)
		} else {
			g.followUp(deadline, "created for the timeout of gang "+run.id)
		}
	}
	for _, tg := range run.groups {
		if n[tg.Name] == 0 {
			continue
		}
		m := out.failed[tg.Name]
		if m == nil {
			m = &api.AllocMetric{NodesInPool: g.led.size(), NodesAvailable: g.led.available()}
		}
		m.CoalescedFailures = n[tg.Name] - 1
		m.GangFailure = reason
		out.failed[tg.Name] = m
		out.queued[tg.Name] += n[tg.Name]
		if timedOut {
			out.noRetry[tg.Name] = true
		}
	}
	if timedOut {
		out.notes = append(out.notes, fmt.Sprintf("gang %s timed out after %s", run.id, run.gang.Timeout))
	}
}

// followUp adds a delayed eval at at (one per instant per pass).
func (g *gangPlacer) followUp(at time.Time, desc string) {
	if !at.After(g.env.opts.Now) {
		return
	}
	if g.env.eval.WaitUntil.Equal(at) {
		return // this eval is that follow-up
	}
	res := g.out.res
	if findFollowUp(at, res.FollowUps) != nil {
		return
	}
	f := newFollowUp(g.env, at)
	f.StatusDescription = desc
	res.FollowUps = append(res.FollowUps, f)
}

// info numbers the members (running ones keep their rank, a
// replacement takes the rank of the alloc it replaces when free, others
// the lowest free ranks in placement order) and gives every new member
// the gang's size, leader address and member list. When the gang was
// placed as a unit (unit) the plan records it for the applier.
func (g *gangPlacer) info(run *gangRun, held []heldAlloc, unit bool) {
	if len(held) == 0 {
		return
	}
	// Ranks are 0..size-1: a rank at or above the size (the gang
	// shrank) is not kept.
	size := len(run.live) + len(held)
	used := map[int]bool{}
	var members []api.GangMember
	leaderPort := map[string]int{}
	liveRank := map[string]int{}   // running members' ranks
	var unranked []*api.Allocation // running members without a rank of their own
	for _, a := range run.live {
		if a.Gang == nil || a.Gang.ID != run.id || a.Gang.Rank < 0 || a.Gang.Rank >= size || used[a.Gang.Rank] {
			unranked = append(unranked, a)
			continue
		}
		used[a.Gang.Rank] = true
		liveRank[a.ID] = a.Gang.Rank
		members = append(members, g.member(a, a.Gang.Rank))
		leaderPort[a.ID] = gangPort(a)
	}
	free := 0
	next := func(want int) int {
		if want >= 0 && want < size && !used[want] {
			used[want] = true
			return want
		}
		for used[free] {
			free++
		}
		used[free] = true
		return free
	}
	rank := make([]int, len(held))
	for i, h := range held {
		want := -1
		if prev := h.p.prev; prev != nil && prev.Gang != nil {
			want = prev.Gang.Rank
		}
		rank[i] = next(want)
		members = append(members, g.member(h.a, rank[i]))
		leaderPort[h.a.ID] = gangPort(h.a)
	}
	for _, a := range unranked {
		liveRank[a.ID] = next(-1)
		members = append(members, g.member(a, liveRank[a.ID]))
		leaderPort[a.ID] = gangPort(a)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Rank < members[j].Rank })
	lead := members[0]
	addr := lead.Address
	if p := leaderPort[lead.AllocID]; p > 0 {
		addr = net.JoinHostPort(addr, strconv.Itoa(p))
	}
	ids := make([]string, len(held))
	for i, h := range held {
		h.a.Gang = &api.AllocGang{ID: run.id, Size: len(members), Rank: rank[i], LeaderAddr: addr, Members: members}
		ids[i] = h.a.ID
	}
	// Running members learn the new membership (an in-place update; the
	// applier drops it with the gang).
	for _, a := range run.live {
		if r, ok := liveRank[a.ID]; ok {
			g.refreshMember(a, &api.AllocGang{ID: run.id, Size: len(members), Rank: r, LeaderAddr: addr, Members: members})
			ids = append(ids, a.ID)
		}
	}
	if unit {
		plan := g.out.plan
		plan.Gangs = append(plan.Gangs, &api.PlanGang{JobID: g.env.job.ID, ID: run.id, AllocIDs: ids})
	}
}

// refreshMember gives a running member its gang's new info: on its
// in-place update when the plan has one, else on a new copy.
func (g *gangPlacer) refreshMember(a *api.Allocation, info *api.AllocGang) {
	plan := g.out.plan
	for _, c := range plan.NodeAllocation[a.NodeID] {
		if c.ID == a.ID {
			c.Gang = info
			return
		}
	}
	c := a.Copy()
	c.Gang = info
	c.EvalID = g.env.eval.ID
	c.ModifyTime = g.env.opts.Now.UnixNano()
	plan.AppendAlloc(c)
}

// member is a's entry in its gang's member list.
func (g *gangPlacer) member(a *api.Allocation, rank int) api.GangMember {
	addr := ""
	if n := g.nodes.node(a.NodeID); n != nil {
		addr = nodeAddr(n)
	}
	return api.GangMember{Rank: rank, AllocID: a.ID, Name: a.Name, NodeID: a.NodeID, Address: addr}
}

// nodeAddr is the address other nodes reach n at: its fingerprinted IP
// (the one its ports are bound on), else the host of its HTTP address.
func nodeAddr(n *api.Node) string {
	if ip := n.Attributes["unique.network.ip-address"]; ip != "" {
		return ip
	}
	if host, _, err := net.SplitHostPort(n.HTTPAddr); err == nil && host != "" {
		return host
	}
	return hostIP(n)
}

// gangPort is the alloc's reserved gang port (0 when it has none).
func gangPort(a *api.Allocation) int {
	if a.AllocatedResources == nil {
		return 0
	}
	for _, p := range a.AllocatedResources.Shared.Ports {
		if p.Label == api.GangPortLabel {
			return p.Value
		}
	}
	return 0
}

// placeHeld places run's members in an attempt (held apart from the plan)
// and returns what it holds; the caller keeps or rolls back.
func (g *gangPlacer) placeHeld(run *gangRun) []heldAlloc {
	var held []heldAlloc
	for _, p := range run.places {
		if g.env.cancelled() {
			break
		}
		if h, ok := g.pl.place(p); ok {
			held = append(held, h)
		}
		if g.env.err != nil {
			break
		}
	}
	return held
}
