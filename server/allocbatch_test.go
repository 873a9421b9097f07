package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// TestAllocUpdateBatcher: updates that arrive while entries are in Raft
// gather into one entry (at most maxAllocUpdateBatch allocs), every
// caller gets its entry's index or error, and nothing is applied twice
// or dropped.
func TestAllocUpdateBatcher(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var entries [][]*api.Allocation
	calls := 0
	b := &allocUpdateBatcher{apply: func(_ context.Context, allocs []*api.Allocation, _ []*api.Evaluation) (uint64, error) {
		mu.Lock()
		calls++
		first := calls <= allocUpdateCommits
		entries = append(entries, allocs)
		idx := uint64(len(entries))
		mu.Unlock()
		if first {
			<-release // the first entries stay in "Raft" until every caller queued
		}
		if allocs[0].ID == "fail" {
			return 0, errors.New("entry failed")
		}
		return idx, nil
	}}
	ctx := context.Background()
	// Fill every commit slot with one blocked entry each, one by one (a
	// caller arriving before the last entry left the queue joins it).
	var wg sync.WaitGroup
	for i := range allocUpdateCommits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.submit(ctx, []*api.Allocation{{ID: fmt.Sprintf("head-%d", i)}}, nil); err != nil {
				t.Errorf("head %d: %v", i, err)
			}
		}()
		testproc.Eventually(t, 15*time.Second, "a commit slot busy", func() bool { mu.Lock(); defer mu.Unlock(); return calls == i+1 })
	}
	// These queue: 300 callers of 10 allocs gather into ceil(3000/cap) entries.
	const callers, each = 300, 10
	idxs := make([]uint64, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			allocs := make([]*api.Allocation, each)
			for k := range allocs {
				allocs[k] = &api.Allocation{ID: fmt.Sprintf("a-%d-%d", i, k)}
			}
			idx, err := b.submit(ctx, allocs, nil)
			if err != nil {
				t.Errorf("caller %d: %v", i, err)
			}
			idxs[i] = idx
		}()
	}
	testproc.Eventually(t, 15*time.Second, "every caller queued", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		n := 0
		for _, q := range b.queue {
			n += len(q.allocs)
		}
		return n == callers*each
	})
	close(release)
	wg.Wait()

	seen := map[string]int{}
	for i, e := range entries {
		if len(e) > maxAllocUpdateBatch {
			t.Errorf("entry %d holds %d allocs, want at most %d", i, len(e), maxAllocUpdateBatch)
		}
		for _, a := range e {
			seen[a.ID]++
		}
	}
	if len(seen) != callers*each+allocUpdateCommits {
		t.Errorf("%d distinct allocs applied, want %d", len(seen), callers*each+allocUpdateCommits)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("alloc %s applied %d times", id, n)
		}
	}
	want := allocUpdateCommits + (callers*each+maxAllocUpdateBatch-1)/maxAllocUpdateBatch
	if len(entries) != want {
		t.Errorf("%d entries for %d callers, want %d (batched)", len(entries), callers+allocUpdateCommits, want)
	}
	for i, idx := range idxs {
		if idx <= allocUpdateCommits || int(idx) > len(entries) {
			t.Errorf("caller %d got index %d, want one of the batched entries", i, idx)
		}
	}

	// A failed entry fails its callers only.
	if _, err := b.submit(ctx, []*api.Allocation{{ID: "fail"}}, nil); err == nil {
		t.Error("a failed entry answered its caller without error")
	}
	if idx, err := b.submit(ctx, []*api.Allocation{{ID: "ok"}}, nil); err != nil || idx == 0 {
		t.Errorf("after a failed entry: %d, %v; want the next entry's index", idx, err)
	}
}
