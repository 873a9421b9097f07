package http

import (
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// jobVerbRoutes are Nomad's job verbs besides register/deregister:
// dispatch, periodic force, revert, scale, and system GC.
func (s *HTTPServer) jobVerbRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	for _, m := range []string{"POST", "PUT"} {
		h(m+" /v1/job/{id}/dispatch", s.jobDispatch)
		h(m+" /v1/job/{id}/periodic/force", s.jobPeriodicForce)
		h(m+" /v1/job/{id}/revert", s.jobRevert)
		h(m+" /v1/job/{id}/scale", s.jobScale)
		h(m+" /v1/system/gc", s.systemGC)
	}
	h("GET /v1/job/{id}/scale", s.jobScaleStatus)
}

func (s *HTTPServer) jobDispatch(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	var req api.JobDispatchRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.JobID != "" && req.JobID != id {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("job ID %q in the body does not match %q in the path", req.JobID, id))
	}
	if err := s.allowStoredJobQueue(r, nsParam(r), id); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.DispatchJob(r.Context(), nsParam(r), id, &req)
	if err != nil {
		return nil, fmt.Errorf("dispatch job %q: %w", id, err)
	}
	return resp, nil
}

func (s *HTTPServer) jobPeriodicForce(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := s.allowStoredJobQueue(r, nsParam(r), id); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.ForcePeriodic(r.Context(), nsParam(r), id)
	if err != nil {
		return nil, fmt.Errorf("force launch of job %q: %w", id, err)
	}
	return resp, nil
}

func (s *HTTPServer) jobRevert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	var req api.JobRevertRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.JobID != "" && req.JobID != id {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("job ID %q in the body does not match %q in the path", req.JobID, id))
	}
	if err := s.allowRevertQueue(r, nsParam(r), id, req.JobVersion); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.RevertJob(r.Context(), nsParam(r), id, &req)
	if err != nil {
		return nil, fmt.Errorf("revert job %q: %w", id, err)
	}
	return resp, nil
}

// allowRevertQueue checks the queue of the version a revert goes back to.
func (s *HTTPServer) allowRevertQueue(r *nethttp.Request, ns, id string, version uint64) error {
	if aclOf(r) == nil || s.cfg.State == nil {
		return nil
	}
	versions, err := s.cfg.State.JobVersionsByID(nil, ns, id)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if v.Version == version {
			return s.allowQueue(r, v)
		}
	}
	return nil // no such version: the server says so
}

func (s *HTTPServer) jobScale(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	var req api.JobScaleRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if j := req.Target["Job"]; j != "" && j != id {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("Target.Job %q does not match %q in the path", j, id))
	}
	if err := s.allowStoredJobQueue(r, nsParam(r), id); err != nil {
		return nil, err
	}
	resp, err := s.cfg.Server.ScaleJob(r.Context(), nsParam(r), id, &req)
	if err != nil {
		return nil, fmt.Errorf("scale job %q: %w", id, err)
	}
	return resp, nil
}

func (s *HTTPServer) jobScaleStatus(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs", "allocs")
		job, err := s.cfg.State.JobByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if job == nil {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		allocs, err := s.cfg.State.AllocsByJob(ws, ns, id, false)
		if err != nil {
			return nil, 0, err
		}
		out := &api.JobScaleStatus{JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
			JobModifyIndex: job.JobModifyIndex, JobStopped: job.Stop, TaskGroups: map[string]api.TaskGroupScaleStatus{}}
		for _, tg := range job.TaskGroups {
			out.TaskGroups[tg.Name] = api.TaskGroupScaleStatus{Desired: tg.Count}
		}
		for _, a := range allocs {
			g, ok := out.TaskGroups[a.TaskGroup]
			if !ok || a.TerminalStatus() {
				continue
			}
			g.Placed++
			if a.ClientStatus == api.AllocClientStatusRunning {
				g.Running++
			}
			if ds := a.DeploymentStatus; ds != nil && ds.Healthy != nil {
				if *ds.Healthy {
					g.Healthy++
				} else {
					g.Unhealthy++
				}
			}
			out.TaskGroups[a.TaskGroup] = g
		}
		return out, idx, nil
	})
}

func (s *HTTPServer) systemGC(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	if _, err := s.cfg.Server.SystemGC(r.Context()); err != nil {
		return nil, fmt.Errorf("system gc: %w", err)
	}
	return struct{}{}, nil
}
