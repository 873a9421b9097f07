package server

import (
	"context"
	"sync"

	"github.com/drover/drover/api"
)

// maxAllocUpdateBatch bounds the alloc updates of one Raft entry; more
// go to the next. The callers of an entry wait for all of it: with 8,192
// an entry and one entry in Raft at a time, allocs at 10,000 simulated
// nodes read running 6-9 s after they were placed; with 1,024 and
// allocUpdateCommits entries, ~2 s.
const maxAllocUpdateBatch = 1024

// allocUpdateCommits is how many entries may be in Raft at once, so one
// entry's log write and fsync overlap another's apply.
const allocUpdateCommits = 8

// allocUpdateBatcher group-commits the clients' alloc status updates (as
// Nomad batches Node.UpdateAlloc). An idle server commits an update at
// once; while allocUpdateCommits entries are in Raft, the updates that
// arrive gather into the next entry, committed as soon as one returns.
// A busy server so writes one entry per Raft round trip instead of one
// per client request, each with its own fsync, log append and
// state-store commit (at 10,000 simulated nodes, ~1,100 entries in 15 s,
// most alone in their fsync, in the leader loop the plans wait behind).
// Every caller is answered after its entry committed, with that entry's
// error.
type allocUpdateBatcher struct {
	apply func(ctx context.Context, allocs []*api.Allocation, evals []*api.Evaluation) (uint64, error)

	mu      sync.Mutex
	queue   []*allocUpdateBatch // gathering; the first is committed next
	running int                 // goroutines committing the queue
}

// allocUpdateBatch is one Raft entry's updates and the callers waiting on it.
type allocUpdateBatch struct {
	allocs []*api.Allocation
	evals  []*api.Evaluation
	done   chan struct{} // closed once index and err are set
	index  uint64
	err    error
}

// submit adds the updates (and their evals) to the gathering entry and
// waits until it committed, or ctx ends (the entry may still commit:
// client updates may be sent again).
func (b *allocUpdateBatcher) submit(ctx context.Context, allocs []*api.Allocation, evals []*api.Evaluation) (uint64, error) {
	b.mu.Lock()
	var cur *allocUpdateBatch
	if n := len(b.queue); n > 0 && len(b.queue[n-1].allocs)+len(allocs) <= maxAllocUpdateBatch {
		cur = b.queue[n-1]
	} else {
		cur = &allocUpdateBatch{done: make(chan struct{})}
		b.queue = append(b.queue, cur)
	}
	cur.allocs = append(cur.allocs, allocs...)
	cur.evals = append(cur.evals, evals...)
	if b.running < allocUpdateCommits {
		b.running++
		go b.run()
	}
	b.mu.Unlock()
	select {
	case <-cur.done:
		return cur.index, cur.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run commits queued entries, oldest first, until none is left.
func (b *allocUpdateBatcher) run() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		cur := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.mu.Unlock()
		// Not a caller's context: the entry serves every caller in it
		// (raftApply bounds it by RaftApplyTimeout).
		cur.index, cur.err = b.apply(context.Background(), cur.allocs, cur.evals)
		close(cur.done)
	}
}
