package server

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// currentJob reads a job for a write on the leader.
func (s *Server) currentJob(ns, id string) (*api.Job, error) {
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	job, err := s.State().JobByID(nil, ns, id)
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
func (s *Server) DispatchJob(ctx context.Context, ns, id string, req *api.JobDispatchRequest) (*api.JobDispatchResponse, error) {
	if req == nil {
		req = &api.JobDispatchRequest{}
	}
	if err := s.registrationAllowed(); err != nil {
		return nil, err
	}
	parent, err := s.currentJob(ns, id)
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
	if err := s.checkGroupCounts(parent); err != nil {
		return nil, err
	}
	now := s.clock.Now()
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
	eval := s.newJobEval(child, api.EvalTriggerJobRegister)
	idx, err := s.applyJobRegister(ctx, child, eval)
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
func (s *Server) ForcePeriodic(ctx context.Context, ns, id string) (*api.PeriodicForceResponse, error) {
	job, err := s.currentJob(ns, id)
	if err != nil {
		return nil, err
	}
	if !job.IsPeriodic() || job.ParentID != "" {
		return nil, fmt.Errorf("job %q is not a periodic job: %w", id, api.ErrBadRequest)
	}
	if job.Stop {
		return nil, fmt.Errorf("job %q is stopped: %w", id, api.ErrBadRequest)
	}
	if err := s.checkGroupCounts(job); err != nil {
		return nil, err // as DispatchJob: the child would take the counts
	}
	child, eval, idx, err := s.registerPeriodicChild(ctx, job, s.clock.Now(), false)
	if err != nil {
		return nil, err
	}
	return &api.PeriodicForceResponse{EvalID: eval.ID, EvalCreateIndex: idx, Index: idx, DispatchedJobID: child.ID}, nil
}

// RevertJob registers version req.JobVersion of a job again (as a new
// version).
func (s *Server) RevertJob(ctx context.Context, ns, id string, req *api.JobRevertRequest) (*api.JobRegisterResponse, error) {
	if req == nil {
		return nil, fmt.Errorf("revert job %q: missing request: %w", id, api.ErrBadRequest)
	}
	cur, err := s.currentJob(ns, id)
	if err != nil {
		return nil, err
	}
	if p := req.EnforcePriorVersion; p != nil && *p != cur.Version {
		return nil, fmt.Errorf("job %q is at version %d, not %d: %w", id, cur.Version, *p, api.ErrIndexConflict)
	}
	if req.JobVersion == cur.Version {
		return nil, fmt.Errorf("job %q is already at version %d: %w", id, cur.Version, api.ErrBadRequest)
	}
	versions, err := s.State().JobVersionsByID(nil, ns, id)
	if err != nil {
		return nil, fmt.Errorf("versions of job %q: %w", id, err)
	}
	for _, v := range versions {
		if v.Version == req.JobVersion {
			j := v.Copy()
			j.Stable = false
			return s.registerJob(ctx, &api.JobRegisterRequest{Job: j}, api.EvalTriggerJobRegister)
		}
	}
	return nil, fmt.Errorf("job %q has no version %d: %w", id, req.JobVersion, api.ErrBadRequest)
}

// ScaleJob sets one group's count (a new job version, eval triggered by
// job-scaling).
func (s *Server) ScaleJob(ctx context.Context, ns, id string, req *api.JobScaleRequest) (*api.JobRegisterResponse, error) {
	if req == nil || req.Target["Group"] == "" {
		return nil, fmt.Errorf("scale job %q: Target.Group is required: %w", id, api.ErrBadRequest)
	}
	if req.Count == nil {
		return nil, fmt.Errorf("scale job %q: Count is required: %w", id, api.ErrBadRequest)
	}
	if *req.Count < 0 {
		return nil, fmt.Errorf("scale job %q: count %d must not be negative: %w", id, *req.Count, api.ErrBadRequest)
	}
	cur, err := s.currentJob(ns, id)
	if err != nil {
		return nil, err
	}
	if cur.Type == api.JobTypeSystem || cur.Type == api.JobTypeSysBatch {
		return nil, fmt.Errorf("job %q is a %s job: it runs on every node and cannot be scaled: %w", id, cur.Type, api.ErrBadRequest)
	}
	if cur.Stop {
		return nil, fmt.Errorf("job %q is stopped: %w", id, api.ErrBadRequest)
	}
	j := cur.Copy()
	tg := j.LookupTaskGroup(req.Target["Group"])
	if tg == nil {
		return nil, fmt.Errorf("job %q has no group %q: %w", id, req.Target["Group"], api.ErrBadRequest)
	}
	if sp := tg.Scaling; sp != nil && (*req.Count < sp.Min || *req.Count > sp.Max) {
		return nil, fmt.Errorf("scale job %q group %q: count %d is outside its scaling policy's [min %d, max %d]: %w",
			id, tg.Name, *req.Count, sp.Min, sp.Max, api.ErrBadRequest)
	}
	if *req.Count > int64(s.cfg.JobMaxGroupCount) {
		// Checked before the conversion to int (registerJob checks the
		// other groups).
		return nil, api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q group %q: count %d is above the server's limit of %d (job_max_group_count)",
			id, tg.Name, *req.Count, s.cfg.JobMaxGroupCount))
	}
	tg.Count = int(*req.Count)
	return s.registerJob(ctx, &api.JobRegisterRequest{Job: j}, api.EvalTriggerJobScaling)
}

// SystemGC collects every finished eval (and its finished allocs) now,
// whatever their age.
func (s *Server) SystemGC(ctx context.Context) (int, error) {
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	return (&evalGC{serverCore: s.named("evalgc")}).collect(ctx)
}
