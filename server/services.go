package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// Services is the component of native service registrations: a client
// node writes its allocs' instances (authenticated by the node's secret),
// an operator deletes one. It is safe for concurrent use.
type Services struct{ serverCore }

// maxServiceWrites bounds one client's service update.
const maxServiceWrites = 4096

// UpdateNodeServices writes and deletes the native service registrations
// of a node's allocs, authenticated by the node's secret.
func (sv *Services) UpdateNodeServices(ctx context.Context, nodeID, secret string, req *api.NodeServicesRequest) (uint64, error) {
	if !sv.isLeader() {
		return 0, errNotLeader()
	}
	if _, err := authNode(sv.state(), nodeID, secret); err != nil {
		return 0, err
	}
	if req == nil || len(req.Upserts)+len(req.Deletes) == 0 {
		return sv.state().LatestIndex(), nil
	}
	if n := len(req.Upserts) + len(req.Deletes); n > maxServiceWrites {
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("%d service writes in one request: at most %d", n, maxServiceWrites))
	}
	idx, err := sv.apply(ctx, fsm.ServiceUpdateType, &fsm.ServiceUpdateRequest{NodeID: nodeID, Upserts: req.Upserts, Deletes: req.Deletes})
	if err != nil {
		return 0, fmt.Errorf("update services of node %s: %w", nodeID, err)
	}
	return idx, nil
}

// DeleteServiceRegistration removes one instance of a service (an
// operator's cleanup; the client registers a live instance again).
func (sv *Services) DeleteServiceRegistration(ctx context.Context, namespace, name, id string) (uint64, error) {
	if !sv.isLeader() {
		return 0, errNotLeader()
	}
	regs, err := sv.state().ServicesByName(nil, namespace, name)
	if err != nil {
		return 0, err
	}
	found := false
	for _, r := range regs {
		found = found || r.ID == id
	}
	if !found {
		return 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("service %q has no registration %q", name, id))
	}
	idx, err := sv.apply(ctx, fsm.ServiceUpdateType, &fsm.ServiceUpdateRequest{Deletes: []string{id}})
	if err != nil {
		return 0, fmt.Errorf("delete service registration %q: %w", id, err)
	}
	return idx, nil
}
