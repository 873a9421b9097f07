package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// JobVerbsBackend is the write side of Nomad's job verbs besides
// register and deregister: dispatch, periodic force, revert and scale.
type JobVerbsBackend interface {
	DispatchJob(ctx context.Context, ns, id string, req *api.JobDispatchRequest) (*api.JobDispatchResponse, error)
	ForcePeriodic(ctx context.Context, ns, id string) (*api.PeriodicForceResponse, error)
	RevertJob(ctx context.Context, ns, id string, req *api.JobRevertRequest) (*api.JobRegisterResponse, error)
	ScaleJob(ctx context.Context, ns, id string, req *api.JobScaleRequest) (*api.JobRegisterResponse, error)
}

// jobVerbHandlers serve the job verbs and the scale status.
type jobVerbHandlers struct {
	s *HTTPServer
	b JobVerbsBackend
}

func (h *jobVerbHandlers) ready() error {
	return h.s.need(h.b != nil, "job verbs are not available on this agent")
}

func (h *jobVerbHandlers) dispatch(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	if err := h.s.allowStoredJobQueue(r, nsParam(r), id); err != nil {
		return nil, err
	}
	resp, err := h.b.DispatchJob(r.Context(), nsParam(r), id, &req)
	if err != nil {
		return nil, fmt.Errorf("dispatch job %q: %w", id, err)
	}
	return resp, nil
}

func (h *jobVerbHandlers) periodicForce(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := h.s.allowStoredJobQueue(r, nsParam(r), id); err != nil {
		return nil, err
	}
	resp, err := h.b.ForcePeriodic(r.Context(), nsParam(r), id)
	if err != nil {
		return nil, fmt.Errorf("force launch of job %q: %w", id, err)
	}
	return resp, nil
}

func (h *jobVerbHandlers) revert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	if err := h.allowRevertQueue(r, nsParam(r), id, req.JobVersion); err != nil {
		return nil, err
	}
	resp, err := h.b.RevertJob(r.Context(), nsParam(r), id, &req)
	if err != nil {
		return nil, fmt.Errorf("revert job %q: %w", id, err)
	}
	return resp, nil
}

// allowRevertQueue checks the queue of the version a revert goes back to.
func (h *jobVerbHandlers) allowRevertQueue(r *nethttp.Request, ns, id string, version uint64) error {
	if aclOf(r) == nil || h.s.role.State == nil {
		return nil
	}
	versions, err := h.s.state(nil).JobVersionsByID(nil, ns, id)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if v.Version == version {
			return h.s.allowQueue(r, v)
		}
	}
	return nil // no such version: the server says so
}

func (h *jobVerbHandlers) scale(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	if err := h.s.allowStoredJobQueue(r, nsParam(r), id); err != nil {
		return nil, err
	}
	resp, err := h.b.ScaleJob(r.Context(), nsParam(r), id, &req)
	if err != nil {
		return nil, fmt.Errorf("scale job %q: %w", id, err)
	}
	return resp, nil
}

func (h *jobVerbHandlers) scaleStatus(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs", "allocs")
		job, err := st.JobByID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		if job == nil {
			return nil, 0, notFound(api.ErrJobNotFound, "job", id)
		}
		allocs, err := st.AllocsByJob(ws, ns, id, false)
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
