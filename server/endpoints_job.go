package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

// RegisterJob validates and canonicalizes a job and commits it with an
// eval.
func (s *Server) RegisterJob(ctx context.Context, req *api.JobRegisterRequest) (*api.JobRegisterResponse, error) {
	return s.registerJob(ctx, req, api.EvalTriggerJobRegister)
}

// registerJob is RegisterJob with the eval's trigger.
func (s *Server) registerJob(ctx context.Context, req *api.JobRegisterRequest, trigger string) (*api.JobRegisterResponse, error) {
	if req == nil || req.Job == nil {
		return nil, fmt.Errorf("register: missing job: %w", api.ErrInvalidJob)
	}
	job, err := s.prepareJob(req.Job)
	if err != nil {
		return nil, err
	}
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	if err := s.registrationAllowed(); err != nil {
		return nil, err
	}
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.ID, err)
	}
	if err := s.checkNamespace(job); err != nil {
		return nil, err
	}
	if err := s.checkNodePool(job); err != nil {
		return nil, err
	}
	if err := s.checkQueue(job); err != nil {
		return nil, err
	}
	if req.EnforceIndex {
		var have uint64
		if cur != nil {
			have = cur.JobModifyIndex
		}
		if have != req.JobModifyIndex {
			return nil, fmt.Errorf("job %q: modify index is %d, request expected %d: %w",
				job.ID, have, req.JobModifyIndex, api.ErrIndexConflict)
		}
	}
	if req.PreserveCounts && cur != nil {
		for _, tg := range job.TaskGroups {
			if old := cur.LookupTaskGroup(tg.Name); old != nil {
				tg.Count = old.Count
			}
		}
		// A count stored before the bound was set or lowered is not
		// carried into a new version.
		if err := s.checkGroupCounts(job); err != nil {
			return nil, err
		}
	}
	now := s.clock.Now()
	job.SubmitTime = now.UnixNano()
	var eval *api.Evaluation
	if !job.IsPeriodic() && !job.IsParameterized() {
		eval = s.newJobEval(job, trigger)
	}
	idx, err := s.applyJobRegister(ctx, job, eval)
	if err != nil {
		return nil, fmt.Errorf("register job %q: %w", job.ID, err)
	}
	resp := &api.JobRegisterResponse{JobModifyIndex: idx, Index: idx}
	if stored, err := s.State().JobByID(nil, job.Namespace, job.ID); err == nil && stored != nil {
		resp.JobModifyIndex = stored.JobModifyIndex
	}
	if eval != nil {
		resp.EvalID, resp.EvalCreateIndex = eval.ID, idx
	}
	return resp, nil
}

// prepareJob copies, canonicalizes and validates a submitted job.
func (s *Server) prepareJob(in *api.Job) (*api.Job, error) {
	job := in.Copy()
	job.Canonicalize()
	for _, tg := range job.TaskGroups {
		if tg.Count < 0 {
			return nil, fmt.Errorf("job %q group %q: count %d must not be negative: %w", job.ID, tg.Name, tg.Count, api.ErrInvalidJob)
		}
	}
	if err := s.checkGroupCounts(job); err != nil {
		return nil, err
	}
	if err := job.Validate(); err != nil {
		return nil, fmt.Errorf("job %q: %w: %w", job.ID, api.ErrInvalidJob, err)
	}
	if job.Region == "" {
		job.Region = s.cfg.Region
	}
	return job, nil
}

// checkGroupCounts refuses a job with a group count above the server's
// JobMaxGroupCount (400 invalid_job), whatever the job type: every size a
// stranger controls has a bound, and the scheduler, the fair-share demand
// and the job summary all read the count.
func (s *Server) checkGroupCounts(job *api.Job) error {
	for _, tg := range job.TaskGroups {
		if tg.Count > s.cfg.JobMaxGroupCount {
			return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q group %q: count %d is above the server's limit of %d (job_max_group_count)",
				job.ID, tg.Name, tg.Count, s.cfg.JobMaxGroupCount))
		}
	}
	return nil
}

// DeregisterJob stops a job (a new version with Stop set) or purges it,
// with an eval that stops its allocations.
func (s *Server) DeregisterJob(ctx context.Context, ns, id string, purge bool) (*api.JobDeregisterResponse, error) {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	job, err := s.currentJob(ns, id)
	if err != nil {
		return nil, err
	}
	var eval *api.Evaluation
	if !job.IsPeriodic() && !job.IsParameterized() {
		eval = s.newJobEval(job, api.EvalTriggerJobDeregister)
	}
	idx, err := s.applyJobDeregister(ctx, ns, id, purge, s.clock.Now().UnixNano(), eval)
	if err != nil {
		return nil, fmt.Errorf("deregister job %q: %w", id, err)
	}
	resp := &api.JobDeregisterResponse{JobModifyIndex: idx, Index: idx}
	if eval != nil {
		resp.EvalID, resp.EvalCreateIndex = eval.ID, idx
	}
	return resp, nil
}

// EvaluateJob creates a new eval for a registered job.
func (s *Server) EvaluateJob(ctx context.Context, ns, id string) (*api.JobEvaluateResponse, error) {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	job, err := s.currentJob(ns, id)
	if err != nil {
		return nil, err
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return nil, fmt.Errorf("job %q is periodic or parameterized and cannot be evaluated: %w", id, api.ErrBadRequest)
	}
	eval := s.newJobEval(job, api.EvalTriggerJobRegister)
	eval.JobModifyIndex = job.JobModifyIndex
	idx, err := s.applyEvals(ctx, []*api.Evaluation{eval})
	if err != nil {
		return nil, fmt.Errorf("evaluate job %q: %w", id, err)
	}
	return &api.JobEvaluateResponse{EvalID: eval.ID, EvalCreateIndex: idx, JobModifyIndex: job.JobModifyIndex, Index: idx}, nil
}

// PlanJob runs the scheduler on a snapshot with the proposed job swapped
// in and reports what would change; nothing is committed.
func (s *Server) PlanJob(ctx context.Context, req *api.JobPlanRequest) (*api.JobPlanResponse, error) {
	if req == nil || req.Job == nil {
		return nil, fmt.Errorf("plan: missing job: %w", api.ErrInvalidJob)
	}
	job, err := s.prepareJob(req.Job)
	if err != nil {
		return nil, err
	}
	snap, err := s.State().Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	cur, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.ID, err)
	}
	index := snap.LatestIndex()
	job.SubmitTime = s.clock.Now().UnixNano()
	job.ModifyIndex, job.JobModifyIndex = index+1, index+1
	switch {
	case cur != nil && !cur.SpecChanged(job):
		// Registering it would keep the version: the scheduler sees the
		// job it already placed, and plans Ignore.
		job.Version, job.CreateIndex, job.JobModifyIndex = cur.Version, cur.CreateIndex, cur.JobModifyIndex
	case cur != nil:
		job.Version, job.CreateIndex = cur.Version+1, cur.CreateIndex
	default:
		job.CreateIndex = index + 1
	}
	job.Status = api.JobStatusPending
	eval := s.newJobEval(job, api.EvalTriggerJobRegister)
	eval.AnnotatePlan = true
	eval.CreateIndex, eval.ModifyIndex, eval.JobModifyIndex = index+1, index+1, index+1
	view := &plannedState{State: snap.Scheduler(), job: job}
	// The dry run schedules as the workers would: with the stored
	// preemption settings and algorithm.
	pre, algorithm := schedulerOptions(snap)
	res, err := scheduler.ScheduleContext(ctx, view, eval, scheduler.Options{Now: s.clock.Now(), Logger: s.log.With("component", "plan"),
		Preemption: &pre, Algorithm: algorithm, MaxGroupCount: s.cfg.JobMaxGroupCount})
	if err != nil {
		return nil, fmt.Errorf("plan job %q: %w", job.ID, err)
	}
	resp := &api.JobPlanResponse{}
	if cur != nil {
		resp.JobModifyIndex = cur.JobModifyIndex
	}
	if res.Plan != nil {
		resp.Annotations = res.Plan.Annotations
	}
	if res.Eval != nil {
		resp.FailedTGAllocs = res.Eval.FailedTGAllocs
	}
	if req.Diff {
		resp.Diff = jobDiff(cur, job)
	}
	return resp, nil
}

// plannedState is a scheduler view with a proposed job in place of the
// registered one.
type plannedState struct {
	scheduler.State
	job *api.Job
}

func (p *plannedState) JobByID(ns, id string) (*api.Job, error) {
	if ns == p.job.Namespace && id == p.job.ID {
		return p.job, nil
	}
	return p.State.JobByID(ns, id)
}

var _ scheduler.State = (*plannedState)(nil)
