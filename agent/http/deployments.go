package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// DeploymentState is the optional deployment read side of State (found by
// type assertion). Missing single objects are (nil, nil).
type DeploymentState interface {
	DeploymentByID(ws memdb.WatchSet, id string) (*api.Deployment, error)
	// Deployments lists deployments in ns ("*": all) whose ID has prefix.
	Deployments(ws memdb.WatchSet, ns, prefix string) ([]*api.Deployment, error)
	// DeploymentsByJobID lists a job's deployments, newest first.
	DeploymentsByJobID(ws memdb.WatchSet, ns, jobID string) ([]*api.Deployment, error)
	AllocsByDeployment(ws memdb.WatchSet, deploymentID string) ([]*api.Allocation, error)
}

// DeploymentServer is the optional deployment write side of Server (found
// by type assertion). Errors wrap api sentinels (ErrDeploymentNotFound,
// ErrConflict for a deployment that is not active or unhealthy canaries).
type DeploymentServer interface {
	// PromoteDeployment promotes the canaries of groups (empty: all).
	PromoteDeployment(ctx context.Context, id string, groups []string) (*api.DeploymentUpdateResponse, error)
	FailDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error)
	PauseDeployment(ctx context.Context, id string, pause bool) (*api.DeploymentUpdateResponse, error)
}

func (s *HTTPServer) deploymentRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/deployments", s.deploymentList)
	h("GET /v1/deployment/{id}", s.deploymentGet)
	h("GET /v1/deployment/allocations/{id}", s.deploymentAllocs)
	h("GET /v1/job/{id}/deployments", s.jobDeployments)
	h("GET /v1/job/{id}/deployment", s.jobLatestDeployment)
	for _, m := range []string{"POST", "PUT"} {
		h(m+" /v1/deployment/promote/{id}", s.deploymentPromote)
		h(m+" /v1/deployment/fail/{id}", s.deploymentFail)
		h(m+" /v1/deployment/pause/{id}", s.deploymentPause)
	}
}

func (s *HTTPServer) deploymentState() (DeploymentState, error) {
	if s.cfg.State == nil {
		return nil, api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	d, ok := s.cfg.State.(DeploymentState)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "deployments are not available on this agent")
	}
	return d, nil
}

func (s *HTTPServer) deploymentServer() (DeploymentServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	d, ok := s.cfg.Server.(DeploymentServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "deployment writes are not available on this agent")
	}
	return d, nil
}

func (s *HTTPServer) deploymentList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ds, err := s.deploymentState()
	if err != nil {
		return nil, err
	}
	ns, prefix := nsParam(r), r.URL.Query().Get("prefix")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("deployments")
		out, err := ds.Deployments(ws, ns, prefix)
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

func (s *HTTPServer) deploymentGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ds, err := s.deploymentState()
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("deployments")
		d, err := lookupDeployment(ws, r, ds, id)
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

// checkDeployment checks the route's capability in the namespace of the
// deployment a write is about, before it is made.
func (s *HTTPServer) checkDeployment(r *nethttp.Request, id string) error {
	ds, err := s.deploymentState()
	if err != nil {
		return err
	}
	_, err = lookupDeployment(nil, r, ds, id)
	return err
}

func (s *HTTPServer) deploymentAllocs(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	ds, err := s.deploymentState()
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("deployments", "allocs")
		if _, err := lookupDeployment(ws, r, ds, id); err != nil {
			return nil, 0, err
		}
		allocs, err := ds.AllocsByDeployment(ws, id)
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

func (s *HTTPServer) jobDeployments(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return s.readJobDeployments(w, r, func(ds []*api.Deployment) any {
		if ds == nil {
			return []*api.Deployment{}
		}
		return ds
	})
}

// jobLatestDeployment answers the job's newest deployment, or null when
// it has none (a missing job is a 404).
func (s *HTTPServer) jobLatestDeployment(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return s.readJobDeployments(w, r, func(ds []*api.Deployment) any {
		if len(ds) == 0 {
			return nil
		}
		return ds[0]
	})
}

// readJobDeployments is a blocking read of a job's deployments, newest
// first, answered as pick makes of them.
func (s *HTTPServer) readJobDeployments(w nethttp.ResponseWriter, r *nethttp.Request, pick func([]*api.Deployment) any) (any, error) {
	ds, err := s.deploymentState()
	if err != nil {
		return nil, err
	}
	ns, id := nsParam(r), r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		idx := s.maxIndex("jobs", "deployments")
		if err := s.jobExists(ws, ns, id); err != nil {
			return nil, 0, err
		}
		out, err := ds.DeploymentsByJobID(ws, ns, id)
		if err != nil {
			return nil, 0, err
		}
		return pick(out), idx, nil
	})
}

func (s *HTTPServer) deploymentPromote(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	d, err := s.deploymentServer()
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := s.checkDeployment(r, id); err != nil {
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
	resp, err := d.PromoteDeployment(r.Context(), id, req.Groups)
	if err != nil {
		return nil, fmt.Errorf("promote deployment %q: %w", id, err)
	}
	return resp, nil
}

func (s *HTTPServer) deploymentFail(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	d, err := s.deploymentServer()
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := s.checkDeployment(r, id); err != nil {
		return nil, err
	}
	resp, err := d.FailDeployment(r.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("fail deployment %q: %w", id, err)
	}
	return resp, nil
}

func (s *HTTPServer) deploymentPause(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	d, err := s.deploymentServer()
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := s.checkDeployment(r, id); err != nil {
		return nil, err
	}
	var req api.DeploymentPauseRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.DeploymentID != "" && req.DeploymentID != id {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("deployment ID %q in the body does not match %q in the path", req.DeploymentID, id))
	}
	resp, err := d.PauseDeployment(r.Context(), id, req.Pause)
	if err != nil {
		return nil, fmt.Errorf("pause deployment %q: %w", id, err)
	}
	return resp, nil
}
