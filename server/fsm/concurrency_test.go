package fsm

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
	"github.com/google/go-cmp/cmp"
)

type restoreHooks struct {
	recHooks
	restored *state.StateStore
}

func (h *restoreHooks) StateRestored(s *state.StateStore) { h.restored = s }

// TestPersistWhileApplying: Raft persists a snapshot while Apply goes on;
// the snapshot must hold exactly the state at the moment it was taken.
func TestPersistWhileApplying(t *testing.T) {
	f := populated(t)
	a := &applier{t: t, f: f, index: f.State().LatestIndex()}
	want := tables(t, f.State())
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := snap.Persist(sink); err != nil {
			t.Error(err)
		}
	}()
	for i := 0; i < 50; i++ {
		a.mustApply(AllocUpsertType, AllocUpsertRequest{Allocs: []*api.Allocation{alloc(fmt.Sprintf("c%d", i), "web", "n1")}})
	}
	wg.Wait()

	hooks := &restoreHooks{}
	dst := New(Config{Hooks: hooks})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, tables(t, dst.State())); diff != "" {
		t.Errorf("snapshot is not the state when taken (-want +got):\n%s", diff)
	}
	if hooks.restored != dst.State() {
		t.Error("restore hook not called with the new store")
	}
}
