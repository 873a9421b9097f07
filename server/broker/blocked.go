package broker

import (
	"sync"

	"github.com/drover/drover/api"
)

// BlockedStats counts blocked evals.
type BlockedStats struct {
	TotalBlocked int
	TotalEscaped int
}

// BlockedEvals tracks evals that could not place everything. One blocked
// eval is kept per job (the newest by CreateIndex wins; the older one is
// handed to OnDuplicate to be cancelled). Capacity changes unblock them
// into the broker:
//
//   - Unblock(class, index): a node of computed class `class` changed. An
//     eval is woken unless its ClassEligibility says the class is
//     ineligible; evals that escaped class tracking (EscapedComputedClass)
//     wake on any change.
//   - UnblockAll(index): wake everything (a node joined with a new class,
//     resources freed everywhere...).
//
// A change seen before an eval was blocked (the eval's SnapshotIndex is
// older than the class's last unblock index) wakes it immediately, so a
// race between the scheduler's snapshot and a capacity change never
// strands an eval.
type BlockedEvals struct {
	mu      sync.Mutex
	enabled bool
	// enqueue receives unblocked evals (the broker's Enqueue).
	enqueue     func(*api.Evaluation)
	onDuplicate func(*api.Evaluation)

	byJob map[jobKey]*api.Evaluation
	// unblockIndexes: last index at which each class (and "" for
	// UnblockAll) was unblocked.
	unblockIndexes map[string]uint64
	allIndex       uint64
}

// NewBlockedEvals returns a disabled tracker. enqueue is called (without
// locks) with each unblocked eval; onDuplicate (may be nil) with a blocked
// eval superseded by a newer one of the same job.
func NewBlockedEvals(enqueue, onDuplicate func(*api.Evaluation)) *BlockedEvals {
	b := &BlockedEvals{enqueue: enqueue, onDuplicate: onDuplicate}
	b.reset()
	return b
}

func (b *BlockedEvals) reset() {
	b.byJob = map[jobKey]*api.Evaluation{}
	b.unblockIndexes = map[string]uint64{}
	b.allIndex = 0
}

// SetEnabled turns tracking on (leader) or off, flushing everything.
func (b *BlockedEvals) SetEnabled(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.enabled == on {
		return
	}
	b.enabled = on
	b.reset()
}

// Block tracks an eval (status blocked).
func (b *BlockedEvals) Block(e *api.Evaluation) {
	var wake, dup *api.Evaluation
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	k := jobKey{e.Namespace, e.JobID}
	if old, ok := b.byJob[k]; ok {
		if old.ID == e.ID {
			b.mu.Unlock()
			return
		}
		if old.CreateIndex > e.CreateIndex {
			// A newer one is already tracked: this one is the duplicate.
			b.mu.Unlock()
			if b.onDuplicate != nil {
				b.onDuplicate(e)
			}
			return
		}
		dup = old
		delete(b.byJob, k)
	}
	if b.missedUnblockLocked(e) {
		wake = e
	} else {
		b.byJob[k] = e
	}
	b.mu.Unlock()
	if dup != nil && b.onDuplicate != nil {
		b.onDuplicate(dup)
	}
	if wake != nil {
		b.enqueue(wake)
	}
}

// missedUnblockLocked reports whether a capacity change relevant to e
// happened after the snapshot e was computed on.
func (b *BlockedEvals) missedUnblockLocked(e *api.Evaluation) bool {
	snap := e.SnapshotIndex
	if snap == 0 {
		snap = e.ModifyIndex
	}
	if b.allIndex > snap {
		return true
	}
	for class, idx := range b.unblockIndexes {
		if idx <= snap {
			continue
		}
		if e.EscapedComputedClass {
			return true
		}
		if elig, ok := e.ClassEligibility[class]; !ok || elig {
			return true
		}
	}
	return false
}

// Unblock wakes the evals that may now fit on a node of computed class
// class, at Raft index index.
func (b *BlockedEvals) Unblock(class string, index uint64) {
	var wake []*api.Evaluation
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	if index > b.unblockIndexes[class] {
		b.unblockIndexes[class] = index
	}
	for k, e := range b.byJob {
		if !e.EscapedComputedClass {
			if elig, ok := e.ClassEligibility[class]; ok && !elig {
				continue
			}
		}
		wake = append(wake, e)
		delete(b.byJob, k)
	}
	b.mu.Unlock()
	for _, e := range wake {
		b.enqueue(e)
	}
}

// UnblockAll wakes every blocked eval.
func (b *BlockedEvals) UnblockAll(index uint64) {
	var wake []*api.Evaluation
	b.mu.Lock()
	if !b.enabled {
		b.mu.Unlock()
		return
	}
	if index > b.allIndex {
		b.allIndex = index
	}
	for k, e := range b.byJob {
		wake = append(wake, e)
		delete(b.byJob, k)
	}
	b.mu.Unlock()
	for _, e := range wake {
		b.enqueue(e)
	}
}

// Untrack drops the blocked eval of a job (the job was deregistered or a
// newer eval of it made progress) and returns it, or nil.
func (b *BlockedEvals) Untrack(namespace, jobID string) *api.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := jobKey{namespace, jobID}
	e := b.byJob[k]
	delete(b.byJob, k)
	return e
}

// Blocked returns the tracked eval of a job, or nil.
func (b *BlockedEvals) Blocked(namespace, jobID string) *api.Evaluation {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byJob[jobKey{namespace, jobID}]
}

// Stats returns the counts.
func (b *BlockedEvals) Stats() BlockedStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BlockedStats{TotalBlocked: len(b.byJob)}
	for _, e := range b.byJob {
		if e.EscapedComputedClass {
			s.TotalEscaped++
		}
	}
	return s
}

// Each calls fn with every tracked blocked eval (under the tracker's
// lock: fn must not call the tracker).
func (b *BlockedEvals) Each(fn func(*api.Evaluation)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.byJob {
		fn(e)
	}
}
