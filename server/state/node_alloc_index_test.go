package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// TestNodeAllocIndex: the row of a node moves when the servers place,
// stop or update one of its allocs, not when its client reports a status;
// a restore rebuilds it from the allocs; deleting the node deletes it.
func TestNodeAllocIndex(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertNode(1, testNode("n1")))
	must(t, s.UpsertNode(2, testNode("n2")))
	must(t, s.UpsertNode(3, testNode("n3")))
	must(t, s.UpsertJob(4, testJob("web")))
	at := func(node string) uint64 {
		t.Helper()
		idx, err := s.NodeAllocIndex(nil, node)
		must(t, err)
		return idx
	}
	if got := at("n1"); got != 0 {
		t.Fatalf("n1 before any alloc: %d, want 0", got)
	}
	// n3 never gets an alloc: its poll must not wake when the others get
	// their first (it watches its own row, not the tree above a missing one).
	ws3 := memdb.NewWatchSet()
	_, err := s.NodeAllocIndex(ws3, "n3")
	must(t, err)
	a1, a2 := testAlloc("a1", "web", "n1"), testAlloc("a2", "web", "n2")
	must(t, s.UpsertPlanResults(10, &ApplyPlanResultsRequest{AllocsPlaced: []*api.Allocation{a1, a2}}))
	if at("n1") != 10 || at("n2") != 10 || at("n3") != 0 {
		t.Fatalf("after placing: n1 %d, n2 %d, n3 %d, want 10, 10, 0", at("n1"), at("n2"), at("n3"))
	}
	if fired(ws3) {
		t.Fatal("placing on n1 and n2 woke the empty n3's watch")
	}
	ws := memdb.NewWatchSet()
	_, err = s.NodeAllocIndex(ws, "n1")
	must(t, err)
	must(t, s.UpdateAllocsFromClient(11, []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusRunning}}))
	if at("n1") != 10 || fired(ws) {
		t.Fatalf("the client's report moved n1 to %d (watch fired: %v), want 10 and no wake-up", at("n1"), fired(ws))
	}
	must(t, s.UpsertPlanResults(12, &ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{{ID: "a1"}}}))
	if at("n1") != 12 || at("n2") != 10 || !fired(ws) {
		t.Fatalf("after stopping a1: n1 %d, n2 %d (watch fired: %v), want 12, 10, fired", at("n1"), at("n2"), fired(ws))
	}

	snap, err := s.Snapshot()
	must(t, err)
	r := NewStateStore()
	res := r.Restore()
	must(t, snap.Persist(func(table string, obj any) error {
		switch table {
		case TableAllocs:
			return res.Alloc(obj.(*api.Allocation))
		case TableNodes:
			return res.Node(obj.(*api.Node))
		}
		return nil
	}))
	res.Commit()
	for node, want := range map[string]uint64{"n1": 12, "n2": 10, "n3": 0} {
		if got, err := r.NodeAllocIndex(nil, node); err != nil || got != want {
			t.Errorf("restored %s: %d, %v; want %d", node, got, err, want)
		}
	}
	if row, err := first[NodeAllocIndex](&r.reads, nil, TableNodeAllocIndex, "id", "n3"); err != nil || row == nil {
		t.Errorf("restored n3 has no row (%v): its poll would watch the tree above it", err)
	}

	must(t, s.DeleteNode(13, []string{"n2"}))
	if row, err := first[NodeAllocIndex](&s.reads, nil, TableNodeAllocIndex, "id", "n2"); err != nil || row != nil {
		t.Errorf("deleted n2's row: %+v (%v), want none", row, err)
	}
}
