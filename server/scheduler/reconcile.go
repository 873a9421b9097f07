package scheduler

import (
	"fmt"
	"sort"

	"github.com/drover/drover/api"
)

// scheduleGeneric reconciles a service or batch job group by group, then
// makes the placements (stops first, so freed capacity is reusable).
func (s *sched) scheduleGeneric(allocs []*api.Allocation) {
	byGroup := map[string][]*api.Allocation{}
	var names []string
	for _, a := range allocs {
		if !a.TerminalStatus() {
			s.jobLive = append(s.jobLive, a)
		}
		if _, ok := byGroup[a.TaskGroup]; !ok {
			names = append(names, a.TaskGroup)
		}
		byGroup[a.TaskGroup] = append(byGroup[a.TaskGroup], a)
	}
	sort.Strings(names)
	for _, g := range names {
		if s.job.LookupTaskGroup(g) != nil {
			continue
		}
		for _, a := range byGroup[g] {
			if !a.TerminalStatus() {
				s.stop(a, "alloc not needed since its group was removed from the job", "")
				s.annotate(g).Stop++
			}
		}
	}
	s.refuseOverLimit()
	var places []*placement
	for _, tg := range s.job.TaskGroups {
		if s.refused[tg.Name] {
			continue
		}
		places = append(places, s.applyGroup(s.reconcileGroup(tg, byGroup[tg.Name]))...)
	}
	s.completeDeployment()
	// Every group's context exists before the first placement so that
	// job-wide counters (distinct_property) see all of this pass's allocs.
	for _, tg := range s.job.TaskGroups {
		s.newTG(tg)
	}
	// Place the groups in job order, each group's allocs by index; a
	// gang's groups together, all-or-nothing (gang.go).
	s.placeAll(places, byGroup)
}

// refuseOverLimit leaves alone every group whose count is above
// Options.MaxGroupCount, with the other groups of its gang (all groups of
// an all_at_once job): nothing of them is reconciled or placed, each fails
// with an api.PendingCountLimit reason and no blocked eval (more capacity
// would not help; a new job version brings a new eval). Running allocs
// keep running: a job stored before the bound was set or lowered is not
// cut down by it.
func (s *sched) refuseOverLimit() {
	limit := s.opts.MaxGroupCount
	if limit <= 0 {
		limit = DefaultMaxGroupCount
	}
	why := map[string]string{} // gang ID -> the reason its groups are refused
	for _, tg := range s.job.TaskGroups {
		if tg.Count <= limit {
			continue
		}
		msg := fmt.Sprintf("group %q count %d is above the server's limit of %d (job_max_group_count): nothing of it is placed until the job is changed",
			tg.Name, tg.Count, limit)
		s.refuseGroup(tg, msg)
		if id := s.gangID(tg); id != "" && why[id] == "" {
			why[id] = msg
		}
	}
	for _, tg := range s.job.TaskGroups {
		if id := s.gangID(tg); id != "" && why[id] != "" && !s.refused[tg.Name] {
			s.refuseGroup(tg, fmt.Sprintf("placed together with another group: %s", why[id]))
		}
	}
}

// gangID names the gang a group is placed with (the job-wide one of an
// all_at_once job without gang blocks, as placeAll), or "".
func (s *sched) gangID(tg *api.TaskGroup) string {
	g, id := s.job.GangOf(tg)
	if g == nil && s.job.AllAtOnce {
		return api.GangJobWide
	}
	return id
}

func (s *sched) refuseGroup(tg *api.TaskGroup, msg string) {
	s.refused[tg.Name] = true
	s.failed[tg.Name] = &api.AllocMetric{NodesInPool: len(s.nodes),
		Reasons: []api.PendingReason{{Kind: api.PendingCountLimit, Message: msg}}}
	s.noRetry[tg.Name] = true
	s.queued[tg.Name] = 0
}

// nodeLost reports whether the alloc's node is gone or down.
func (s *sched) nodeLost(a *api.Allocation) bool {
	n := s.allNodes[a.NodeID]
	return n == nil || n.Status == api.NodeStatusDown
}

// reconcileGroup compares one group's allocs with its desired count and
// returns what it decided (stops, updates, placements, follow-up evals,
// annotation counts) for applyGroup to turn into plan edits. Only the
// job's deployment, which all groups share, is edited in the plan here
// (deployment, canaryPhase's promotion).
func (s *sched) reconcileGroup(tg *api.TaskGroup, allocs []*api.Allocation) *groupResult {
	r := &groupResult{tg: tg}
	d := &r.desired
	count := tg.Count
	if count < 0 {
		count = 0
	}
	sort.SliceStable(allocs, func(i, j int) bool {
		if ai, aj := allocs[i].Index(), allocs[j].Index(); ai != aj {
			return ai < aj
		}
		// At one index the current version wins (a promoted canary
		// replaces the old alloc), then the older alloc.
		if ci, cj := sameVersion(allocs[i], s.job), sameVersion(allocs[j], s.job); ci != cj {
			return ci
		}
		return allocs[i].CreateIndex < allocs[j].CreateIndex
	})
	upd := updateStrategy(s.job, tg)
	rolling := upd != nil && s.job.Type == api.JobTypeService
	curDep, promoted := s.activeDeployment(tg.Name)
	allocs, replace := s.reconcileDisconnects(allocs, d) // disconnect.go: unknown allocs, reconnects
	var keep, canaries []*api.Allocation
	var terminal []*api.Allocation
	seen := map[int]bool{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			terminal = append(terminal, a)
			continue
		}
		switch {
		case s.nodeLost(a):
			r.stop(a, "alloc is lost since its node is down", api.AllocClientStatusLost)
			replace = append(replace, a)
		case curDep != nil && !promoted && a.DeploymentID == curDep.ID && isCanary(a, curDep.TaskGroups[tg.Name]):
			canaries = append(canaries, a) // outside the count until promoted
		case a.DesiredTransition.ShouldMigrate():
			r.stop(a, "alloc is being migrated", "")
			d.Migrate++
			replace = append(replace, a)
		case seen[a.Index()]:
			r.stop(a, "alloc not needed: duplicate index", "")
			d.Stop++
		default:
			seen[a.Index()] = true
			keep = append(keep, a)
		}
	}
	if len(keep) > count {
		for _, a := range keep[count:] {
			r.stop(a, "alloc not needed due to job update", "")
			d.Stop++
		}
		keep = keep[:count]
	}
	budget := count - len(keep)
	idx := &indexPool{count: count, occupied: map[int]bool{}}
	for _, a := range keep {
		idx.occupied[a.Index()] = true
	}
	var places []*placement
	resched := s.terminalSlots(r, terminal, keep, idx, &budget)
	for _, a := range replace {
		if budget <= 0 {
			break
		}
		budget--
		places = append(places, &placement{tg: tg, index: idx.take(a.Index()), prev: a, stopped: true})
		if !a.DesiredTransition.ShouldMigrate() {
			d.Place++
		}
	}
	for _, p := range resched {
		places = append(places, p)
		d.Place++
	}
	destructive, inflight, unhealthy := s.updateKept(r, keep)
	if rolling && upd.Canary > 0 && len(destructive) > 0 && !promoted {
		var canaryPlaces []*placement
		destructive, canaryPlaces = s.canaryPhase(r, upd, canaries, destructive)
		places = append(places, canaryPlaces...)
	}
	// A failed alloc of the active deployment halts the rollout too (the
	// deployment watcher fails the deployment; this eval may come first).
	for _, a := range terminal {
		if curDep != nil && a.DeploymentID == curDep.ID && (a.ClientStatus == api.AllocClientStatusFailed || allocHealth(a) == healthBad) {
			unhealthy++
		}
	}
	limit := len(destructive)
	failedDep := rolling && s.versionDeploymentFailed()
	if rolling {
		limit = upd.MaxParallel - inflight
		paused := curDep != nil && curDep.Status == api.DeploymentStatusPaused
		if limit < 0 || unhealthy > 0 || failedDep || paused {
			limit = 0 // an unhealthy alloc halts the rollout
		}
		r.failDeployment = unhealthy > 0
		if inflight > 0 || unhealthy > 0 || len(destructive) > 0 {
			r.deployBusy = true
		}
	}
	for i, a := range destructive {
		if i >= limit {
			d.Ignore++
			continue
		}
		r.stop(a, "alloc is being updated due to job update", "")
		d.DestructiveUpdate++
		places = append(places, &placement{tg: tg, index: a.Index(), prev: a, stopped: true})
	}
	if budget > 0 {
		// One placement stands for every new alloc; they are made one by
		// one, at the lowest free indexes, as they are placed (placeFresh).
		places = append(places, &placement{tg: tg, fresh: budget, idx: idx})
		d.Place += uint64(budget)
	}
	if rolling && len(places) > 0 && !failedDep {
		r.deployBusy = true
		dep := s.deployment()
		st := dep.TaskGroups[tg.Name]
		if st == nil {
			st = &api.DeploymentState{AutoRevert: upd.AutoRevert, AutoPromote: upd.AutoPromote}
			dep.TaskGroups[tg.Name] = st
		}
		st.DesiredTotal = count
		for _, p := range places {
			p.deploy = dep.ID
		}
	}
	r.places = places
	return r
}

// indexPool hands out alloc indexes below the count: a wanted one when it
// is free, else the lowest free one.
type indexPool struct {
	count    int
	occupied map[int]bool
	lowFree  int // every index below it is occupied
}

func (p *indexPool) take(want int) int {
	if want >= 0 && want < p.count && !p.occupied[want] {
		p.occupied[want] = true
		return want
	}
	for ; ; p.lowFree++ {
		if !p.occupied[p.lowFree] {
			p.occupied[p.lowFree] = true
			return p.lowFree
		}
	}
}

// terminalSlots decides for terminal allocs that still hold their slot
// (batch work done, failures waiting for or past their reschedule, lost
// allocs) and returns the reschedule placements; each slot held or
// rescheduled takes one from the budget.
func (s *sched) terminalSlots(r *groupResult, terminal, keep []*api.Allocation, idx *indexPool, budget *int) []*placement {
	tg, d, count := r.tg, &r.desired, idx.count
	live := map[int]bool{}
	for _, a := range keep {
		live[a.Index()] = true
	}
	latest := map[int]*api.Allocation{}
	for _, a := range terminal {
		if a.NextAllocation != "" || a.DesiredStatus != api.AllocDesiredStatusRun || live[a.Index()] || a.Index() >= count {
			continue
		}
		if cur := latest[a.Index()]; cur == nil || a.CreateIndex >= cur.CreateIndex {
			latest[a.Index()] = a
		}
	}
	idxs := make([]int, 0, len(latest))
	for i := range latest {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	var resched []*placement
	for _, i := range idxs {
		a := latest[i]
		if *budget <= 0 {
			break
		}
		switch a.ClientStatus {
		case api.AllocClientStatusComplete:
			if s.job.Type != api.JobTypeBatch {
				continue // a finished service alloc frees its slot
			}
			*budget--
			idx.occupied[i] = true
			d.Ignore++
		case api.AllocClientStatusLost:
			*budget--
			resched = append(resched, &placement{tg: tg, index: idx.take(i), prev: a})
		case api.AllocClientStatusFailed:
			dec, at, delay := decideReschedule(s.job, tg, a, s.eval.ID, s.opts.Now)
			switch {
			case dec == reschedNow:
				*budget--
				resched = append(resched, &placement{tg: tg, index: idx.take(i), prev: a, resched: true, delay: int64(delay)})
			case dec == reschedLater && a.FollowupEvalID != "":
				*budget-- // waiting for its follow-up eval
				idx.occupied[i] = true
				d.Ignore++
			case dec == reschedLater:
				*budget--
				idx.occupied[i] = true
				f := s.followUp(r, at)
				c := a.Copy()
				c.FollowupEvalID = f.ID
				c.ModifyTime = s.opts.Now.UnixNano()
				r.updates = append(r.updates, c)
				d.Ignore++
			default:
				*budget-- // out of attempts: stays failed
				idx.occupied[i] = true
				d.Ignore++
			}
		}
	}
	return resched
}

// updateKept brings kept allocs to the job version: unchanged ones are
// ignored (counting deployment allocs still pending or unhealthy),
// others are updated in place or, when the change is destructive,
// returned for the rollout.
func (s *sched) updateKept(r *groupResult, keep []*api.Allocation) (destructive []*api.Allocation, inflight, unhealthy int) {
	tg, d := r.tg, &r.desired
	for _, a := range keep {
		if sameVersion(a, s.job) {
			d.Ignore++
			if a.DeploymentID != "" {
				switch allocHealth(a) {
				case healthPending:
					inflight++
				case healthBad:
					unhealthy++
				}
			}
			continue
		}
		var oldTG *api.TaskGroup
		if a.Job != nil {
			oldTG = a.Job.LookupTaskGroup(tg.Name)
		}
		if destructiveChange(a.Job, oldTG, s.job, tg) {
			destructive = append(destructive, a)
			continue
		}
		c := a.Copy()
		c.Job = s.job
		c.EvalID = s.eval.ID
		c.ModifyTime = s.opts.Now.UnixNano()
		r.updates = append(r.updates, c)
		d.InPlaceUpdate++
	}
	return destructive, inflight, unhealthy
}

// deployment returns the job version's active deployment, creating one in
// the plan (and cancelling an older active one) when needed.
func (s *sched) deployment() *api.Deployment {
	if s.plan.Deployment != nil {
		return s.plan.Deployment
	}
	ns := s.job.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	cur, err := s.st.LatestDeploymentByJobID(ns, s.job.ID)
	if err != nil {
		s.err = err
	}
	if cur != nil && cur.Active() && cur.JobVersion == s.job.Version {
		c := *cur
		c.TaskGroups = make(map[string]*api.DeploymentState, len(cur.TaskGroups))
		for k, v := range cur.TaskGroups {
			vc := *v
			c.TaskGroups[k] = &vc
		}
		s.plan.Deployment = &c
		return &c
	}
	if cur != nil && cur.Active() {
		s.plan.DeploymentUpdates = append(s.plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
			DeploymentID: cur.ID, Status: api.DeploymentStatusCancelled,
			StatusDescription: "cancelled because of a newer version of the job",
		})
	}
	s.plan.Deployment = &api.Deployment{
		ID: s.newID(), Namespace: ns, JobID: s.job.ID, JobVersion: s.job.Version,
		JobModifyIndex: s.job.ModifyIndex, JobSpecModifyIndex: s.job.JobModifyIndex, JobCreateIndex: s.job.CreateIndex,
		TaskGroups: map[string]*api.DeploymentState{}, Status: api.DeploymentStatusRunning,
		StatusDescription: "deployment is running",
	}
	return s.plan.Deployment
}

// Alloc health within a deployment.
const (
	healthPending = iota
	healthGood
	healthBad
)

// allocHealth reads the health verdict the leader's deployment watcher
// wrote (server/deploymentwatcher.go). Without one the alloc is pending,
// except with update.health_check "manual" (the watcher judges nothing
// then): a running alloc counts as healthy so the rollout progresses.
func allocHealth(a *api.Allocation) int {
	if ds := a.DeploymentStatus; ds != nil && ds.Healthy != nil {
		if *ds.Healthy {
			return healthGood
		}
		return healthBad
	}
	if a.ClientStatus == api.AllocClientStatusRunning && manualHealth(a) {
		return healthGood
	}
	return healthPending
}

// manualHealth reports whether the alloc's group has no health tracking
// (health_check "manual", or no update strategy at all).
func manualHealth(a *api.Allocation) bool {
	if a.Job == nil {
		return true
	}
	u := a.Job.Update
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.Update != nil {
		u = tg.Update
	}
	return u == nil || u.HealthCheck == "manual"
}

// failDeployment marks the job version's active deployment failed.
func (s *sched) failDeployment(group string) {
	cur, err := s.st.LatestDeploymentByJobID(s.job.Namespace, s.job.ID)
	if err != nil {
		s.err = err
		return
	}
	if cur == nil || !cur.Active() || cur.JobVersion != s.job.Version {
		return
	}
	for _, u := range s.plan.DeploymentUpdates {
		if u.DeploymentID == cur.ID {
			return
		}
	}
	s.plan.DeploymentUpdates = append(s.plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
		DeploymentID: cur.ID, Status: api.DeploymentStatusFailed,
		StatusDescription: "an allocation of group " + group + " is unhealthy",
	})
}

// completeDeployment marks the job version's active deployment successful
// when no group has rollout work left.
func (s *sched) completeDeployment() {
	if s.deployBusy || s.plan.Deployment != nil || len(s.failed) > 0 || s.job.Type != api.JobTypeService {
		return
	}
	cur, err := s.st.LatestDeploymentByJobID(s.job.Namespace, s.job.ID)
	if err != nil {
		s.err = err
		return
	}
	if cur == nil || !cur.Active() || cur.JobVersion != s.job.Version || len(s.plan.DeploymentUpdates) > 0 {
		return
	}
	s.plan.DeploymentUpdates = append(s.plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
		DeploymentID: cur.ID, Status: api.DeploymentStatusSuccessful, StatusDescription: "deployment completed successfully",
	})
}

// versionDeploymentFailed reports whether the job version's latest
// deployment failed: its rollout stays halted (no destructive updates, no
// new deployment) until another version is registered.
func (s *sched) versionDeploymentFailed() bool {
	cur, err := s.st.LatestDeploymentByJobID(s.job.Namespace, s.job.ID)
	if err != nil {
		s.err = err
		return false
	}
	return cur != nil && cur.JobVersion == s.job.Version && cur.Status == api.DeploymentStatusFailed
}

// activeDeployment returns the job version's active deployment and whether
// the group's canaries were promoted in it.
func (s *sched) activeDeployment(group string) (*api.Deployment, bool) {
	if d := s.plan.Deployment; d != nil {
		st := d.TaskGroups[group]
		return d, st != nil && st.Promoted
	}
	cur, err := s.st.LatestDeploymentByJobID(s.job.Namespace, s.job.ID)
	if err != nil {
		s.err = err
		return nil, false
	}
	if cur == nil || !cur.Active() || cur.JobVersion != s.job.Version {
		return nil, false
	}
	st := cur.TaskGroups[group]
	return cur, st != nil && st.Promoted
}

// canaryPhase runs a canary rollout step for a group with destructive
// updates pending: it places missing canaries next to the old allocs
// (returning those placements; the old allocs stay), or, when
// auto_promote is set and every canary is healthy, promotes them: the old
// allocs at the canaries' indexes stop and the rest of destructive is
// returned for the rolling update. Without auto_promote the rollout waits
// for a promotion of the deployment (Promoted set on its group state).
func (s *sched) canaryPhase(r *groupResult, upd *api.UpdateStrategy, canaries, destructive []*api.Allocation) ([]*api.Allocation, []*placement) {
	tg, d := r.tg, &r.desired
	r.deployBusy = true
	dep := s.deployment()
	st := dep.TaskGroups[tg.Name]
	if st == nil {
		st = &api.DeploymentState{AutoRevert: upd.AutoRevert, AutoPromote: upd.AutoPromote, DesiredCanaries: upd.Canary}
		dep.TaskGroups[tg.Name] = st
	}
	st.DesiredTotal = tg.Count
	if len(canaries) < upd.Canary {
		used := map[int]bool{}
		for _, c := range canaries {
			used[c.Index()] = true
		}
		var places []*placement
		for _, a := range destructive {
			if len(canaries)+len(places) >= upd.Canary {
				break
			}
			if used[a.Index()] {
				continue
			}
			used[a.Index()] = true
			places = append(places, &placement{tg: tg, index: a.Index(), deploy: dep.ID, canary: true})
			d.Canary++
		}
		d.Ignore += uint64(len(destructive))
		return nil, places
	}
	healthy := true
	for _, c := range canaries {
		if allocHealth(c) != healthGood {
			healthy = false
		}
	}
	if !upd.AutoPromote || !healthy {
		d.Ignore += uint64(len(destructive))
		return nil, nil // waiting for promotion: no placements, no stops
	}
	st.Promoted = true
	at := map[int]bool{}
	for _, c := range canaries {
		at[c.Index()] = true
	}
	var rest []*api.Allocation
	for _, a := range destructive {
		if at[a.Index()] {
			r.stop(a, "alloc replaced by a promoted canary", "")
			d.Stop++
			continue
		}
		rest = append(rest, a)
	}
	return rest, nil
}

// isCanary reports whether a is one of the deployment group's canaries.
func isCanary(a *api.Allocation, st *api.DeploymentState) bool {
	if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
		return true
	}
	if st != nil {
		for _, id := range st.PlacedCanaries {
			if id == a.ID {
				return true
			}
		}
	}
	return false
}
