package scheduler

import (
	"sort"

	"github.com/drover/drover/api"
)

// reconciler is the reconcile stage: for each group, the diff between
// what the job asks for and the allocs that exist (groupResult: stops,
// in-place updates, placements, follow-up evals, annotation counts).
//
// It reads the job, the eval, the clock, node statuses (nodeIndex) and
// the state's deployments, and draws IDs from the pass's generator (new
// deployments and follow-up evals). It writes nothing but the plan's
// deployment (Deployment, DeploymentUpdates), which all groups share;
// node usage, stops and placements are the placer's, made from the
// groupResult (pass.applyGroup). It never sees node usage: what a system
// job's reconciliation needs of candidate nodes comes through
// systemNodes.
type reconciler struct {
	env   *passEnv
	nodes *nodeIndex
	plan  *api.Plan // Deployment and DeploymentUpdates only
	// made are the follow-up evals of the groups reconciled so far; a
	// reschedule within rescheduleWindow of one reuses it.
	made []*api.Evaluation
}

// group compares one group's allocs with its desired count and returns
// what it decided (stops, updates, placements, follow-up evals,
// annotation counts) for applyGroup to turn into plan edits. Only the
// job's deployment, which all groups share, is edited in the plan here
// (deployment, canaryPhase's promotion).
func (rc *reconciler) group(tg *api.TaskGroup, allocs []*api.Allocation) *groupResult {
	job := rc.env.job
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
		if ci, cj := sameVersion(allocs[i], job), sameVersion(allocs[j], job); ci != cj {
			return ci
		}
		return allocs[i].CreateIndex < allocs[j].CreateIndex
	})
	upd := updateStrategy(job, tg)
	rolling := upd != nil && job.Type == api.JobTypeService
	curDep, promoted := rc.activeDeployment(tg.Name)
	allocs, replace := rc.disconnects(r, allocs) // disconnect.go: unknown allocs, reconnects
	var keep, canaries []*api.Allocation
	var terminal []*api.Allocation
	seen := map[int]bool{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			terminal = append(terminal, a)
			continue
		}
		switch {
		case rc.nodes.lost(a):
			r.stop(a, "alloc is lost since its node is down", api.AllocClientStatusLost)
			replace = append(replace, a)
		case curDep != nil && !promoted && a.DeploymentID == curDep.ID && isCanary(a, curDep.TaskGroups[tg.Name]):
			canaries = append(canaries, a) // outside the count until promoted
		case a.DesiredTransition.ShouldMigrate():
			r.stop(a, migrateDescription(rc.nodes.node(a.NodeID)), "")
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
	resched := rc.terminalSlots(r, terminal, keep, idx, &budget)
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
	destructive, inflight, unhealthy := rc.updateKept(r, keep)
	if rolling && upd.Canary > 0 && len(destructive) > 0 && !promoted {
		var canaryPlaces []*placement
		destructive, canaryPlaces = rc.canaryPhase(r, upd, canaries, destructive)
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
	failedDep := rolling && rc.versionDeploymentFailed()
	waiting := rolling && !failedDep && rc.waitingForRegionTurn(curDep) // deployment.go
	if rolling {
		limit = upd.MaxParallel - inflight
		paused := curDep != nil && curDep.Status == api.DeploymentStatusPaused
		if limit < 0 || unhealthy > 0 || failedDep || paused || waiting {
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
	if waiting && (budget > 0 || len(places) > 0 || len(destructive) > 0) {
		rc.holdForRegionTurn(r, upd, count)
		budget, places = 0, nil
	}
	if budget > 0 {
		// One placement stands for every new alloc; they are made one by
		// one, at the lowest free indexes, as they are placed (placeFresh).
		places = append(places, &placement{tg: tg, fresh: budget, idx: idx})
		d.Place += uint64(budget)
	}
	if rolling && len(places) > 0 && !failedDep {
		r.deployBusy = true
		dep := rc.deployment()
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
	rc.made = append(rc.made, r.followUps...)
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
func (rc *reconciler) terminalSlots(r *groupResult, terminal, keep []*api.Allocation, idx *indexPool, budget *int) []*placement {
	job, now := rc.env.job, rc.env.opts.Now
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
			if job.Type != api.JobTypeBatch {
				continue // a finished service alloc frees its slot
			}
			*budget--
			idx.occupied[i] = true
			d.Ignore++
		case api.AllocClientStatusLost:
			*budget--
			resched = append(resched, &placement{tg: tg, index: idx.take(i), prev: a})
		case api.AllocClientStatusFailed:
			if specChanged(a, job, tg) {
				// The job was registered again with other tasks since
				// this alloc failed: its replacement runs the new
				// version now, as a placement, not a reschedule (no
				// delay, no attempt used, no node penalty).
				*budget--
				resched = append(resched, &placement{tg: tg, index: idx.take(i), prev: a})
				continue
			}
			dec, at, delay := decideReschedule(job, tg, a, rc.env.eval.ID, now)
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
				f := rc.followUp(r, at)
				c := a.Copy()
				c.FollowupEvalID = f.ID
				c.ModifyTime = now.UnixNano()
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
func (rc *reconciler) updateKept(r *groupResult, keep []*api.Allocation) (destructive []*api.Allocation, inflight, unhealthy int) {
	job := rc.env.job
	tg, d := r.tg, &r.desired
	for _, a := range keep {
		if sameVersion(a, job) {
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
		if destructiveChange(a.Job, oldTG, job, tg) {
			destructive = append(destructive, a)
			continue
		}
		c := a.Copy()
		c.Job = job
		c.EvalID = rc.env.eval.ID
		c.ModifyTime = rc.env.opts.Now.UnixNano()
		r.updates = append(r.updates, c)
		d.InPlaceUpdate++
	}
	return destructive, inflight, unhealthy
}
