package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// deploymentRegions is the optional part of DeploymentsBackend for the
// deployments of multiregion jobs (server/multiregion.go).
type deploymentRegions interface {
	// RunDeployment starts a pending deployment (its region's turn).
	RunDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error)
	// UnblockDeployment marks a blocked deployment successful.
	UnblockDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error)
}

var _ deploymentRegions = (*server.Deployments)(nil)

// unblock answers POST /v1/deployment/unblock/{id} (Nomad's).
func (h *deploymentHandlers) unblock(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.regionWrite(r, "unblock", deploymentRegions.UnblockDeployment)
}

// run answers POST /v1/deployment/run/{id}: another region's rollout
// starts this region's pending deployment.
func (h *deploymentHandlers) run(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.regionWrite(r, "run", deploymentRegions.RunDeployment)
}

func (h *deploymentHandlers) regionWrite(r *nethttp.Request, verb string,
	op func(deploymentRegions, context.Context, string) (*api.DeploymentUpdateResponse, error)) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	b, ok := h.b.(deploymentRegions)
	if err := h.s.need(ok, "multiregion deployments are not available on this agent"); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	if err := h.check(r, id); err != nil {
		return nil, err
	}
	resp, err := op(b, r.Context(), id)
	if err != nil {
		return nil, fmt.Errorf("%s deployment %q: %w", verb, id, err)
	}
	return resp, nil
}
