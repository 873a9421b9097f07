package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// The deployment watcher is a leader duty. It judges the health of the
// allocs of every active deployment, writes the verdicts (and the
// deployment's counters) through Raft, and creates a deployment-watcher
// eval whenever an alloc becomes healthy so the scheduler places the next
// batch of a rolling update. It fails a deployment on an unhealthy alloc
// or a missed progress deadline (re-registering the latest stable job
// version when the group asks for auto_revert), and marks a job version
// stable once the scheduler has marked its deployment successful.
//
// Health (update.health_check "task_states" and "checks"): an alloc is
// healthy once every task that is not poststop or an ephemeral
// pre/poststart hook has run for min_healthy_time without a restart,
// counting from the latest task StartedAt/LastRestart the client reported
// (client time: clocks are assumed roughly in sync); with "checks" (the
// default) each of its native services with checks (on_update not
// "ignore") must also be registered and passing ("ignore_warnings": or
// warning), the time counting from the latest health change too. It is
// unhealthy when a task fails or restarts
// first (a task that started and no longer runs counts: exited or
// waiting to restart), the alloc fails, completes or is lost, or
// healthy_deadline passes after the alloc was created (leader time).
// "manual" allocs get no verdict from the watcher (the scheduler counts
// them healthy once running).
//
// Woken by memdb watches on the deployments table and the allocs of each
// active deployment, and by one clock timer for the next due verdict or
// deadline; it never polls.

// deploymentWatchRetry is how long the watcher waits after a failed write.
const deploymentWatchRetry = time.Second

// Alloc health verdicts of the watcher.
type healthVerdict int

const (
	verdictPending healthVerdict = iota
	verdictHealthy
	verdictUnhealthy
)

// deploymentWatcher is the leader's deployment watcher: it judges the
// health of a deployment's allocs, marks deployments successful or failed
// (with auto_revert), records stable job versions and asks for the next
// rollout step with an eval.
type deploymentWatcher struct{ serverCore }

// Run watches until ctx ends (leadership lost).
func (w *deploymentWatcher) Run(ctx context.Context) {
	log := w.log
	for {
		st := w.state()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		next, err := w.watchDeployments(ctx, st, ws)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn("deployment watcher pass failed", "err", err)
			if r := w.clock.Now().Add(deploymentWatchRetry); next.IsZero() || r.Before(next) {
				next = r
			}
		}
		wctx, cancel := context.WithCancel(ctx)
		var timer interface{ Stop() bool }
		if !next.IsZero() {
			timer = w.clock.AtFunc(next, cancel)
		}
		_ = ws.WatchCtx(wctx) // a change, the timer or the end of leadership
		cancel()
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// watchDeployments is one pass over every deployment. It returns when the
// next verdict or deadline is due (zero: nothing timed).
func (w *deploymentWatcher) watchDeployments(ctx context.Context, st *state.StateStore, ws memdb.WatchSet) (time.Time, error) {
	deps, err := st.Deployments(ws, state.AllNamespaces, "")
	if err != nil {
		return time.Time{}, fmt.Errorf("list deployments: %w", err)
	}
	var next time.Time
	var firstErr error
	for _, d := range deps {
		var at time.Time
		switch {
		case d.Active():
			at, err = w.watchDeployment(ctx, st, ws, d)
		case d.Status == api.DeploymentStatusSuccessful:
			err = w.markStable(ctx, st, d)
		case d.Status == api.DeploymentStatusFailed:
			err = w.revertFailed(ctx, st, d)
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("deployment %s: %w", d.ID, err)
		}
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, firstErr
}

// markStable marks the job version of a successful deployment stable.
func (w *deploymentWatcher) markStable(ctx context.Context, st *state.StateStore, d *api.Deployment) error {
	v, err := st.JobVersionByID(nil, d.Namespace, d.JobID, d.JobVersion)
	if err != nil || v == nil || v.Stable {
		return err
	}
	ver := d.JobVersion
	_, err = w.apply(ctx, fsm.DeploymentUpdateType, &state.DeploymentUpdateRequest{DeploymentID: d.ID, StableVersion: &ver})
	return err
}

// watchDeployment judges one active deployment's allocs and writes what
// changed.
func (w *deploymentWatcher) watchDeployment(ctx context.Context, st *state.StateStore, ws memdb.WatchSet, d *api.Deployment) (time.Time, error) {
	// The job is watched too: a stop or purge ends its deployment.
	job, err := st.JobByID(ws, d.Namespace, d.JobID)
	if err != nil {
		return time.Time{}, err
	}
	if why := jobGone(d, job); why != "" {
		_, err := w.apply(ctx, fsm.DeploymentUpdateType, &state.DeploymentUpdateRequest{DeploymentID: d.ID,
			Time: w.clock.Now(), Status: api.DeploymentStatusCancelled, StatusDescription: why})
		return time.Time{}, err
	}
	allocs, err := st.AllocsByDeployment(ws, d.ID)
	if err != nil {
		return time.Time{}, err
	}
	if d.Status != api.DeploymentStatusRunning {
		return time.Time{}, nil // paused or blocked: nothing moves
	}
	now := w.clock.Now()
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, Time: now}
	var progressDeadline time.Duration
	var start time.Time // the deployment's first alloc, for the first progress deadline
	unhealthyGroup := ""
	for _, a := range allocs {
		upd := allocUpdate(a)
		if upd != nil && upd.ProgressDeadline > progressDeadline {
			progressDeadline = upd.ProgressDeadline
		}
		if ct := time.Unix(0, a.CreateTime); start.IsZero() || ct.Before(start) {
			start = ct
		}
		if ds := a.DeploymentStatus; ds != nil && ds.Healthy != nil {
			continue
		}
		if a.DesiredStatus != api.AllocDesiredStatusRun || upd == nil || upd.HealthCheck == "manual" {
			continue
		}
		var regs []*api.ServiceRegistration
		if upd.HealthCheck == "checks" {
			if regs, err = st.ServicesByAlloc(ws, a.ID); err != nil {
				return time.Time{}, err
			}
		}
		v, at := judgeAlloc(a, upd, now, regs)
		switch v {
		case verdictHealthy:
			req.HealthyAllocs = append(req.HealthyAllocs, a.ID)
		case verdictUnhealthy:
			req.UnhealthyAllocs = append(req.UnhealthyAllocs, a.ID)
			unhealthyGroup = a.TaskGroup
		default:
			soonest(at)
		}
	}
	if len(req.HealthyAllocs) > 0 && progressDeadline > 0 {
		req.RequireProgressBy = now.Add(progressDeadline).UnixNano()
	}
	failed := ""
	switch {
	case len(req.UnhealthyAllocs) > 0:
		failed = "failed due to an unhealthy allocation in group " + unhealthyGroup
	case progressDeadline > 0 && len(req.HealthyAllocs) == 0 && !awaitingPromotion(d) && len(allocs) > 0:
		by := start.Add(progressDeadline)
		for _, g := range d.TaskGroups {
			if g.RequireProgressBy != 0 {
				by = time.Unix(0, g.RequireProgressBy)
			}
		}
		if !now.Before(by) {
			failed = "failed due to progress deadline"
		} else {
			soonest(by)
		}
	}
	if failed != "" {
		req.Status, req.StatusDescription = api.DeploymentStatusFailed, failed
		if err := w.autoRevert(st, d, job, req); err != nil {
			return time.Time{}, err
		}
	} else if len(req.HealthyAllocs) > 0 && job != nil && !job.Stop {
		e := w.newJobEval(job, api.EvalTriggerDeploymentWatcher)
		e.DeploymentID = d.ID
		req.Evals = append(req.Evals, e)
	}
	if len(req.HealthyAllocs) == 0 && req.Status == "" {
		return next, nil
	}
	if _, err := w.apply(ctx, fsm.DeploymentUpdateType, req); err != nil {
		return next, err
	}
	return next, nil
}

// jobGone is why an active deployment ends with its job: the job was
// purged (or purged and registered again: another CreateIndex) or
// stopped; "" while the job lives. Nothing else would end it, as the
// scheduler no longer evaluates the deployment's version.
func jobGone(d *api.Deployment, job *api.Job) string {
	switch {
	case job == nil || (d.JobCreateIndex != 0 && job.CreateIndex != d.JobCreateIndex):
		return "cancelled because the job was purged"
	case job.Stop:
		return "cancelled because the job was stopped"
	}
	return ""
}

// revertFailed handles a deployment the scheduler failed (an unhealthy
// alloc it saw first): its unhealthy allocs get their verdict and, with
// auto_revert, the latest stable version is registered again. It writes
// only when it reverts, and the revert moves the job off the failed
// version, so it acts once.
func (w *deploymentWatcher) revertFailed(ctx context.Context, st *state.StateStore, d *api.Deployment) error {
	job, err := st.JobByID(nil, d.Namespace, d.JobID)
	if err != nil || job == nil || job.Stop || job.Version != d.JobVersion {
		return err
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, Time: w.clock.Now(),
		Status: d.Status, StatusDescription: d.StatusDescription}
	if err := w.autoRevert(st, d, job, req); err != nil || req.Job == nil {
		return err
	}
	allocs, err := st.AllocsByDeployment(nil, d.ID)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		upd := allocUpdate(a)
		if ds := a.DeploymentStatus; (ds != nil && ds.Healthy != nil) || upd == nil || upd.HealthCheck == "manual" {
			continue
		}
		if v, _ := judgeAlloc(a, upd, req.Time, nil); v == verdictUnhealthy {
			req.UnhealthyAllocs = append(req.UnhealthyAllocs, a.ID)
		}
	}
	if _, err := w.apply(ctx, fsm.DeploymentUpdateType, req); err != nil {
		return err
	}
	return nil
}

// autoRevert adds to a failing deployment's update the re-registration of
// the job's latest stable version before the deployment's, when a group
// of the deployment asks for auto_revert and the job is still at the
// deployment's version.
func (c *serverCore) autoRevert(st *state.StateStore, d *api.Deployment, job *api.Job, req *state.DeploymentUpdateRequest) error {
	revert := false
	for _, g := range d.TaskGroups {
		revert = revert || g.AutoRevert
	}
	if !revert || job == nil || job.Stop || job.Version != d.JobVersion {
		return nil
	}
	versions, err := st.JobVersionsByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return err
	}
	for _, v := range versions { // newest first
		if v.Version >= d.JobVersion || !v.Stable {
			continue
		}
		j := v.Copy()
		j.Stable = false
		j.Multiregion = nil // a rollback is this region's own: it deploys at once (multiregion.go)
		j.SubmitTime = c.clock.Now().UnixNano()
		req.Job = j
		req.StatusDescription += fmt.Sprintf(" - rolling back to job version %d", v.Version)
		req.Evals = append(req.Evals, c.newJobEval(j, api.EvalTriggerDeploymentWatcher))
		return nil
	}
	req.StatusDescription += " - no stable job version to auto revert to"
	return nil
}

// awaitingPromotion reports whether a group waits for its canaries to be
// promoted (no progress deadline applies meanwhile).
func awaitingPromotion(d *api.Deployment) bool {
	for _, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted {
			return true
		}
	}
	return false
}

// allocUpdate returns the update strategy of the alloc's group, or nil.
func allocUpdate(a *api.Allocation) *api.UpdateStrategy {
	if a.Job == nil {
		return nil
	}
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.Update != nil {
		return tg.Update
	}
	return a.Job.Update
}

// judgeAlloc decides an alloc's health at now; a pending verdict comes
// with the time it can change by itself (zero: only a client update).
func judgeAlloc(a *api.Allocation, upd *api.UpdateStrategy, now time.Time, regs []*api.ServiceRegistration) (healthVerdict, time.Time) {
	switch a.ClientStatus {
	case api.AllocClientStatusFailed, api.AllocClientStatusLost, api.AllocClientStatusComplete:
		return verdictUnhealthy, time.Time{}
	}
	var deadline time.Time
	if upd.HealthyDeadline > 0 {
		deadline = time.Unix(0, a.CreateTime).Add(upd.HealthyDeadline)
	}
	var tg *api.TaskGroup
	if a.Job != nil {
		tg = a.Job.LookupTaskGroup(a.TaskGroup)
	}
	if tg == nil {
		return verdictPending, deadline
	}
	running := a.ClientStatus == api.AllocClientStatusRunning
	var since time.Time
	for _, t := range tg.Tasks {
		lc := t.Lifecycle
		if lc != nil && lc.Hook == api.TaskLifecycleHookPoststop {
			continue
		}
		ts := a.TaskStates[t.Name]
		if ts != nil && (ts.Failed || ts.Restarts > 0) {
			return verdictUnhealthy, time.Time{}
		}
		if lc != nil && !lc.Sidecar {
			continue // an ephemeral hook only has to not fail
		}
		if ts != nil && ts.State != api.TaskStateRunning && !ts.StartedAt.IsZero() {
			return verdictUnhealthy, time.Time{} // it ran and stopped (exited, restarting)
		}
		if ts == nil || ts.State != api.TaskStateRunning {
			running = false
			continue
		}
		for _, t := range []time.Time{ts.StartedAt, ts.LastRestart} {
			if t.After(since) {
				since = t
			}
		}
	}
	if running && upd.HealthCheck == "checks" {
		at, ok := checksPassing(a, tg, regs)
		running = ok
		if at.After(since) {
			since = at
		}
	}
	if running {
		healthyAt := since.Add(upd.MinHealthyTime)
		if !now.Before(healthyAt) {
			return verdictHealthy, time.Time{}
		}
		if deadline.IsZero() || healthyAt.Before(deadline) {
			return verdictPending, healthyAt
		}
	}
	if !deadline.IsZero() && !now.Before(deadline) {
		return verdictUnhealthy, time.Time{}
	}
	return verdictPending, deadline
}

// checksPassing reports whether every native service of the alloc that
// has checks counting for deployments is registered with a good enough
// health, and since when (its latest health change).
func checksPassing(a *api.Allocation, tg *api.TaskGroup, regs []*api.ServiceRegistration) (time.Time, bool) {
	var since time.Time
	check := func(svc *api.Service, task string) bool {
		if svc == nil || len(svc.Checks) == 0 || (svc.Provider != "" && svc.Provider != api.ServiceProviderNomad && svc.Provider != "drover") {
			return true
		}
		mode := api.OnUpdateIgnore // the strictest of its checks
		for _, c := range svc.Checks {
			switch {
			case c.OnUpdate == "" || c.OnUpdate == api.OnUpdateRequireHealthy:
				mode = api.OnUpdateRequireHealthy
			case c.OnUpdate == api.OnUpdateIgnoreWarnings && mode == api.OnUpdateIgnore:
				mode = api.OnUpdateIgnoreWarnings
			}
		}
		if mode == api.OnUpdateIgnore {
			return true
		}
		name := api.ServiceName(svc, a.JobID, tg.Name, task)
		prefix := strings.TrimSuffix(api.ServiceRegistrationID(a.ID, tg.Name, task, "", ""), "-")
		for _, r := range regs {
			// A name with ${...} is interpolated by the client: match its
			// owner and port instead of the whole ID.
			if r.ID != api.ServiceRegistrationID(a.ID, tg.Name, task, name, svc.PortLabel) &&
				(!strings.Contains(name, "${") || !strings.HasPrefix(r.ID, prefix) || !strings.HasSuffix(r.ID, "-"+svc.PortLabel)) {
				continue
			}
			if r.Health != api.ServiceHealthPassing && (r.Health != api.ServiceHealthWarning || mode != api.OnUpdateIgnoreWarnings) {
				return false
			}
			if t := time.Unix(0, r.HealthTime); r.HealthTime != 0 && t.After(since) {
				since = t
			}
			return true
		}
		return false
	}
	for _, svc := range tg.Services {
		if !check(svc, "") {
			return time.Time{}, false
		}
	}
	for _, t := range tg.Tasks {
		for _, svc := range t.Services {
			if !check(svc, t.Name) {
				return time.Time{}, false
			}
		}
	}
	return since, true
}
