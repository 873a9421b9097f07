package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// fired reports whether any channel of ws is closed. memdb closes watch
// channels synchronously in Commit, so right after a write returns the
// answer is final: no waiting either way.
func fired(ws memdb.WatchSet) bool {
	for ch := range ws {
		select {
		case <-ch:
			return true
		default:
		}
	}
	return false
}

func TestWatchSetFiresOnRelevantWriteOnly(t *testing.T) {
	tests := []struct {
		name  string
		read  func(s *StateStore, ws memdb.WatchSet)
		write func(s *StateStore) error
		fire  bool
	}{
		{"job read, job written",
			func(s *StateStore, ws memdb.WatchSet) { s.JobByID(ws, "", "web") },
			func(s *StateStore) error { return s.UpsertJob(10, testJob("web")) }, true},
		{"job read, node written",
			func(s *StateStore, ws memdb.WatchSet) { s.JobByID(ws, "", "web") },
			func(s *StateStore) error { return s.UpsertNode(10, testNode("n9")) }, false},
		{"node allocs read, alloc placed on it",
			func(s *StateStore, ws memdb.WatchSet) { s.AllocsByNode(ws, "n1") },
			func(s *StateStore) error { return s.UpsertAllocs(10, []*api.Allocation{testAlloc("a2", "web", "n1")}) }, true},
		{"node allocs read, eval written",
			func(s *StateStore, ws memdb.WatchSet) { s.AllocsByNode(ws, "n1") },
			func(s *StateStore) error { return s.UpsertEvals(10, []*api.Evaluation{testEval("e9", "web")}) }, false},
		{"evals list read, eval written",
			func(s *StateStore, ws memdb.WatchSet) { s.Evals(ws, "", "") },
			func(s *StateStore) error { return s.UpsertEvals(10, []*api.Evaluation{testEval("e9", "web")}) }, true},
		{"node read, status changed",
			func(s *StateStore, ws memdb.WatchSet) { s.NodeByID(ws, "n1") },
			func(s *StateStore) error { return s.UpdateNodeStatus(10, "n1", api.NodeStatusDown, 1, nil) }, true},
		{"deployment read, deployment upserted",
			func(s *StateStore, ws memdb.WatchSet) { s.DeploymentsByJobID(ws, "", "web") },
			func(s *StateStore) error { return s.UpsertDeployment(10, &api.Deployment{ID: "d", JobID: "web"}) }, true},
		{"nodes index read, job written",
			func(s *StateStore, ws memdb.WatchSet) { s.IndexWatch(ws, TableNodes) },
			func(s *StateStore) error { return s.UpsertJob(10, testJob("web")) }, false},
		{"abandon wakes every read",
			func(s *StateStore, ws memdb.WatchSet) { s.JobByID(ws, "", "web") },
			func(s *StateStore) error { s.Abandon(); return nil }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStateStore()
			must(t, s.UpsertNode(1, testNode("n1")))
			must(t, s.UpsertAllocs(2, []*api.Allocation{testAlloc("a1", "web", "n1")}))
			ws := memdb.NewWatchSet()
			tt.read(s, ws)
			if fired(ws) {
				t.Fatal("fired before the write")
			}
			must(t, tt.write(s))
			if got := fired(ws); got != tt.fire {
				t.Errorf("fired: got %v, want %v", got, tt.fire)
			}
		})
	}
}

func TestSnapshotIsImmutable(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	snap, err := s.Snapshot()
	must(t, err)
	must(t, s.UpsertJob(2, testJob("api")))
	must(t, s.DeleteJob(3, "", "web"))
	if j := mustGet[api.Job](t)(snap.JobByID(nil, "", "web")); j == nil {
		t.Error("snapshot lost a job deleted later")
	}
	if j := mustGet[api.Job](t)(snap.JobByID(nil, "", "api")); j != nil {
		t.Error("snapshot sees a later job")
	}
	if g := snap.LatestIndex(); g != 1 {
		t.Errorf("snapshot index: got %d, want 1", g)
	}
	v := snap.Scheduler()
	if v.Index() != 1 {
		t.Errorf("scheduler view index: got %d", v.Index())
	}
	if j, _ := v.JobByID("default", "web"); j == nil {
		t.Error("scheduler view: job missing")
	}
}

func TestSnapshotMinIndex(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(5, testJob("web")))

	snap, err := s.SnapshotMinIndex(context.Background(), 5)
	must(t, err)
	if snap.LatestIndex() != 5 {
		t.Errorf("got %d", snap.LatestIndex())
	}

	type result struct {
		snap *Snapshot
		err  error
	}
	done := make(chan result, 1)
	go func() {
		sn, err := s.SnapshotMinIndex(context.Background(), 7)
		done <- result{sn, err}
	}()
	must(t, s.UpsertJob(6, testJob("a")))
	must(t, s.UpsertJob(7, testJob("b")))
	select {
	case r := <-done:
		must(t, r.err)
		if r.snap.LatestIndex() < 7 {
			t.Errorf("snapshot at %d, want >= 7", r.snap.LatestIndex())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SnapshotMinIndex did not wake on the write")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.SnapshotMinIndex(ctx, 100); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
	go s.Abandon()
	if _, err := s.SnapshotMinIndex(context.Background(), 100); !errors.Is(err, ErrAbandoned) {
		t.Errorf("abandoned: got %v", err)
	}
}
