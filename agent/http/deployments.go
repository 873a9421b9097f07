package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// DeploymentState is the deployment read side of Store.
type DeploymentState interface {
	DeploymentByID(ws memdb.WatchSet, id string) (*api.Deployment, error)
	// Deployments lists deployments in ns ("*": all) whose ID has prefix.
	Deployments(ws memdb.WatchSet, ns, prefix string) ([]*api.Deployment, error)
	// DeploymentsByJobID lists a job's deployments, newest first.
	DeploymentsByJobID(ws memdb.WatchSet, ns, jobID string) ([]*api.Deployment, error)
	AllocsByDeployment(ws memdb.WatchSet, deploymentID string) ([]*api.Allocation, error)
}

// DeploymentsBackend is the deployment write side of the server role.
// Errors wrap api sentinels (ErrDeploymentNotFound, ErrConflict for a
// deployment that is not active or unhealthy canaries).
type DeploymentsBackend interface {
	// PromoteDeployment promotes the canaries of groups (empty: all).
	PromoteDeployment(ctx context.Context, id string, groups []string) (*api.DeploymentUpdateResponse, error)
	FailDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error)
	PauseDeployment(ctx context.Context, id string, pause bool) (*api.DeploymentUpdateResponse, error)
}

// deploymentHandlers serve /v1/deployments, /v1/deployment/... and a
// job's deployments.
type deploymentHandlers struct {
	s *HTTPServer
	b DeploymentsBackend
}

func (h *deploymentHandlers) ready() error {
	return h.s.need(h.b != nil && h.s.role.State != nil, "deployment writes are not available on this agent")
}

func (h *deploymentHandlers) list(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "deployments")
		out, err := st.Deployments(ws, ns, prefix)
		if err != nil {
			return nil, 0, err
		}
		if out == nil {
			out = []*api.Deployment{}
		}
		out = visible(r, out, func(d *api.Deployment) string { return d.Namespace }, acl.CapReadJob)
		out, err = listPage(w, r, out, func(d *api.Deployment) string { return d.ID })
		return out, idx, err
	})
}

func (h *deploymentHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "deployments")
		d, err := lookupDeployment(ws, r, st, id)
		if err != nil {
			return nil, 0, err
		}
		return d, objIndex(d.ModifyIndex, idx), nil
	})
}

// lookupDeployment is the deployment id, checked in its own namespace
// (checkObject), or ErrDeploymentNotFound.
func lookupDeployment(ws memdb.WatchSet, r *nethttp.Request, ds DeploymentState, id string) (*api.Deployment, error) {
	d, err := ds.DeploymentByID(ws, id)
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, notFound(api.ErrDeploymentNotFound, "deployment", id)
	}
	return d, checkObject(r, d.Namespace)
}

// check checks the route's capability in the namespace of the
// deployment a write is about, before it is made.
func (h *deploymentHandlers) check(r *nethttp.Request, id string) error {
	_, err := lookupDeployment(nil, r, h.s.state(nil), id)
	return err
}

func (h *deploymentHandlers) allocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "deployments", "allocs")
		if _, err := lookupDeployment(ws, r, st, id); err != nil {
			return nil, 0, err
		}
		allocs, err := st.AllocsByDeployment(ws, id)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*api.AllocListStub, 0, len(allocs))
		for _, a := range allocs {
			out = append(out, a.Stub())
		}
		return out, idx, nil
	})
}

func (h *deploymentHandlers) ofJob(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.readJobDeployments(w, r, func(ds []*api.Deployment) any {
		if ds == nil {
			return []*api.Deployment{}
		}
		return ds
	})
}

// latestOfJob answers the job's newest deployment, or null when it has
// none (a missing job is a 404).
func (h *deploymentHandlers) latestOfJob(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.readJobDeployments(w, r, func(ds []*api.Deployment) any {
		if len(ds) == 0 {
			return nil
		}
		return ds[0]
	})
}

// readJobDeployments is a blocking read of a job's deployments, newest
// first, answered as pick makes of them.
func (h *deploymentHandlers) readJobDeployments(w nethttp.ResponseWriter, r *nethttp.Request, pick func([]*api.Deployment) any) (any, error) {
	ns, id := nsParam(r), r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		idx := maxIndex(st, "jobs", "deployments")
		if err := jobExists(st, ws, ns, id); err != nil {
			return nil, 0, err
		}
		out, err := st.DeploymentsByJobID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		return pick(out), idx, nil
	})
}

func (h *deploymentHandlers) promote(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := h.check(r, id); err != nil {
		return nil, err
	}
	var req api.DeploymentPromoteRequest
	if r.ContentLength != 0 {
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
	}
	if req.DeploymentID != "" && req.DeploymentID != id {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("deployment ID %q in the body does not match %q in the path", req.DeploymentID, id))
	}
	if req.All && len(req.Groups) > 0 {
		return nil, api.Errorf(api.ErrBadRequest, "give All or Groups, not both")
	}
	resp, err := h.b.PromoteDeployment(r.Context(), id, req.Groups)
	if err != nil {
		return nil, fmt.Errorf("promote deployment %q: %w", id, err)
	}
	return resp, nil
}

func (h *deploymentHandlers) fail(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := h.check(r, id); err != nil {
		return nil, err
	}
	resp, err := h.b.FailDeployment(r.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("fail deployment %q: %w", id, err)
	}
	return resp, nil
}

func (h *deploymentHandlers) pause(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := h.check(r, id); err != nil {
		return nil, err
	}
	var req api.DeploymentPauseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.DeploymentID != "" && req.DeploymentID != id {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("deployment ID %q in the body does not match %q in the path", req.DeploymentID, id))
	}
	resp, err := h.b.PauseDeployment(r.Context(), id, req.Pause)
	if err != nil {
		return nil, fmt.Errorf("pause deployment %q: %w", id, err)
	}
	return resp, nil
}
