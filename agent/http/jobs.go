package http

import (
	"fmt"
	nethttp "net/http"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

func (s *HTTPServer) jobList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		// Each stub carries its job's summary: the summaries' index counts.
		idx := s.maxIndex("jobs", "job_summary")
		jobs, err := s.cfg.State.Jobs(ws, ns, prefix)
		if err != nil {
			return nil, 0, err
		}
		jobs = visible(r, jobs, jobNamespace, acl.CapListJobs)
		out := make([]*api.JobListStub, 0, len(jobs))
		for _, j := range jobs {
			sum, err := s.cfg.State.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, j.Stub(sum))
		}
		out, err = listPage(w, r, out, func(j *api.JobListStub) string { return nsKey(j.Namespace, j.ID) })
		return out, idx, err
	})
}

func (s *HTTPServer) jobRegister(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	var req api.JobRegisterRequest
	warnings, err := decodeJobBody(r, &req)
	if err != nil {
		return nil, err
	}
	return s.register(r, &req, warnings)
}

// register submits the job; warnings (fields ignored while decoding) are
// added to the answer's Warnings.
func (s *HTTPServer) register(r *nethttp.Request, req *api.JobRegisterRequest, warnings []string) (any, error) {
	if req.Job == nil {
		return nil, api.Errorf(api.ErrBadRequest, `request body must be {"Job":{...}}: Job missing`)
	}
	if req.Job.Namespace == "" {
		req.Job.Namespace = nsParam(r)
	}
	if req.Job.Namespace == allNamespaces {
		return nil, api.Errorf(api.ErrBadRequest, `namespace "*" is not valid for a write`)
	}
	if err := allowObject(r, req.Job.Namespace, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	if err := s.allowQueue(r, req.Job); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.RegisterJob(r.Context(), req)
	if err != nil {
		return nil, fmt.Errorf("register job %q: %w", req.Job.ID, err)
	}
	resp.Warnings = joinWarnings(resp.Warnings, warnings)
	return resp, nil
}

func joinWarnings(have string, more []string) string {
	if have != "" {
		more = append([]string{have}, more...)
	}
	return strings.Join(more, "\n")
}

func (s *HTTPServer) jobUpdate(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	var req api.JobRegisterRequest
	warnings, err := decodeJobBody(r, &req)
	if err != nil {
		return nil, err
	}
	if req.Job != nil && req.Job.ID != r.PathValue("id") {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("job ID %q in the body does not match %q in the path", req.Job.ID, r.PathValue("id")))
	}
	return s.register(r, &req, warnings)
}

func (s *HTTPServer) jobParse(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	var req api.JobsParseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.JobHCL == "" {
		return nil, api.Errorf(api.ErrBadRequest, "JobHCL is required")
	}
	if s.cfg.Parse == nil {
		return nil, api.Errorf(api.ErrUnavailable, "job parsing is not available on this agent")
	}
	job, err := s.cfg.Parse(&req)
	if err != nil {
		var e *api.Error
		if !asAPIError(err, &e) {
			err = fmt.Errorf("%s: %w", err.Error(), api.Errorf(api.ErrInvalidJob, "invalid job"))
		}
		return nil, err
	}
	return job, nil
}

func (s *HTTPServer) jobGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs")
		j, err := s.cfg.State.JobByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if j == nil {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		return j, objIndex(j.ModifyIndex, idx), nil
	})
}

func (s *HTTPServer) jobDeregister(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	resp, err := s.cfg.Server.DeregisterJob(r.Context(), nsParam(r), id, purge)
	if err != nil {
		return nil, fmt.Errorf("deregister job %q: %w", id, err)
	}
	return resp, nil
}

// jobExists fails with 404 when the job is missing.
func (s *HTTPServer) jobExists(ws memdb.WatchSet, ns, id string) error {
	j, err := s.cfg.State.JobByID(ws, ns, id)
	if err != nil {
		return err
	}
	if j == nil {
		return notFound(api.ErrJobNotFound, "job", id)
	}
	return nil
}

func (s *HTTPServer) jobAllocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs", "allocs")
		if err := s.jobExists(ws, ns, id); err != nil {
			return nil, 0, err
		}
		allocs, err := s.cfg.State.AllocsByJob(ws, ns, id, all)
		if err != nil {
			return nil, 0, err
		}
		return stubs(allocs), idx, nil
	})
}

func (s *HTTPServer) jobEvals(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs", "evals")
		if err := s.jobExists(ws, ns, id); err != nil {
			return nil, 0, err
		}
		evals, err := s.cfg.State.EvalsByJob(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if evals == nil {
			evals = []*api.Evaluation{}
		}
		return evals, idx, nil
	})
}

func (s *HTTPServer) jobVersions(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	diffs, err := boolParam(r, "diffs")
	if err != nil {
		return nil, err
	}
	var differ JobDiffer
	if diffs {
		d, ok := s.cfg.Server.(JobDiffer)
		if !ok {
			return nil, api.Errorf(api.ErrUnavailable, "job diffs are not available on this agent")
		}
		differ = d
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs")
		vs, err := s.cfg.State.JobVersionsByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if len(vs) == 0 {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		resp := &api.JobVersionsResponse{Versions: vs}
		if differ != nil {
			// Versions are newest first: Diffs[i] is what Versions[i]
			// changed against Versions[i+1].
			for i := 0; i+1 < len(vs); i++ {
				resp.Diffs = append(resp.Diffs, differ.JobDiff(vs[i+1], vs[i]))
			}
		}
		return resp, idx, nil
	})
}

func (s *HTTPServer) jobSummary(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs", "allocs")
		sum, err := s.cfg.State.JobSummaryByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if sum == nil {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		return sum, objIndex(sum.ModifyIndex, idx), nil
	})
}

func (s *HTTPServer) jobPlan(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	var req api.JobPlanRequest
	warnings, err := decodeJobBody(r, &req)
	if err != nil {
		return nil, err
	}
	if req.Job == nil {
		return nil, api.Errorf(api.ErrBadRequest, `request body must be {"Job":{...}}: Job missing`)
	}
	if req.Job.ID != r.PathValue("id") {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("job ID %q in the body does not match %q in the path", req.Job.ID, r.PathValue("id")))
	}
	if req.Job.Namespace == "" {
		req.Job.Namespace = nsParam(r)
	}
	// The plan diffs against the stored job: the body's namespace is
	// checked as a registration's.
	if err := allowObject(r, req.Job.Namespace, acl.CapSubmitJob); err != nil {
		return nil, err
	}
	if err := s.allowQueue(r, req.Job); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.PlanJob(r.Context(), &req)
	if err != nil {
		return nil, fmt.Errorf("plan job %q: %w", req.Job.ID, err)
	}
	resp.Warnings = joinWarnings(resp.Warnings, warnings)
	return resp, nil
}

func (s *HTTPServer) jobEvaluate(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	resp, err := s.cfg.Server.EvaluateJob(r.Context(), nsParam(r), id)
	if err != nil {
		return nil, fmt.Errorf("evaluate job %q: %w", id, err)
	}
	return resp, nil
}

func stubs(allocs []*api.Allocation) []*api.AllocListStub {
	out := make([]*api.AllocListStub, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, a.Stub())
	}
	return out
}
