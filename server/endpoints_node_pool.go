package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// UpsertNodePools creates or replaces node pools through Raft (all or
// none); a built-in or invalid pool is api.ErrBadRequest.
func (s *Server) UpsertNodePools(ctx context.Context, pools []*api.NodePool) (uint64, error) {
	if len(pools) == 0 {
		return 0, fmt.Errorf("upsert node pools: %w", api.Errorf(api.ErrBadRequest, "no node pools given"))
	}
	for _, p := range pools {
		if err := p.Validate(); err != nil {
			return 0, err
		}
	}
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := s.apply(ctx, fsm.NodePoolUpsertType, &fsm.NodePoolUpsertRequest{NodePools: pools})
	if err != nil {
		return 0, fmt.Errorf("upsert node pools: %w", err)
	}
	return idx, nil
}

// DeleteNodePool deletes a pool through Raft: not a built-in one, not one
// that still has nodes or live jobs (api.ErrBadRequest), and not an
// unknown one (api.ErrNotFound).
func (s *Server) DeleteNodePool(ctx context.Context, name string) (uint64, error) {
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := s.apply(ctx, fsm.NodePoolDeleteType, &fsm.NodePoolDeleteRequest{Names: []string{name}})
	if err != nil {
		return 0, fmt.Errorf("delete node pool %q: %w", name, err)
	}
	return idx, nil
}

// checkNodePool refuses a job whose node pool does not exist (as Nomad):
// the built-in pools always do; others are applied or created by the
// nodes that register into them.
func (s *Server) checkNodePool(job *api.Job) error {
	if job.NodePool == "" {
		return nil
	}
	p, err := s.State().NodePoolByName(nil, job.NodePool)
	if err != nil {
		return fmt.Errorf("job %q: node pool %q: %w", job.ID, job.NodePool, err)
	}
	if p == nil {
		return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q is in nonexistent node pool %q", job.ID, job.NodePool))
	}
	return nil
}
