package server

import (
	"context"
	"sync"

	"github.com/drover/drover/api"
)

// evalStatusQueue collects evals whose status the leader must change
// (failed after the delivery limit, superseded blocked evals); the
// reaper writes them through Raft. Callbacks only append, never block.
type evalStatusQueue struct {
	mu     sync.Mutex
	items  []*api.Evaluation
	notify chan struct{}
}

func (q *evalStatusQueue) push(e *api.Evaluation) {
	q.mu.Lock()
	q.items = append(q.items, e)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *evalStatusQueue) take() []*api.Evaluation {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

// failed queues e as failed: it reached the broker's delivery limit.
func (q *evalStatusQueue) failed(e *api.Evaluation) {
	c := e.Copy()
	c.Status = api.EvalStatusFailed
	c.StatusDescription = "evaluation reached its delivery limit"
	q.push(c)
}

// superseded queues e, a blocked eval, as cancelled: a newer blocked eval
// of its job (or the job's deregistration) replaced it.
func (q *evalStatusQueue) superseded(e *api.Evaluation) {
	c := e.Copy()
	c.Status = api.EvalStatusCancelled
	c.StatusDescription = "superseded by a newer blocked evaluation"
	q.push(c)
}

// evalReaper writes the queued eval status changes.
type evalReaper struct {
	serverCore
	queue *evalStatusQueue
}

// Run writes until ctx ends.
func (r *evalReaper) Run(ctx context.Context) {
	for {
		if items := r.queue.take(); len(items) > 0 {
			now := r.clock.Now().UnixNano()
			for _, e := range items {
				e.ModifyTime = now
			}
			actx, cancel := r.applyCtx(ctx)
			_, err := r.applyEvals(actx, items)
			cancel()
			if err != nil {
				r.log.Warn("update eval status", "evals", len(items), "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.queue.notify:
		}
	}
}
