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
// above Min gets its replacements placed one by one). Job-level
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

// heldAlloc is a placement of an open gang attempt, not yet in the plan.
type heldAlloc struct {
	a       *api.Allocation
	victims []*api.Allocation
	p       *placement
}

type gangAttempt struct{ held []heldAlloc }

// keep writes a placement to the plan: its evictions, the alloc and the
// link from the alloc it replaces.
func (s *sched) keep(a *api.Allocation, victims []*api.Allocation, prev *api.Allocation) {
	if len(victims) > 0 {
		s.recordEvictions(a, victims)
	}
	s.plan.AppendAlloc(a)
	if prev != nil {
		s.linkPrev(prev, a)
	}
}

// placeAll makes the pass's placements in job group order; the groups of
// a gang are placed together, at the gang's first group.
func (s *sched) placeAll(places []*placement, byGroup map[string][]*api.Allocation) {
	byTG := map[string][]*placement{}
	for _, p := range places {
		byTG[p.tg.Name] = append(byTG[p.tg.Name], p)
	}
	runs := map[string]*gangRun{}
	for _, tg := range s.job.TaskGroups {
		g, id := s.job.GangOf(tg)
		plain := false
		if g == nil && s.job.AllAtOnce {
			g, id, plain = &api.Gang{}, api.GangJobWide, true
		}
		if g == nil {
			continue
		}
		run := runs[id]
		if run == nil {
			run = &gangRun{id: id, gang: g, plain: plain, staleStops: map[string]bool{}}
			runs[id] = run
		}
		run.groups = append(run.groups, tg)
		// A gang's members are counted and placed as a list: its groups'
		// counts are within Options.MaxGroupCount (refuseOverLimit).
		run.places = append(run.places, expandFresh(byTG[tg.Name])...)
	}
	done := map[string]bool{}
	for _, tg := range s.job.TaskGroups {
		g, id := s.job.GangOf(tg)
		if g == nil && s.job.AllAtOnce {
			id = api.GangJobWide
		}
		if run := runs[id]; run != nil {
			if !done[id] && !s.refused[tg.Name] {
				done[id] = true
				s.placeGang(run, byGroup)
			}
		} else {
			for _, p := range byTG[tg.Name] {
				if p.fresh > 0 {
					s.placeFresh(p)
				} else if !s.cancelled() {
					s.place(p)
				}
				if s.err != nil {
					return
				}
			}
		}
		if s.err != nil {
			return
		}
	}
	if s.job.AllAtOnce {
		s.plan.AllAtOnce = true
	}
	if s.gangsFailed && s.plan.Deployment != nil && len(s.plan.NodeAllocation) == 0 {
		// Nothing of the rollout was placed: no deployment for it yet.
		s.plan.Deployment = nil
		s.plan.DeploymentUpdates = nil
	}
}

// placeFresh makes a fresh placement's allocs (see placement.fresh) one
// by one. Once the group failed (no node fits, its queue is at a limit)
// every further placement would only count a coalesced failure, so the
// rest are counted at once: the pass does the work and holds the memory
// of what fits, whatever the count.
func (s *sched) placeFresh(p *placement) {
	tc := s.newTG(p.tg)
	for left := p.fresh; left > 0; left-- {
		if tc.failed {
			s.failed[p.tg.Name].CoalescedFailures += left
			s.queued[p.tg.Name] += left
			return
		}
		if s.cancelled() {
			return
		}
		s.place(&placement{tg: p.tg, index: p.idx.take(-1), deploy: p.deploy})
		if s.err != nil {
			return
		}
	}
}

// expandFresh returns places with each fresh placement replaced by the
// placements it stands for, in index order.
func expandFresh(places []*placement) []*placement {
	var out []*placement
	for _, p := range places {
		if p.fresh == 0 {
			out = append(out, p)
			continue
		}
		for range p.fresh {
			out = append(out, &placement{tg: p.tg, index: p.idx.take(-1), deploy: p.deploy})
		}
	}
	return out
}

// members fills the gang's running and finished members and the time
// the newest member failed or was lost.
func (s *sched) members(run *gangRun, byGroup map[string][]*api.Allocation) {
	for _, tg := range run.groups {
		count := max(tg.Count, 0)
		run.total += count
		liveIdx := map[int]bool{}
		for _, a := range byGroup[tg.Name] {
			switch {
			case !a.TerminalStatus() && !s.stopped[a.ID]:
				run.live = append(run.live, a)
				liveIdx[a.Index()] = true
			case a.ClientStatus == api.AllocClientStatusFailed || a.ClientStatus == api.AllocClientStatusLost:
				run.since = max(run.since, a.ModifyTime)
			}
		}
		for _, a := range byGroup[tg.Name] {
			if s.stopped[a.ID] && a.ClientStatus != api.AllocClientStatusComplete && s.nodeLost(a) {
				run.since = max(run.since, s.opts.Now.UnixNano()) // lost in this pass
			}
		}
		if s.job.Type == api.JobTypeBatch {
			seen := map[int]bool{}
			for _, a := range byGroup[tg.Name] {
				i := a.Index()
				if a.ClientStatus == api.AllocClientStatusComplete && i < count && !liveIdx[i] && !seen[i] {
					seen[i] = true
					run.done++
				}
			}
		}
	}
}

// placeGang places one gang all-or-nothing (see the top of the file),
// stopping it first when it stayed below Min past its grace period, and
// reports a gang that could not be placed.
func (s *sched) placeGang(run *gangRun, byGroup map[string][]*api.Allocation) {
	s.members(run, byGroup)
	have := len(run.live) + run.done
	need := len(run.places) // all_at_once: the whole pass or nothing
	var staleAt time.Time   // when a gang below min goes stale
	if !run.plain {
		need = max(0, run.min()-have)
		if have < run.min() && len(run.live) > 0 && run.since > 0 {
			grace := run.gang.StaleGrace
			if grace <= 0 {
				grace = api.DefaultGangStaleGrace
			}
			below := s.opts.Now.Sub(time.Unix(0, run.since))
			if below >= grace {
				s.restartGang(run, below)
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
		s.gangFollowUp(staleAt, "created to check gang "+run.id+" below min")
	}
	if len(run.places) == 0 {
		return
	}
	held, ok, why := s.attemptGang(run, need)
	if s.err != nil {
		return
	}
	if ok {
		if !run.plain {
			s.gangInfo(run, held, need > 0)
		}
		for _, h := range held {
			s.keep(h.a, h.victims, h.p.prev)
		}
		return
	}
	s.gangFailed(run, have, need, len(held), why)
	if !staleAt.IsZero() {
		s.gangFollowUp(staleAt, "created to check gang "+run.id+" below min")
	}
}

// restartGang stops a stale gang's running members so the whole gang is
// placed again in this pass.
func (s *sched) restartGang(run *gangRun, below time.Duration) {
	desc := fmt.Sprintf("gang %s below min for %s (%d of %d members running)", run.id, below.Round(time.Second), len(run.live), run.min())
	taken := map[string]map[int]bool{}
	for _, p := range run.places {
		if taken[p.tg.Name] == nil {
			taken[p.tg.Name] = map[int]bool{}
		}
		taken[p.tg.Name][p.index] = true
	}
	for _, a := range run.live {
		s.stop(a, desc, "")
		run.staleStops[a.ID] = true
		s.annotate(a.TaskGroup).Stop++
		s.annotate(a.TaskGroup).Place++
		tg := s.job.LookupTaskGroup(a.TaskGroup)
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
				s.annotate(tg.Name).Place++
			}
		}
	}
	sort.SliceStable(run.places, func(i, j int) bool {
		gi, gj := groupPos(s.job, run.places[i].tg.Name), groupPos(s.job, run.places[j].tg.Name)
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

func (s *sched) saveGangMetrics(run *gangRun) gangMetrics {
	m := gangMetrics{failed: map[string]*api.AllocMetric{}, queued: map[string]int{}, hasQ: map[string]bool{}}
	for _, tg := range run.groups {
		m.failed[tg.Name] = s.failed[tg.Name]
		m.queued[tg.Name], m.hasQ[tg.Name] = s.queued[tg.Name]
	}
	return m
}

// restoreGangMetrics puts back the metrics of saved and returns the
// failure metrics the attempt had written.
func (s *sched) restoreGangMetrics(run *gangRun, saved gangMetrics) map[string]*api.AllocMetric {
	got := map[string]*api.AllocMetric{}
	for _, tg := range run.groups {
		n := tg.Name
		if m := s.failed[n]; m != saved.failed[n] {
			got[n] = m
		}
		if saved.failed[n] == nil {
			delete(s.failed, n)
		} else {
			s.failed[n] = saved.failed[n]
		}
		if saved.hasQ[n] {
			s.queued[n] = saved.queued[n]
		} else {
			delete(s.queued, n)
		}
	}
	return got
}

// tryGang places the gang's members on the nodes allowed admits (nil:
// any node) and keeps the attempt when at least need fit; otherwise it
// rolls back and returns the failure metrics of the attempt.
func (s *sched) tryGang(run *gangRun, need int, allowed func(*nodeState) bool) ([]heldAlloc, bool, map[string]*api.AllocMetric) {
	saved := s.saveGangMetrics(run)
	cp := s.checkpoint()
	if allowed != nil {
		for _, tg := range run.groups {
			tc := s.newTG(tg)
			for i, ns := range s.nodes {
				if !tc.skip[i] && !allowed(ns) {
					s.skipNode(tc, i)
				}
			}
		}
	}
	held := s.placeHeld(run)
	if s.err == nil && len(held) >= need {
		s.release(cp)
		return held, true, nil
	}
	s.rollback(cp)
	s.dropCanaries(held)
	return held, false, s.restoreGangMetrics(run, saved)
}

// dropCanaries takes held canaries back out of the deployment (buildAlloc
// records them there when it builds them).
func (s *sched) dropCanaries(held []heldAlloc) {
	for _, h := range held {
		if !h.p.canary || s.plan.Deployment == nil {
			continue
		}
		if st := s.plan.Deployment.TaskGroups[h.p.tg.Name]; st != nil {
			st.PlacedCanaries = slices.DeleteFunc(st.PlacedCanaries, func(id string) bool { return id == h.a.ID })
		}
	}
}

// gangFailed reports a gang that could not be placed: every member is
// queued, each group failed with the gang's reason; the stops made for
// its replacements are taken back (stale members stay stopped). A gang
// past its timeout gets no blocked eval; one still waiting gets a
// follow-up eval at its deadline.
func (s *sched) gangFailed(run *gangRun, have, need, fit int, why string) {
	s.gangsFailed = true
	n := map[string]int{}
	for _, p := range run.places {
		n[p.tg.Name]++
		if p.prev != nil && p.stopped && !run.staleStops[p.prev.ID] && p.prev.ClientStatus != api.AllocClientStatusLost && !s.nodeLost(p.prev) {
			s.unstop(p.prev)
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
	if t := run.gang.Timeout; t > 0 && have == 0 && !run.plain && s.job.SubmitTime > 0 {
		deadline := time.Unix(0, s.job.SubmitTime).Add(t)
		if !s.opts.Now.Before(deadline) {
			timedOut = true
			reason = fmt.Sprintf("gang %s timed out after %s waiting for room; %s", run.id, t, reason)
		} else {
			s.gangFollowUp(deadline, "created for the timeout of gang "+run.id)
		}
	}
	for _, tg := range run.groups {
		if n[tg.Name] == 0 {
			continue
		}
		m := s.failed[tg.Name]
		if m == nil {
			m = &api.AllocMetric{NodesInPool: len(s.nodes), NodesAvailable: s.dcAvail}
		}
		m.CoalescedFailures = n[tg.Name] - 1
		m.GangFailure = reason
		s.failed[tg.Name] = m
		s.queued[tg.Name] += n[tg.Name]
		if timedOut {
			s.noRetry[tg.Name] = true
		}
	}
	if timedOut {
		s.gangNotes = append(s.gangNotes, fmt.Sprintf("gang %s timed out after %s", run.id, run.gang.Timeout))
	}
}

// unstop takes back a stop of the plan (a destructive update whose
// replacement was not placed): the alloc keeps running.
func (s *sched) unstop(a *api.Allocation) {
	list := s.plan.NodeUpdate[a.NodeID]
	for i, c := range list {
		if c.ID == a.ID {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.plan.NodeUpdate, a.NodeID)
	} else {
		s.plan.NodeUpdate[a.NodeID] = list
	}
	if !s.stopped[a.ID] {
		return
	}
	delete(s.stopped, a.ID)
	if !a.TerminalStatus() {
		s.quotaCount(a, 1)
	}
	if ns := s.byID[a.NodeID]; ns != nil && ns.loaded {
		s.addTo(ns, a)
	}
}

// gangFollowUp adds a delayed eval at at (one per instant per pass).
func (s *sched) gangFollowUp(at time.Time, desc string) {
	if !at.After(s.opts.Now) {
		return
	}
	if s.eval.WaitUntil.Equal(at) {
		return // this eval is that follow-up
	}
	r := &groupResult{}
	f := s.followUp(r, at)
	if len(r.followUps) > 0 {
		f.StatusDescription = desc
		s.res.FollowUps = append(s.res.FollowUps, r.followUps...)
	}
}

// gangInfo numbers the members (running ones keep their rank, a
// replacement takes the rank of the alloc it replaces when free, others
// the lowest free ranks in placement order) and gives every new member
// the gang's size, leader address and member list. When the gang was
// placed as a unit (unit) the plan records it for the applier.
func (s *sched) gangInfo(run *gangRun, held []heldAlloc, unit bool) {
	if len(held) == 0 {
		return
	}
	used := map[int]bool{}
	var members []api.GangMember
	leaderPort := map[string]int{}
	liveRank := map[string]int{}   // running members' ranks
	var unranked []*api.Allocation // running members without a rank of their own
	for _, a := range run.live {
		if a.Gang == nil || a.Gang.ID != run.id || used[a.Gang.Rank] {
			unranked = append(unranked, a)
			continue
		}
		used[a.Gang.Rank] = true
		liveRank[a.ID] = a.Gang.Rank
		members = append(members, s.gangMember(a, a.Gang.Rank))
		leaderPort[a.ID] = gangPort(a)
	}
	free := 0
	next := func(want int) int {
		if want >= 0 && !used[want] {
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
		members = append(members, s.gangMember(h.a, rank[i]))
		leaderPort[h.a.ID] = gangPort(h.a)
	}
	for _, a := range unranked {
		liveRank[a.ID] = next(-1)
		members = append(members, s.gangMember(a, liveRank[a.ID]))
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
			s.refreshMember(a, &api.AllocGang{ID: run.id, Size: len(members), Rank: r, LeaderAddr: addr, Members: members})
			ids = append(ids, a.ID)
		}
	}
	if unit {
		s.plan.Gangs = append(s.plan.Gangs, &api.PlanGang{JobID: s.job.ID, ID: run.id, AllocIDs: ids})
	}
}

// refreshMember gives a running member its gang's new info: on its
// in-place update when the plan has one, else on a new copy.
func (s *sched) refreshMember(a *api.Allocation, g *api.AllocGang) {
	for _, c := range s.plan.NodeAllocation[a.NodeID] {
		if c.ID == a.ID {
			c.Gang = g
			return
		}
	}
	c := a.Copy()
	c.Gang = g
	c.EvalID = s.eval.ID
	c.ModifyTime = s.opts.Now.UnixNano()
	s.plan.AppendAlloc(c)
}

func (s *sched) gangMember(a *api.Allocation, rank int) api.GangMember {
	addr := ""
	if n := s.allNodes[a.NodeID]; n != nil {
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

// gangPortAsk adds the gang port to a gang group's asks: a dynamic port
// in a network of its own, so the applier checks it like any port.
func (s *sched) gangPortAsk(tc *tgCtx) {
	if g, _ := s.job.GangOf(tc.tg); g == nil {
		return
	}
	for _, p := range tc.ports {
		if p.group && p.port.Label == api.GangPortLabel {
			return
		}
	}
	tc.ports = append(tc.ports, portAsk{port: api.Port{Label: api.GangPortLabel}, group: true, netIdx: len(tc.tg.Networks)})
}

// placeHeld places run's members in an attempt (held apart from the plan)
// and returns what it holds; the caller keeps or rolls back.
func (s *sched) placeHeld(run *gangRun) []heldAlloc {
	s.attempt = &gangAttempt{}
	for _, p := range run.places {
		if s.cancelled() {
			break
		}
		s.place(p)
		if s.err != nil {
			break
		}
	}
	held := s.attempt.held
	s.attempt = nil
	return held
}
