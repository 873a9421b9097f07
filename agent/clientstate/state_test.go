package clientstate

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

func TestRoundTripAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Identity(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Identity on empty db: err = %v, want ErrNotFound", err)
	}
	id := &Identity{NodeID: "n1", SecretID: "s1"}
	alloc := &api.Allocation{ID: "a1", Name: "j.g[0]", DesiredStatus: "run", Job: &api.Job{ID: "j"}}
	rec := &TaskRecord{
		State:        &api.TaskState{State: api.TaskStateRunning, Restarts: 2, Events: []*api.TaskEvent{{Type: api.TaskStarted, Time: 5}}},
		Handle:       &drivers.TaskHandle{Version: 1, DriverState: []byte(`{"pid":42}`), StartedAt: time.Unix(10, 0).UTC(), Config: &drivers.TaskConfig{ID: "a1/web/1", Name: "web"}},
		RestartCount: 2, RestartWindowStart: time.Unix(3, 0).UTC(),
	}
	if err := db.PutIdentity(id); err != nil {
		t.Fatal(err)
	}
	if err := db.PutAlloc(alloc); err != nil {
		t.Fatal(err)
	}
	if err := db.PutTask("a1", "web", rec); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	gotID, err := db.Identity()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(id, gotID); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
	allocs, err := db.Allocs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]*api.Allocation{alloc}, allocs); diff != "" {
		t.Errorf("allocs (-want +got):\n%s", diff)
	}
	gotRec, err := db.Task("a1", "web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, gotRec); diff != "" {
		t.Errorf("task record (-want +got):\n%s", diff)
	}
	if err := db.DeleteAlloc("a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Task("a1", "web"); !errors.Is(err, ErrNotFound) {
		t.Errorf("task after DeleteAlloc: err = %v, want ErrNotFound", err)
	}
	if allocs, _ := db.Allocs(); len(allocs) != 0 {
		t.Errorf("allocs after delete = %d, want 0", len(allocs))
	}
}
