package clientstate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// TestOpenMovesLegacyFile: a state file at the old place
// (<dir>/client/state.db) is moved to <dir>/state.db with its contents;
// when both exist the new one wins and the old one is left alone.
func TestOpenMovesLegacyFile(t *testing.T) {
	dir := t.TempDir()
	legacyDir := filepath.Join(dir, "client")
	old, err := Open(legacyDir) // writes legacyDir/state.db: the old layout of dir
	if err != nil {
		t.Fatal(err)
	}
	if err := old.PutIdentity(&Identity{NodeID: "n-old", SecretID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := db.Identity()
	if err != nil || id.NodeID != "n-old" {
		t.Errorf("identity after the move = %+v, %v; want n-old", id, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err != nil {
		t.Errorf("new state file: %v", err)
	}
	if _, err := os.Stat(legacyDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("legacy dir after the move: stat err = %v, want it removed", err)
	}

	// Both present: the new file is used, the old one untouched.
	stale, err := Open(legacyDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := stale.PutIdentity(&Identity{NodeID: "n-stale"}); err != nil {
		t.Fatal(err)
	}
	stale.Close()
	db, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if id, err := db.Identity(); err != nil || id.NodeID != "n-old" {
		t.Errorf("identity with both files = %+v, %v; want the new file's n-old", id, err)
	}
	if _, err := os.Stat(filepath.Join(legacyDir, "state.db")); err != nil {
		t.Errorf("legacy file with both present: %v, want it left alone", err)
	}
}
