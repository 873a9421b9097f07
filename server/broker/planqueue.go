package broker

import (
	"container/heap"
	"context"
	"errors"
	"sync"

	"github.com/drover/drover/api"
)

// ErrPlanQueueDisabled is returned while the plan queue is disabled.
var ErrPlanQueueDisabled = errors.New("plan queue disabled")

// PendingPlan is a submitted plan waiting for the applier. The applier
// calls Respond exactly once; the submitter waits with Wait.
type PendingPlan struct {
	Plan *api.Plan
	seq  uint64
	once sync.Once
	done chan struct{}
	res  *api.PlanResult
	err  error
}

// Respond delivers the applier's answer (only the first call counts).
func (p *PendingPlan) Respond(res *api.PlanResult, err error) {
	p.once.Do(func() {
		p.res, p.err = res, err
		close(p.done)
	})
}

// Wait blocks for the answer or ctx's end.
func (p *PendingPlan) Wait(ctx context.Context) (*api.PlanResult, error) {
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PlanQueue orders submitted plans by Priority (higher first), then FIFO.
type PlanQueue struct {
	mu      sync.Mutex
	enabled bool
	h       planHeap
	seq     uint64
	notify  chan struct{}
}

// NewPlanQueue returns a disabled queue.
func NewPlanQueue() *PlanQueue { return &PlanQueue{notify: make(chan struct{})} }

// SetEnabled turns the queue on or off; disabling answers every queued
// plan with ErrPlanQueueDisabled.
func (q *PlanQueue) SetEnabled(on bool) {
	q.mu.Lock()
	q.enabled = on
	var flushed planHeap
	if !on {
		flushed, q.h = q.h, nil
	}
	close(q.notify)
	q.notify = make(chan struct{})
	q.mu.Unlock()
	for _, p := range flushed {
		p.Respond(nil, ErrPlanQueueDisabled)
	}
}

// Enqueue submits a plan.
func (q *PlanQueue) Enqueue(p *api.Plan) (*PendingPlan, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.enabled {
		return nil, ErrPlanQueueDisabled
	}
	q.seq++
	pp := &PendingPlan{Plan: p, seq: q.seq, done: make(chan struct{})}
	heap.Push(&q.h, pp)
	close(q.notify)
	q.notify = make(chan struct{})
	return pp, nil
}

// Dequeue waits for the next plan.
func (q *PlanQueue) Dequeue(ctx context.Context) (*PendingPlan, error) {
	for {
		q.mu.Lock()
		if !q.enabled {
			q.mu.Unlock()
			return nil, ErrPlanQueueDisabled
		}
		if q.h.Len() > 0 {
			p := heap.Pop(&q.h).(*PendingPlan)
			q.mu.Unlock()
			return p, nil
		}
		wait := q.notify
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wait:
		}
	}
}

// Depth returns how many plans wait.
func (q *PlanQueue) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.h.Len()
}

type planHeap []*PendingPlan

func (h planHeap) Len() int { return len(h) }
func (h planHeap) Less(i, j int) bool {
	if h[i].Plan.Priority != h[j].Plan.Priority {
		return h[i].Plan.Priority > h[j].Plan.Priority
	}
	return h[i].seq < h[j].seq
}
func (h planHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *planHeap) Push(x any)   { *h = append(*h, x.(*PendingPlan)) }
func (h *planHeap) Pop() any {
	old := *h
	n := len(old)
	p := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return p
}
