package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

// Jobs is the job component: it registers, stops, evaluates and plans
// jobs and runs their verbs (dispatch, periodic force, revert, scale).
// Every write goes to the leader with the eval it calls for, in one Raft
// entry; the commit reactor hands the eval to the broker. It holds no
// state of its own and is safe for concurrent use.
type Jobs struct {
	serverCore
	region        string // a job without one gets the server's
	maxGroupCount int    // Config.JobMaxGroupCount
	// workload is the expected GPU asks the workers score against
	// (workload.go); a dry run scores as they would.
	workload *scheduler.Workload
	regions  Regions // Config.Regions: multiregion jobs (multiregion.go)
}

// RegisterJob validates and canonicalizes a job and commits it with an
// eval.
func (j *Jobs) RegisterJob(ctx context.Context, req *api.JobRegisterRequest) (*api.JobRegisterResponse, error) {
	return j.register(ctx, req, api.EvalTriggerJobRegister)
}

// register is RegisterJob with the eval's trigger.
func (j *Jobs) register(ctx context.Context, req *api.JobRegisterRequest, trigger string) (*api.JobRegisterResponse, error) {
	if req == nil || req.Job == nil {
		return nil, fmt.Errorf("register: missing job: %w", api.ErrInvalidJob)
	}
	job, err := j.prepare(req.Job)
	if err != nil {
		return nil, err
	}
	if !j.isLeader() {
		return nil, errNotLeader()
	}
	if err := registrationAllowed(j.state()); err != nil {
		return nil, err
	}
	// A multiregion job: this region registers its own copy, checked
	// before the other regions get theirs (multiregion.go).
	var multi *api.Job
	if job.Multiregion != nil && !req.RegionCopy {
		multi = job
		if job.Multiregion.Region(j.region) == nil {
			if _, err := j.registerElsewhere(ctx, req, multi); err != nil {
				return nil, err
			}
			return &api.JobRegisterResponse{Warnings: fmt.Sprintf("job %q registered in regions %s, not in %s",
				job.ID, strings.Join(job.Multiregion.Names(), ", "), j.region)}, nil
		}
		if job, err = j.prepare(multi.ForRegion(j.region)); err != nil {
			return nil, err
		}
	}
	cur, err := j.state().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.ID, err)
	}
	if err := checkNamespace(j.state(), job); err != nil {
		return nil, err
	}
	if err := checkNodePool(j.state(), job); err != nil {
		return nil, err
	}
	if err := checkQueue(j.state(), job); err != nil {
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
		if err := j.checkGroupCounts(job); err != nil {
			return nil, err
		}
	}
	if multi != nil {
		if job.Version, err = j.registerElsewhere(ctx, req, multi); err != nil {
			return nil, err
		}
	}
	now := j.clock.Now()
	job.SubmitTime = now.UnixNano()
	var eval *api.Evaluation
	if !job.IsPeriodic() && !job.IsParameterized() {
		eval = j.newJobEval(job, trigger)
	}
	idx, err := j.applyJobRegister(ctx, job, eval)
	if err != nil {
		return nil, fmt.Errorf("register job %q: %w", job.ID, err)
	}
	resp := &api.JobRegisterResponse{JobModifyIndex: idx, Index: idx}
	if stored, err := j.state().JobByID(nil, job.Namespace, job.ID); err == nil && stored != nil {
		resp.JobModifyIndex = stored.JobModifyIndex
	}
	if eval != nil {
		resp.EvalID, resp.EvalCreateIndex = eval.ID, idx
	}
	resp.Warnings = j.deviceWarnings(job)
	if w, err := queueLimitWarnings(j.state(), job); err != nil {
		j.log.Warn("read queues for limit warnings", "job", job.ID, "err", err)
	} else if len(w) > 0 {
		resp.Warnings = strings.Join(append(nonEmpty(resp.Warnings), w...), "\n")
	}
	return resp, nil
}

// nonEmpty is s as a list: none when "".
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// deviceWarnings is the answer's Warnings for device asks naming a model
// no node has (gpu_models.go); "" when none does or the nodes could not
// be read.
func (j *Jobs) deviceWarnings(job *api.Job) string {
	w, err := deviceWarnings(j.state(), job)
	if err != nil {
		j.log.Warn("read nodes for device model warnings", "job", job.ID, "err", err)
	}
	return strings.Join(w, "\n")
}

// prepare copies, canonicalizes and validates a submitted job.
func (j *Jobs) prepare(in *api.Job) (*api.Job, error) {
	job := in.Copy()
	job.Canonicalize()
	for _, tg := range job.TaskGroups {
		if tg.Count < 0 {
			return nil, fmt.Errorf("job %q group %q: count %d must not be negative: %w", job.ID, tg.Name, tg.Count, api.ErrInvalidJob)
		}
	}
	if err := j.checkGroupCounts(job); err != nil {
		return nil, err
	}
	if err := job.Validate(); err != nil {
		return nil, fmt.Errorf("job %q: %w: %w", job.ID, api.ErrInvalidJob, err)
	}
	if job.Region == "" {
		job.Region = j.region
	}
	return job, nil
}

// checkGroupCounts refuses a job with a group count above the server's
// JobMaxGroupCount (400 invalid_job), whatever the job type: every size a
// stranger controls has a bound, and the scheduler, the fair-share demand
// and the job summary all read the count.
func (j *Jobs) checkGroupCounts(job *api.Job) error {
	for _, tg := range job.TaskGroups {
		if tg.Count > j.maxGroupCount {
			return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q group %q: count %d is above the server's limit of %d (job_max_group_count)",
				job.ID, tg.Name, tg.Count, j.maxGroupCount))
		}
	}
	return nil
}

// DeregisterJob stops a job (a new version with Stop set) or purges it,
// with an eval that stops its allocations.
func (j *Jobs) DeregisterJob(ctx context.Context, ns, id string, purge bool) (*api.JobDeregisterResponse, error) {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	job, err := j.current(ns, id)
	if err != nil {
		return nil, err
	}
	var eval *api.Evaluation
	if !job.IsPeriodic() && !job.IsParameterized() {
		eval = j.newJobEval(job, api.EvalTriggerJobDeregister)
	}
	idx, err := j.applyJobDeregister(ctx, ns, id, purge, j.clock.Now().UnixNano(), eval)
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
func (j *Jobs) EvaluateJob(ctx context.Context, ns, id string) (*api.JobEvaluateResponse, error) {
	if ns == "" {
		ns = api.DefaultNamespace
	}
	job, err := j.current(ns, id)
	if err != nil {
		return nil, err
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return nil, fmt.Errorf("job %q is periodic or parameterized and cannot be evaluated: %w", id, api.ErrBadRequest)
	}
	eval := j.newJobEval(job, api.EvalTriggerJobRegister)
	eval.JobModifyIndex = job.JobModifyIndex
	idx, err := j.applyEvals(ctx, []*api.Evaluation{eval})
	if err != nil {
		return nil, fmt.Errorf("evaluate job %q: %w", id, err)
	}
	return &api.JobEvaluateResponse{EvalID: eval.ID, EvalCreateIndex: idx, JobModifyIndex: job.JobModifyIndex, Index: idx}, nil
}

// PlanJob runs the scheduler on a snapshot with the proposed job swapped
// in and reports what would change; nothing is committed.
func (j *Jobs) PlanJob(ctx context.Context, req *api.JobPlanRequest) (*api.JobPlanResponse, error) {
	if req == nil || req.Job == nil {
		return nil, fmt.Errorf("plan: missing job: %w", api.ErrInvalidJob)
	}
	job, err := j.prepare(req.Job)
	if err != nil {
		return nil, err
	}
	snap, err := j.state().Snapshot()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	cur, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", job.ID, err)
	}
	index := snap.LatestIndex()
	job.SubmitTime = j.clock.Now().UnixNano()
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
	eval := j.newJobEval(job, api.EvalTriggerJobRegister)
	eval.AnnotatePlan = true
	eval.CreateIndex, eval.ModifyIndex, eval.JobModifyIndex = index+1, index+1, index+1
	view := &plannedState{State: snap.Scheduler(), job: job}
	// The dry run schedules as the workers would: with the stored
	// preemption settings and algorithm.
	pre, algorithm := schedulerOptions(snap)
	res, err := scheduler.ScheduleContext(ctx, view, eval, scheduler.Options{Now: j.clock.Now(), Logger: j.log.With("component", "plan"),
		Preemption: &pre, Algorithm: algorithm, MaxGroupCount: j.maxGroupCount, Workload: j.workload.Shapes()})
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
	resp.Warnings = j.deviceWarnings(job)
	return resp, nil
}

// current reads a job for a write on the leader.
func (j *Jobs) current(ns, id string) (*api.Job, error) {
	if !j.isLeader() {
		return nil, errNotLeader()
	}
	job, err := j.state().JobByID(nil, ns, id)
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", id, err)
	}
	if job == nil {
		return nil, fmt.Errorf("job %q: %w", id, api.ErrJobNotFound)
	}
	return job, nil
}

// DispatchJob runs a parameterized job once: a child job (ID
// "<parent>/dispatch-<unix>-<8 hex>", Dispatched, ParentID set) with the
// payload and the meta merged into the parent's, and its eval.
func (j *Jobs) DispatchJob(ctx context.Context, ns, id string, req *api.JobDispatchRequest) (*api.JobDispatchResponse, error) {
	if req == nil {
		req = &api.JobDispatchRequest{}
	}
	if err := registrationAllowed(j.state()); err != nil {
		return nil, err
	}
	parent, err := j.current(ns, id)
	if err != nil {
		return nil, err
	}
	if !parent.IsParameterized() {
		return nil, fmt.Errorf("job %q is not a parameterized job: %w", id, api.ErrBadRequest)
	}
	if parent.Stop {
		return nil, fmt.Errorf("job %q is stopped: %w", id, api.ErrBadRequest)
	}
	if err := checkDispatch(parent.ParameterizedJob, req); err != nil {
		return nil, fmt.Errorf("dispatch job %q: %w: %w", id, api.ErrBadRequest, err)
	}
	// The child takes the parent's counts: a parent stored before the
	// bound was set or lowered launches nothing above it.
	if err := j.checkGroupCounts(parent); err != nil {
		return nil, err
	}
	now := j.clock.Now()
	suffix := strconv.FormatInt(now.Unix(), 10) + "-" + newID()[:8]
	if p := req.IdPrefixTemplate; p != "" {
		suffix = p + "-" + suffix
	}
	child := childJob(parent, parent.ID+"/dispatch-"+suffix, now)
	child.Dispatched = true
	child.Payload = slices.Clone(req.Payload)
	if len(req.Meta) > 0 {
		if child.Meta == nil {
			child.Meta = map[string]string{}
		}
		for k, v := range req.Meta {
			child.Meta[k] = v
		}
	}
	eval := j.newJobEval(child, api.EvalTriggerJobRegister)
	idx, err := j.applyJobRegister(ctx, child, eval)
	if err != nil {
		return nil, fmt.Errorf("dispatch job %q: %w", id, err)
	}
	return &api.JobDispatchResponse{DispatchedJobID: child.ID, EvalID: eval.ID, EvalCreateIndex: idx, JobCreateIndex: idx, Index: idx}, nil
}

// checkDispatch applies the parameterized block's payload and meta rules.
func checkDispatch(cfg *api.ParameterizedJobConfig, req *api.JobDispatchRequest) error {
	if p := req.IdPrefixTemplate; p != "" {
		if err := api.CheckJobID(p); err != nil { // it goes into the child's job ID
			return fmt.Errorf("invalid id_prefix_template %q: %w", p, err)
		}
	}
	if len(req.Payload) > api.DispatchPayloadSizeLimit {
		return fmt.Errorf("payload is %d bytes, more than the %d byte limit", len(req.Payload), api.DispatchPayloadSizeLimit)
	}
	switch cfg.Payload {
	case "required":
		if len(req.Payload) == 0 {
			return fmt.Errorf("the job requires a payload")
		}
	case "forbidden":
		if len(req.Payload) > 0 {
			return fmt.Errorf("the job does not allow a payload")
		}
	}
	var missing, unknown []string
	for _, k := range cfg.MetaRequired {
		if _, ok := req.Meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range req.Meta {
		if !slices.Contains(cfg.MetaRequired, k) && !slices.Contains(cfg.MetaOptional, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	switch {
	case len(missing) > 0:
		return fmt.Errorf("missing required meta: %s", strings.Join(missing, ", "))
	case len(unknown) > 0:
		return fmt.Errorf("meta not allowed by the job (neither meta_required nor meta_optional): %s", strings.Join(unknown, ", "))
	}
	return nil
}

// ForcePeriodic launches a periodic job's child now, whatever its
// schedule and prohibit_overlap say.
func (j *Jobs) ForcePeriodic(ctx context.Context, ns, id string) (*api.PeriodicForceResponse, error) {
	job, err := j.current(ns, id)
	if err != nil {
		return nil, err
	}
	if !job.IsPeriodic() || job.ParentID != "" {
		return nil, fmt.Errorf("job %q is not a periodic job: %w", id, api.ErrBadRequest)
	}
	if job.Stop {
		return nil, fmt.Errorf("job %q is stopped: %w", id, api.ErrBadRequest)
	}
	if err := j.checkGroupCounts(job); err != nil {
		return nil, err // as DispatchJob: the child would take the counts
	}
	child, eval, idx, err := j.registerPeriodicChild(ctx, job, j.clock.Now(), false)
	if err != nil {
		return nil, err
	}
	return &api.PeriodicForceResponse{EvalID: eval.ID, EvalCreateIndex: idx, Index: idx, DispatchedJobID: child.ID}, nil
}

// RevertJob registers version req.JobVersion of a job again (as a new
// version).
func (j *Jobs) RevertJob(ctx context.Context, ns, id string, req *api.JobRevertRequest) (*api.JobRegisterResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("revert job %q: missing request: %w", id, api.ErrBadRequest)
	}
	cur, err := j.current(ns, id)
	if err != nil {
		return nil, err
	}
	if p := req.EnforcePriorVersion; p != nil && *p != cur.Version {
		return nil, fmt.Errorf("job %q is at version %d, not %d: %w", id, cur.Version, *p, api.ErrIndexConflict)
	}
	if req.JobVersion == cur.Version {
		return nil, fmt.Errorf("job %q is already at version %d: %w", id, cur.Version, api.ErrBadRequest)
	}
	versions, err := j.state().JobVersionsByID(nil, ns, id)
	if err != nil {
		return nil, fmt.Errorf("versions of job %q: %w", id, err)
	}
	for _, v := range versions {
		if v.Version == req.JobVersion {
			old := v.Copy()
			old.Stable = false
			return j.register(ctx, &api.JobRegisterRequest{Job: old}, api.EvalTriggerJobRegister)
		}
	}
	return nil, fmt.Errorf("job %q has no version %d: %w", id, req.JobVersion, api.ErrBadRequest)
}

// ScaleJob sets one group's count (a new job version, eval triggered by
// job-scaling).
func (j *Jobs) ScaleJob(ctx context.Context, ns, id string, req *api.JobScaleRequest) (*api.JobRegisterResponse, error) {
	if req == nil || req.Target["Group"] == "" {
		return nil, fmt.Errorf("scale job %q: Target.Group is required: %w", id, api.ErrBadRequest)
	}
	if req.Count == nil {
		return nil, fmt.Errorf("scale job %q: Count is required: %w", id, api.ErrBadRequest)
	}
	if *req.Count < 0 {
		return nil, fmt.Errorf("scale job %q: count %d must not be negative: %w", id, *req.Count, api.ErrBadRequest)
	}
	cur, err := j.current(ns, id)
	if err != nil {
		return nil, err
	}
	if cur.Type == api.JobTypeSystem || cur.Type == api.JobTypeSysBatch {
		return nil, fmt.Errorf("job %q is a %s job: it runs on every node and cannot be scaled: %w", id, cur.Type, api.ErrBadRequest)
	}
	if cur.Stop {
		return nil, fmt.Errorf("job %q is stopped: %w", id, api.ErrBadRequest)
	}
	scaled := cur.Copy()
	tg := scaled.LookupTaskGroup(req.Target["Group"])
	if tg == nil {
		return nil, fmt.Errorf("job %q has no group %q: %w", id, req.Target["Group"], api.ErrBadRequest)
	}
	if sp := tg.Scaling; sp != nil && (*req.Count < sp.Min || *req.Count > sp.Max) {
		return nil, fmt.Errorf("scale job %q group %q: count %d is outside its scaling policy's [min %d, max %d]: %w",
			id, tg.Name, *req.Count, sp.Min, sp.Max, api.ErrBadRequest)
	}
	if *req.Count > int64(j.maxGroupCount) {
		// Checked before the conversion to int (register checks the
		// other groups).
		return nil, api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q group %q: count %d is above the server's limit of %d (job_max_group_count)",
			id, tg.Name, *req.Count, j.maxGroupCount))
	}
	tg.Count = int(*req.Count)
	return j.register(ctx, &api.JobRegisterRequest{Job: scaled}, api.EvalTriggerJobScaling)
}

// JobDiff compares two versions of a job (either may be nil) as the plan
// endpoint does: GET /v1/job/{id}/versions?diffs=true uses it for the diff
// of each version against the one before. It is pure and safe for
// concurrent use.
func (j *Jobs) JobDiff(old, new *api.Job) *api.JobDiff { return jobDiff(old, new) }

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
