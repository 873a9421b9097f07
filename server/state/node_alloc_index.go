package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// TableNodeAllocIndex holds, per node, the last Raft index at which the
// servers changed one of its allocs: placed one, updated one in place,
// stopped, evicted or marked one lost (what moves an alloc's
// AllocModifyIndex). A node's client-allocs long poll waits on its row
// alone, so a status the client reported itself, which moves no row,
// wakes no poll (at 10,000 simulated nodes every running report woke its
// node's poll for nothing). Derived state: not in snapshots, rebuilt
// from the allocs on restore; a deleted node's row goes with it.
//
// Every node has a row from its registration on (Index 0 until the
// servers change one of its allocs): a lookup of a missing key watches
// the radix node above it, which every other node's first placement
// fires. Bin packing leaves many nodes empty, and before the rows existed
// each plan woke thousands of their polls for nothing (in the whole-path
// benchmark at 10,000 nodes, 110,000 of 123,000 wake-ups).
const TableNodeAllocIndex = "node_alloc_index"

// NodeAllocIndex is a row of TableNodeAllocIndex.
type NodeAllocIndex struct {
	NodeID string
	Index  uint64
}

func nodeAllocIndexTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNodeAllocIndex, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true, Indexer: str("NodeID")},
	}}
}

// NodeAllocIndex returns the last index at which the servers changed an
// alloc of the node (0: never), watched in ws.
func (r *reads) NodeAllocIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	row, err := first[NodeAllocIndex](r, ws, TableNodeAllocIndex, "id", nodeID)
	if err != nil || row == nil {
		return 0, err
	}
	return row.Index, nil
}

// touchNodeAllocs notes that a was written; when the servers changed it
// (a new AllocModifyIndex), its node's row moves to this index at the end
// of the transaction.
func (t *Txn) touchNodeAllocs(old, a *api.Allocation) {
	if a.NodeID == "" || (old != nil && old.AllocModifyIndex == a.AllocModifyIndex && old.NodeID == a.NodeID) {
		return
	}
	if t.nodeAllocs == nil {
		t.nodeAllocs = map[string]struct{}{}
	}
	t.nodeAllocs[a.NodeID] = struct{}{}
}

// writeNodeAllocIndexes writes the rows of the nodes touchNodeAllocs noted.
func (t *Txn) writeNodeAllocIndexes() error {
	for id := range t.nodeAllocs {
		if err := t.insert(TableNodeAllocIndex, &NodeAllocIndex{NodeID: id, Index: t.index}); err != nil {
			return err
		}
	}
	return nil
}

// ensureNodeAllocRow gives a node its row (Index 0) when it has none.
func ensureNodeAllocRow(txn *memdb.Txn, nodeID string) (inserted bool, err error) {
	raw, err := txn.First(TableNodeAllocIndex, "id", nodeID)
	if err != nil || raw != nil {
		return false, err
	}
	if err := txn.Insert(TableNodeAllocIndex, &NodeAllocIndex{NodeID: nodeID}); err != nil {
		return false, fmt.Errorf("insert into %s: %w", TableNodeAllocIndex, err)
	}
	return true, nil
}

// nodeAllocIndexOnRestore raises a's node's row to a's AllocModifyIndex.
func (r *Restore) nodeAllocIndexOnRestore(a *api.Allocation) error {
	if a.NodeID == "" {
		return nil
	}
	raw, err := r.txn.First(TableNodeAllocIndex, "id", a.NodeID)
	if err != nil {
		return fmt.Errorf("restore %s: %w", TableNodeAllocIndex, err)
	}
	if row, _ := raw.(*NodeAllocIndex); row != nil && row.Index >= a.AllocModifyIndex {
		return nil
	}
	return r.put(TableNodeAllocIndex, &NodeAllocIndex{NodeID: a.NodeID, Index: a.AllocModifyIndex})
}
