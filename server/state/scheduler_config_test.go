package state

import (
	"errors"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-memdb"
)

func TestSchedulerConfigSingletonAndWatch(t *testing.T) {
	s := NewStateStore()
	ws := memdb.NewWatchSet()
	if got, err := s.SchedulerConfig(ws); err != nil || got != nil {
		t.Fatalf("empty store: got %+v, %v, want nil", got, err)
	}
	snapBefore, _ := s.Snapshot()
	if err := s.SetSchedulerConfig(5, &api.SchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmSpread}, false, 0); err != nil {
		t.Fatal(err)
	}
	if !fired(ws) {
		t.Error("watch on the scheduler config did not fire on a write")
	}
	if got, _ := snapBefore.SchedulerConfig(nil); got != nil {
		t.Errorf("an older snapshot sees the new config: %+v", got)
	}
	ws = memdb.NewWatchSet()
	s.SchedulerConfig(ws)
	if err := s.UpsertNode(6, testNode("n1")); err != nil {
		t.Fatal(err)
	}
	if fired(ws) {
		t.Error("watch on the scheduler config fired on a node write")
	}
	// CAS at 0 on an existing config fails; the singleton stays one row.
	if err := s.SetSchedulerConfig(7, api.DefaultSchedulerConfiguration(), true, 0); !errors.Is(err, api.ErrIndexConflict) {
		t.Errorf("CAS 0 over a stored config: got %v, want ErrIndexConflict", err)
	}
	if err := s.SetSchedulerConfig(8, api.DefaultSchedulerConfiguration(), true, 5); err != nil {
		t.Fatal(err)
	}
	rows := 0
	snap, _ := s.Snapshot()
	_ = snap.Persist(func(table string, _ any) error {
		if table == TableSchedulerConfig {
			rows++
		}
		return nil
	})
	if rows != 1 {
		t.Errorf("scheduler config rows: got %d, want 1", rows)
	}
	want := api.DefaultSchedulerConfiguration()
	want.CreateIndex, want.ModifyIndex = 5, 8
	got, _ := s.SchedulerConfig(nil)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
}
