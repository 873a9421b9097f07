package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// UpsertNamespaces creates or replaces namespaces through Raft (all or
// none); an invalid one, or one naming a queue that does not exist, is
// api.ErrBadRequest.
func (s *Server) UpsertNamespaces(ctx context.Context, nss []*api.Namespace) (uint64, error) {
	if len(nss) == 0 {
		return 0, api.Errorf(api.ErrBadRequest, "no namespaces given")
	}
	for _, n := range nss {
		if err := n.Validate(); err != nil {
			return 0, err
		}
	}
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := s.apply(ctx, fsm.NamespaceUpsertType, &fsm.NamespaceUpsertRequest{Namespaces: nss})
	if err != nil {
		return 0, fmt.Errorf("upsert namespaces: %w", err)
	}
	return idx, nil
}

// DeleteNamespace deletes a namespace through Raft: not the default one
// or one with jobs (api.ErrBadRequest), not an unknown one (api.ErrNotFound).
func (s *Server) DeleteNamespace(ctx context.Context, name string) (uint64, error) {
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := s.apply(ctx, fsm.NamespaceDeleteType, &fsm.NamespaceDeleteRequest{Names: []string{name}})
	if err != nil {
		return 0, fmt.Errorf("delete namespace %q: %w", name, err)
	}
	return idx, nil
}

// checkNamespace refuses a job in a namespace that does not exist (as
// Nomad) and gives a job that names no queue its namespace's default one.
func (s *Server) checkNamespace(job *api.Job) error {
	ns, err := s.State().NamespaceByName(nil, job.Namespace)
	if err != nil {
		return fmt.Errorf("job %q: namespace %q: %w", job.ID, job.Namespace, err)
	}
	if ns == nil {
		return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q is in nonexistent namespace %q", job.ID, job.Namespace))
	}
	if job.Queue == "" && ns.Queue != "" {
		job.Queue = ns.Queue
	}
	return nil
}
