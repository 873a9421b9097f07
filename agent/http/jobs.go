package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
	"github.com/drover/drover/server/acl"
)

// JobState is the job read side of Store.
type JobState interface {
	JobByID(ws memdb.WatchSet, ns, id string) (*api.Job, error)
	Jobs(ws memdb.WatchSet, ns, prefix string) ([]*api.Job, error)
	JobVersionsByID(ws memdb.WatchSet, ns, id string) ([]*api.Job, error)
	JobSummaryByID(ws memdb.WatchSet, ns, id string) (*api.JobSummary, error)
}

// JobsBackend is the job write side of the server role: registration,
// plans and evaluations. All writes go through Raft; errors wrap api
// sentinels.
type JobsBackend interface {
	RegisterJob(ctx context.Context, req *api.JobRegisterRequest) (*api.JobRegisterResponse, error)
	DeregisterJob(ctx context.Context, ns, id string, purge bool) (*api.JobDeregisterResponse, error)
	EvaluateJob(ctx context.Context, ns, id string) (*api.JobEvaluateResponse, error)
	PlanJob(ctx context.Context, req *api.JobPlanRequest) (*api.JobPlanResponse, error)
	JobDiffer
}

// JobDiffer is the diff between two versions of a job (either may be
// nil), for GET /v1/job/{id}/versions?diffs=true. It must be pure.
type JobDiffer interface {
	JobDiff(old, new *api.Job) *api.JobDiff
}

// jobHandlers serve /v1/jobs and /v1/job/{id} (jobs_verbs.go: the verbs).
type jobHandlers struct {
	s     *HTTPServer
	b     JobsBackend
	parse Parser
}

func (h *jobHandlers) ready() error {
	return h.s.need(h.b != nil, "jobs are not available on this agent")
}

func (h *jobHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		// Each stub carries its job's summary: the summaries' index counts.
		idx := maxIndex(st, "jobs", "job_summary")
		jobs, err := st.Jobs(ws, ns, prefix)
		if err != nil {
			return nil, 0, err
		}
		jobs = visible(r, jobs, jobNamespace, acl.CapListJobs)
		out := make([]*api.JobListStub, 0, len(jobs))
		for _, j := range jobs {
			sum, err := st.JobSummaryByID(ws, j.Namespace, j.ID)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, j.Stub(sum))
		}
		out, err = listPage(w, r, out, func(j *api.JobListStub) string { return nsKey(j.Namespace, j.ID) })
		return out, idx, err
	})
}

func (h *jobHandlers) register(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.JobRegisterRequest
	warnings, err := decodeJobBody(r, &req)
	if err != nil {
		return nil, err
	}
	return h.submit(r, &req, warnings)
}

// submit registers the job; warnings (fields ignored while decoding) are
// added to the answer's Warnings.
func (h *jobHandlers) submit(r *nethttp.Request, req *api.JobRegisterRequest, warnings []string) (any, error) {
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
	if err := h.s.allowQueue(r, req.Job); err != nil {
		return nil, err
	}
	// A multiregion job is registered in its other regions with the
	// caller's token (server/multiregion.go).
	resp, err := h.b.RegisterJob(server.WithCallerToken(r.Context(), tokenOf(r)), req)
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

func (h *jobHandlers) update(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	return h.submit(r, &req, warnings)
}

func (h *jobHandlers) parseHCL(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	var req api.JobsParseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.JobHCL == "" {
		return nil, api.Errorf(api.ErrBadRequest, "JobHCL is required")
	}
	if h.parse == nil {
		return nil, api.Errorf(api.ErrUnavailable, "job parsing is not available on this agent")
	}
	job, err := h.parse(&req)
	if err != nil {
		var e *api.Error
		if !asAPIError(err, &e) {
			err = fmt.Errorf("%s: %w", err.Error(), api.Errorf(api.ErrInvalidJob, "invalid job"))
		}
		return nil, err
	}
	return job, nil
}

func (h *jobHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs")
		j, err := st.JobByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if j == nil {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		return j, objIndex(j.ModifyIndex, idx), nil
	})
}

func (h *jobHandlers) deregister(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	purge, err := boolParam(r, "purge")
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	resp, err := h.b.DeregisterJob(r.Context(), nsParam(r), id, purge)
	if err != nil {
		return nil, fmt.Errorf("deregister job %q: %w", id, err)
	}
	return resp, nil
}

// jobExists fails with 404 when the job is missing.
func jobExists(st JobState, ws memdb.WatchSet, ns, id string) error {
	j, err := st.JobByID(ws, ns, id)
	if err != nil {
		return err
	}
	if j == nil {
		return notFound(api.ErrJobNotFound, "job", id)
	}
	return nil
}

func (h *jobHandlers) allocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs", "allocs")
		if err := jobExists(st, ws, ns, id); err != nil {
			return nil, 0, err
		}
		allocs, err := st.AllocsByJob(ws, ns, id, all)
		if err != nil {
			return nil, 0, err
		}
		return stubs(allocs), idx, nil
	})
}

func (h *jobHandlers) evals(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs", "evals")
		if err := jobExists(st, ws, ns, id); err != nil {
			return nil, 0, err
		}
		evals, err := st.EvalsByJob(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if evals == nil {
			evals = []*api.Evaluation{}
		}
		return evals, idx, nil
	})
}

func (h *jobHandlers) versions(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	diffs, err := boolParam(r, "diffs")
	if err != nil {
		return nil, err
	}
	var differ JobDiffer
	if diffs {
		if h.b == nil {
			return nil, api.Errorf(api.ErrUnavailable, "job diffs are not available on this agent")
		}
		differ = h.b
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs")
		vs, err := st.JobVersionsByID(ws, ns, id)
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

func (h *jobHandlers) summary(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs", "allocs")
		sum, err := st.JobSummaryByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if sum == nil {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		return sum, objIndex(sum.ModifyIndex, idx), nil
	})
}

func (h *jobHandlers) plan(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	if err := h.s.allowQueue(r, req.Job); err != nil {
		return nil, err
	}
	resp, err := h.b.PlanJob(r.Context(), &req)
	if err != nil {
		return nil, fmt.Errorf("plan job %q: %w", req.Job.ID, err)
	}
	resp.Warnings = joinWarnings(resp.Warnings, warnings)
	return resp, nil
}

func (h *jobHandlers) evaluate(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	resp, err := h.b.EvaluateJob(r.Context(), nsParam(r), id)
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
