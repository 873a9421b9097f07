package scheduler

import "github.com/drover/drover/api"

// Deployments (the reconciler's part): a rolling update of a service
// job's version runs in a deployment the plan creates or carries on; the
// next batch waits for the health verdicts the server's deployment
// watcher writes, canaries wait for a promotion (or auto_promote), and a
// failed deployment halts its version's rollout.

// deployment returns the job version's active deployment, creating one in
// the plan (and cancelling an older active one) when needed.
func (rc *reconciler) deployment() *api.Deployment {
	job, plan := rc.env.job, rc.plan
	if plan.Deployment != nil {
		return plan.Deployment
	}
	ns := job.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	cur, err := rc.env.st.LatestDeploymentByJobID(ns, job.ID)
	if err != nil {
		rc.env.err = err
	}
	if cur != nil && cur.Active() && cur.JobVersion == job.Version {
		c := *cur
		c.TaskGroups = make(map[string]*api.DeploymentState, len(cur.TaskGroups))
		for k, v := range cur.TaskGroups {
			vc := *v
			c.TaskGroups[k] = &vc
		}
		plan.Deployment = &c
		return &c
	}
	if cur != nil && cur.Active() {
		plan.DeploymentUpdates = append(plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
			DeploymentID: cur.ID, Status: api.DeploymentStatusCancelled,
			StatusDescription: "cancelled because of a newer version of the job",
		})
	}
	status, desc := api.DeploymentStatusRunning, "deployment is running"
	if firstOfMultiregionVersion(job, cur) {
		status, desc = api.DeploymentStatusPending, "deployment is pending, waiting for its region's turn"
	}
	plan.Deployment = &api.Deployment{
		ID: rc.env.newID(), Namespace: ns, JobID: job.ID, JobVersion: job.Version,
		JobModifyIndex: job.ModifyIndex, JobSpecModifyIndex: job.JobModifyIndex, JobCreateIndex: job.CreateIndex,
		TaskGroups: map[string]*api.DeploymentState{}, Status: status,
		StatusDescription: desc,
	}
	return plan.Deployment
}

// Multiregion jobs (server/multiregion.go rolls them out region by
// region): the first deployment of a version starts pending, and nothing
// of the version is placed until the rollout runs it; a finished one is
// blocked (not successful) until every region has finished.

// firstOfMultiregionVersion reports whether a new deployment of a
// multiregion job starts pending: it is its version's first (latest is
// the job's newest deployment). A later one of the same version (a
// replacement after the rollout) runs at once.
func firstOfMultiregionVersion(job *api.Job, latest *api.Deployment) bool {
	return job.Multiregion != nil && (latest == nil || latest.JobVersion != job.Version)
}

// waitingForRegionTurn reports whether the group's rollout waits for its
// region's turn: the version's active deployment is pending, or the one
// the plan would create would be.
func (rc *reconciler) waitingForRegionTurn(curDep *api.Deployment) bool {
	job := rc.env.job
	if job.Multiregion == nil {
		return false
	}
	if curDep != nil {
		return curDep.Status == api.DeploymentStatusPending
	}
	latest, err := rc.env.st.LatestDeploymentByJobID(job.Namespace, job.ID)
	if err != nil {
		rc.env.err = err
		return false
	}
	return firstOfMultiregionVersion(job, latest)
}

// holdForRegionTurn records the group in the version's pending
// deployment (created in the plan if needed) without placing anything.
func (rc *reconciler) holdForRegionTurn(r *groupResult, upd *api.UpdateStrategy, count int) {
	r.deployBusy = true
	dep := rc.deployment()
	st := dep.TaskGroups[r.tg.Name]
	if st == nil {
		st = &api.DeploymentState{AutoRevert: upd.AutoRevert, AutoPromote: upd.AutoPromote, DesiredCanaries: upd.Canary}
		dep.TaskGroups[r.tg.Name] = st
	}
	st.DesiredTotal = count
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
func (rc *reconciler) failDeployment(group string) {
	job, plan := rc.env.job, rc.plan
	cur, err := rc.env.st.LatestDeploymentByJobID(job.Namespace, job.ID)
	if err != nil {
		rc.env.err = err
		return
	}
	if cur == nil || !cur.Active() || cur.JobVersion != job.Version {
		return
	}
	for _, u := range plan.DeploymentUpdates {
		if u.DeploymentID == cur.ID {
			return
		}
	}
	plan.DeploymentUpdates = append(plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
		DeploymentID: cur.ID, Status: api.DeploymentStatusFailed,
		StatusDescription: "an allocation of group " + group + " is unhealthy",
	})
}

// completeDeployment marks the job version's active deployment successful
// when no group has rollout work left (busy: some group has; failed: some
// group failed already).
func (rc *reconciler) completeDeployment(busy, failed bool) {
	job, plan := rc.env.job, rc.plan
	if busy || plan.Deployment != nil || failed || job.Type != api.JobTypeService {
		return
	}
	cur, err := rc.env.st.LatestDeploymentByJobID(job.Namespace, job.ID)
	if err != nil {
		rc.env.err = err
		return
	}
	if cur == nil || !cur.Active() || cur.JobVersion != job.Version || len(plan.DeploymentUpdates) > 0 {
		return
	}
	if job.Multiregion != nil {
		// A multiregion deployment waits, blocked, for the other regions
		// (server/multiregion.go unblocks it); a pending one for its turn.
		if cur.Status == api.DeploymentStatusRunning {
			plan.DeploymentUpdates = append(plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
				DeploymentID: cur.ID, Status: api.DeploymentStatusBlocked, StatusDescription: "deployment is complete, waiting for the other regions",
			})
		}
		return
	}
	plan.DeploymentUpdates = append(plan.DeploymentUpdates, &api.DeploymentStatusUpdate{
		DeploymentID: cur.ID, Status: api.DeploymentStatusSuccessful, StatusDescription: "deployment completed successfully",
	})
}

// versionDeploymentFailed reports whether the job version's latest
// deployment failed: its rollout stays halted (no destructive updates, no
// new deployment) until another version is registered.
func (rc *reconciler) versionDeploymentFailed() bool {
	job := rc.env.job
	cur, err := rc.env.st.LatestDeploymentByJobID(job.Namespace, job.ID)
	if err != nil {
		rc.env.err = err
		return false
	}
	return cur != nil && cur.JobVersion == job.Version && cur.Status == api.DeploymentStatusFailed
}

// activeDeployment returns the job version's active deployment and whether
// the group's canaries were promoted in it.
func (rc *reconciler) activeDeployment(group string) (*api.Deployment, bool) {
	job := rc.env.job
	if d := rc.plan.Deployment; d != nil {
		st := d.TaskGroups[group]
		return d, st != nil && st.Promoted
	}
	cur, err := rc.env.st.LatestDeploymentByJobID(job.Namespace, job.ID)
	if err != nil {
		rc.env.err = err
		return nil, false
	}
	if cur == nil || !cur.Active() || cur.JobVersion != job.Version {
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
func (rc *reconciler) canaryPhase(r *groupResult, upd *api.UpdateStrategy, canaries, destructive []*api.Allocation) ([]*api.Allocation, []*placement) {
	tg, d := r.tg, &r.desired
	r.deployBusy = true
	dep := rc.deployment()
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
