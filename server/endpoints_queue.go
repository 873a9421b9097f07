package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// UpsertQueues creates or replaces queues through Raft (all or none). An
// unset Parent is the name's prefix. An invalid queue, or one that breaks
// the tree (missing parent, guarantees above the parent's), is
// api.ErrBadRequest.
func (s *Server) UpsertQueues(ctx context.Context, queues []*api.Queue) (uint64, error) {
	if len(queues) == 0 {
		return 0, fmt.Errorf("upsert queues: %w", api.Errorf(api.ErrBadRequest, "no queues given"))
	}
	for _, q := range queues {
		if q != nil && q.Parent == "" {
			q.Parent = api.ParentOf(q.Name)
		}
		if err := q.Validate(); err != nil {
			return 0, err
		}
	}
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := s.apply(ctx, fsm.QueueUpsertType, &fsm.QueueUpsertRequest{Queues: queues})
	if err != nil {
		return 0, fmt.Errorf("upsert queues: %w", err)
	}
	return idx, nil
}

// DeleteQueue deletes a queue through Raft: not "default", not one with
// child queues or live jobs (api.ErrBadRequest), and not an unknown one
// (api.ErrNotFound).
func (s *Server) DeleteQueue(ctx context.Context, name string) (uint64, error) {
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	idx, err := s.apply(ctx, fsm.QueueDeleteType, &fsm.QueueDeleteRequest{Names: []string{name}})
	if err != nil {
		return 0, fmt.Errorf("delete queue %q: %w", name, err)
	}
	return idx, nil
}

// checkQueue refuses a job whose queue does not exist ("default", the
// queue of jobs naming none, always does).
func (s *Server) checkQueue(job *api.Job) error {
	name := api.JobQueue(job)
	q, err := s.State().QueueByName(nil, name)
	if err != nil {
		return fmt.Errorf("job %q: queue %q: %w", job.ID, name, err)
	}
	if q == nil {
		return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q is in nonexistent queue %q", job.ID, name))
	}
	return nil
}
