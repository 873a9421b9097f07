package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// dumpTables renders every table of the current state as JSON, table by
// table in Persist's order.
func dumpTables(t *testing.T, s *Server) map[string][]string {
	t.Helper()
	snap, err := s.State().Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	err = snap.Persist(func(table string, obj any) error {
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		out[table] = append(out[table], string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// quiescentSave saves a snapshot whose index equals the state dumped
// just before (the workers may still be writing: retry until stable).
func quiescentSave(t *testing.T, s *Server) (map[string][]string, []byte) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-s.BrokerIdle(): // no eval ready or in flight: no plan queued either
		case <-deadline:
			t.Fatal("state never stood still long enough to save a snapshot")
		}
		before := s.State().LatestIndex()
		dump := dumpTables(t, s)
		var buf bytes.Buffer
		idx, err := s.Operator().SaveSnapshot(context.Background(), &buf)
		if err != nil {
			t.Fatalf("SaveSnapshot: %v", err)
		}
		if idx == before && s.State().LatestIndex() == before {
			return dump, buf.Bytes()
		}
	}
}

func TestSnapshotSaveRestoreExact(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("n1", 4000, 8192))
	registerJob(t, s, testJob("keep", 2, 500, 256))
	waitLive(t, s, "keep", 2)
	registerJob(t, s, testJob("gone", 1, 500, 256))
	waitLive(t, s, "gone", 1)

	want, file := quiescentSave(t, s)
	if len(want[state.TableJobs]) != 2 || len(want[state.TableAllocs]) != 3 || len(want[state.TableNodes]) != 1 {
		t.Fatalf("saved state has %d jobs, %d allocs, %d nodes; want 2, 3, 1",
			len(want[state.TableJobs]), len(want[state.TableAllocs]), len(want[state.TableNodes]))
	}

	// Change the state after the save: a new job, a purged one.
	registerJob(t, s, testJob("later", 1, 500, 256))
	waitLive(t, s, "later", 1)
	if _, err := s.Jobs().DeregisterJob(ctx, api.DefaultNamespace, "gone", true); err != nil {
		t.Fatal(err)
	}

	// Bad files are refused and change nothing (compared when no worker
	// wrote meanwhile).
	bad := map[string][]byte{
		"empty":     nil,
		"not ours":  []byte("{\"Format\":\"zip\"}\n"),
		"truncated": file[:len(file)-10],
		"corrupt":   append(append([]byte(nil), file[:len(file)-1]...), file[len(file)-1]^0xff),
		"trailing":  append(append([]byte(nil), file...), 'x'),
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		idx := s.State().LatestIndex()
		changed := dumpTables(t, s)
		for name, b := range bad {
			_, err := s.Operator().RestoreSnapshot(ctx, bytes.NewReader(b))
			if !errors.Is(err, ErrBadSnapshotFile) || !errors.Is(err, api.ErrBadRequest) {
				t.Errorf("restore %s file: err = %v, want ErrBadSnapshotFile (bad_request)", name, err)
			}
		}
		if s.State().LatestIndex() != idx {
			if time.Now().After(deadline) {
				t.Fatal("state never stood still")
			}
			continue
		}
		if diff := cmp.Diff(changed, dumpTables(t, s)); diff != "" {
			t.Fatalf("a refused restore changed the state (-before +after):\n%s", diff)
		}
		break
	}

	if _, err := s.Operator().RestoreSnapshot(ctx, bytes.NewReader(file)); err != nil {
		t.Fatalf("RestoreSnapshot: %v", err)
	}
	if diff := cmp.Diff(want, dumpTables(t, s)); diff != "" {
		t.Fatalf("restored state differs from the saved one (-saved +restored):\n%s", diff)
	}

	// Leader duties run on the restored state: a new job is placed.
	waitLeader(t, s)
	registerJob(t, s, testJob("after", 1, 500, 256))
	waitLive(t, s, "after", 1)
}

func TestBootstrapConfigurationDeterministic(t *testing.T) {
	a := []Member{{ID: "c", RaftAddr: "h:3"}, {ID: "a", RaftAddr: "h:1"}, {ID: "b", RaftAddr: "h:2"}}
	b := []Member{a[2], a[0], a[1]}
	ca, cb := bootstrapConfiguration(a), bootstrapConfiguration(b)
	if diff := cmp.Diff(ca, cb); diff != "" {
		t.Fatalf("configurations differ by member order:\n%s", diff)
	}
	var ids []string
	for _, s := range ca.Servers {
		ids = append(ids, string(s.ID))
		if s.Suffrage.String() != "Voter" {
			t.Errorf("server %s is %v, want Voter", s.ID, s.Suffrage)
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ids); diff != "" {
		t.Errorf("voter IDs (-want +got):\n%s", diff)
	}
}
