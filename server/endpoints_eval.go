package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// maxEvalDelete bounds the evals one delete removes.
const maxEvalDelete = 10000

// DeleteEvals deletes evaluations through Raft, as Nomad's eval delete:
// only while the scheduler configuration pauses the eval broker (else
// api.ErrBadRequest), every ID must exist (api.ErrNotFound), at most
// maxEvalDelete at once. A deleted eval the broker still holds is skipped
// by the worker that takes it; a deleted blocked eval stops waiting. It
// returns the Raft index.
func (s *Server) DeleteEvals(ctx context.Context, ids []string) (uint64, error) {
	switch {
	case len(ids) == 0:
		return 0, api.Errorf(api.ErrBadRequest, "no evaluations to delete")
	case len(ids) > maxEvalDelete:
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("%d evaluations: at most %d at once", len(ids), maxEvalDelete))
	}
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	c, err := s.State().SchedulerConfig(nil)
	if err != nil {
		return 0, fmt.Errorf("read scheduler configuration: %w", err)
	}
	if c == nil || !c.PauseEvalBroker {
		return 0, api.Errorf(api.ErrBadRequest, "eval broker is enabled; pause it first (drover operator scheduler set-config -pause-eval-broker=true)")
	}
	evals := make([]*api.Evaluation, 0, len(ids))
	for _, id := range ids {
		e, err := s.State().EvalByID(nil, id)
		if err != nil {
			return 0, fmt.Errorf("eval %s: %w", id, err)
		}
		if e == nil {
			return 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("evaluation %q not found", id))
		}
		evals = append(evals, e)
	}
	idx, err := s.apply(ctx, fsm.EvalDeleteType, &fsm.EvalDeleteRequest{Evals: ids})
	if err != nil {
		return 0, fmt.Errorf("delete evaluations: %w", err)
	}
	for _, e := range evals {
		if b := s.blocked.Blocked(e.Namespace, e.JobID); b != nil && b.ID == e.ID {
			s.blocked.Untrack(e.Namespace, e.JobID)
		}
	}
	return idx, nil
}
