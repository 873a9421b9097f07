package state

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-memdb"
)

// ErrAbandoned is returned by waits on a store that was replaced by a
// snapshot restore; re-read from the new store.
var ErrAbandoned = errors.New("state store abandoned")

// StateStore is the server's state. Writes are made by the FSM only; reads
// come from anywhere. See the package doc for the concurrency contract.
type StateStore struct {
	reads
	events *EventBroker
	// nodes are the strings allocs share (share.go).
	nodes nodeNames

	abandonOnce sync.Once
	abandonCh   chan struct{}
}

// NewStateStore returns an empty store with its own event broker.
func NewStateStore() *StateStore { return NewStateStoreWithEvents(nil) }

// NewStateStoreWithEvents returns an empty store publishing to b (nil: a new
// broker). The FSM passes the old store's broker on restore so event-stream
// subscribers survive the swap.
func NewStateStoreWithEvents(b *EventBroker) *StateStore {
	if b == nil {
		b = NewEventBroker(DefaultEventBufferSize)
	}
	ch := make(chan struct{})
	return &StateStore{reads: reads{db: newDB(), abandon: ch}, events: b, nodes: nodeNames{}, abandonCh: ch}
}

// Events returns the broker that carries this store's change events.
func (s *StateStore) Events() *EventBroker { return s.events }

// AbandonCh is closed when the store is abandoned (replaced by a restore).
func (s *StateStore) AbandonCh() <-chan struct{} { return s.abandonCh }

// Abandon marks the store as replaced, waking every blocked query.
func (s *StateStore) Abandon() { s.abandonOnce.Do(func() { close(s.abandonCh) }) }

// Snapshot returns an immutable point-in-time view (O(1)).
func (s *StateStore) Snapshot() (*Snapshot, error) {
	return &Snapshot{reads: reads{db: s.db.Snapshot(), abandon: s.abandonCh}}, nil
}

// SnapshotMinIndex waits until the store has applied at least index and
// returns a snapshot. It blocks on the index table's watch channel, never
// polls. It fails with ctx's error (wrapped) or ErrAbandoned.
func (s *StateStore) SnapshotMinIndex(ctx context.Context, index uint64) (*Snapshot, error) {
	if err := s.WaitIndex(ctx, index); err != nil {
		return nil, err
	}
	return s.Snapshot()
}

// WaitIndex waits until the store has applied at least index, as
// SnapshotMinIndex does.
func (s *StateStore) WaitIndex(ctx context.Context, index uint64) error {
	for {
		ws := memdb.NewWatchSet()
		if s.LatestIndexWatch(ws) >= index {
			return nil
		}
		ws.Add(s.abandonCh)
		if err := ws.WatchCtx(ctx); err != nil {
			return fmt.Errorf("wait for state index %d: %w", index, err)
		}
		select {
		case <-s.abandonCh:
			return fmt.Errorf("wait for state index %d: %w", index, ErrAbandoned)
		default:
		}
	}
}

// IndexApplied is the index-table key MarkApplied sets.
const IndexApplied = "applied"

// MarkApplied records that a Raft entry at index was applied although it
// changed nothing (it failed), so LatestIndex and SnapshotMinIndex still
// advance to it. No other table changes; no event is published.
func (s *StateStore) MarkApplied(index uint64) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	if err := txn.Insert(TableIndex, &IndexEntry{Key: IndexApplied, Value: index}); err != nil {
		return fmt.Errorf("mark index %d applied: %w", index, err)
	}
	txn.Commit()
	return nil
}

// Snapshot is an immutable point-in-time view of the store. It has the same
// read methods as StateStore; Scheduler adapts it to scheduler.State.
type Snapshot struct {
	reads
}
