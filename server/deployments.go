package server

import (
	"context"
	"fmt"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// Deployments is the component of an operator's deployment writes:
// promote canaries, fail (with auto_revert), pause and resume. The
// deployment watcher duty (deploymentwatcher.go) makes the automatic
// ones. It is safe for concurrent use.
type Deployments struct{ serverCore }

// PromoteDeployment promotes the canaries of groups (none or "*": every
// group with canaries) of an active deployment and creates an eval so
// the rollout continues. Every canary of a promoted group must be
// healthy (api.ErrConflict otherwise).
func (dp *Deployments) PromoteDeployment(ctx context.Context, id string, groups []string) (*api.DeploymentUpdateResponse, error) {
	d, job, err := dp.active(id)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		groups = []string{"*"}
	}
	allocs, err := dp.state().AllocsByDeployment(nil, d.ID)
	if err != nil {
		return nil, err
	}
	for name, g := range d.TaskGroups {
		if !promoteGroup(groups, name) || g.DesiredCanaries == 0 {
			continue
		}
		healthy := 0
		for _, a := range allocs {
			if a.TaskGroup == name && a.DeploymentStatus != nil && a.DeploymentStatus.Canary &&
				a.DeploymentStatus.Healthy != nil && *a.DeploymentStatus.Healthy {
				healthy++
			}
		}
		if healthy < g.DesiredCanaries {
			return nil, fmt.Errorf("deployment %s group %q: %d of %d canaries healthy: %w",
				d.ID, name, healthy, g.DesiredCanaries, api.Errorf(api.ErrConflict, "canaries are not all healthy"))
		}
	}
	for _, g := range groups {
		if g != "*" && d.TaskGroups[g] == nil {
			return nil, fmt.Errorf("deployment %s has no group %q: %w", d.ID, g, api.ErrBadRequest)
		}
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, PromoteGroups: groups, Time: dp.clock.Now()}
	req.RequireProgressBy = renewProgress(job, req.Time)
	return dp.write(ctx, req, job)
}

func promoteGroup(groups []string, name string) bool {
	for _, g := range groups {
		if g == "*" || g == name {
			return true
		}
	}
	return false
}

// FailDeployment marks an active deployment failed (with auto_revert, the
// latest stable job version is registered again).
func (dp *Deployments) FailDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error) {
	d, job, err := dp.active(id)
	if err != nil {
		return nil, err
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, Time: dp.clock.Now(),
		Status: api.DeploymentStatusFailed, StatusDescription: "deployment marked as failed by the operator"}
	if err := dp.autoRevert(dp.state(), d, job, req); err != nil {
		return nil, err
	}
	return dp.write(ctx, req, nil)
}

// PauseDeployment pauses (pause true) or resumes an active deployment: a
// paused deployment gets no health verdicts and no evals from the watcher.
func (dp *Deployments) PauseDeployment(ctx context.Context, id string, pause bool) (*api.DeploymentUpdateResponse, error) {
	d, job, err := dp.active(id)
	if err != nil {
		return nil, err
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, Time: dp.clock.Now(),
		Status: api.DeploymentStatusPaused, StatusDescription: "deployment is paused"}
	if !pause {
		req.Status, req.StatusDescription = api.DeploymentStatusRunning, "deployment is running"
		req.RequireProgressBy = renewProgress(job, req.Time)
		return dp.write(ctx, req, job)
	}
	return dp.write(ctx, req, nil)
}

// renewProgress is a fresh progress deadline (UnixNano) from now for a
// rollout the operator moved on (promotion, resume); 0 without one.
func renewProgress(job *api.Job, now time.Time) int64 {
	if job == nil {
		return 0
	}
	var pd time.Duration
	for _, tg := range job.TaskGroups {
		u := tg.Update
		if u == nil {
			u = job.Update
		}
		if u != nil && u.ProgressDeadline > pd {
			pd = u.ProgressDeadline
		}
	}
	if pd <= 0 {
		return 0
	}
	return now.Add(pd).UnixNano()
}

// active finds an active deployment by ID and its job.
func (dp *Deployments) active(id string) (*api.Deployment, *api.Job, error) {
	if !dp.isLeader() {
		return nil, nil, errNotLeader()
	}
	st := dp.state()
	d, err := st.DeploymentByID(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		return nil, nil, fmt.Errorf("deployment %q: %w", id, api.ErrDeploymentNotFound)
	}
	if !d.Active() {
		return nil, nil, fmt.Errorf("deployment %s is %s: %w", d.ID, d.Status,
			api.Errorf(api.ErrConflict, "deployment is not active"))
	}
	job, err := st.JobByID(nil, d.Namespace, d.JobID)
	if err != nil {
		return nil, nil, err
	}
	return d, job, nil
}

// write commits an operator's deployment update, with an eval
// for job when set.
func (dp *Deployments) write(ctx context.Context, req *state.DeploymentUpdateRequest, job *api.Job) (*api.DeploymentUpdateResponse, error) {
	if job != nil && !job.Stop {
		e := dp.newJobEval(job, api.EvalTriggerDeploymentWatcher)
		e.DeploymentID = req.DeploymentID
		req.Evals = append(req.Evals, e)
	}
	idx, err := dp.apply(ctx, fsm.DeploymentUpdateType, req)
	if err != nil {
		return nil, fmt.Errorf("update deployment %s: %w", req.DeploymentID, err)
	}
	resp := &api.DeploymentUpdateResponse{DeploymentModifyIndex: idx, Index: idx}
	for _, e := range req.Evals {
		resp.EvalID, resp.EvalCreateIndex = e.ID, idx
	}
	if req.Job != nil {
		resp.RevertedJobVersion = &req.Job.Version
	}
	return resp, nil
}
