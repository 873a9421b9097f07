package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

// Namespaces go through Raft entries (all or none) and snapshots; the
// default namespace exists without being stored and can't be deleted.
func TestApplyAndSnapshotNamespaces(t *testing.T) {
	src := populated(t)
	a := &applier{t: t, f: src, index: src.State().LatestIndex()}
	if got, _ := src.State().NamespaceByName(nil, api.DefaultNamespace); got == nil {
		t.Fatal("no default namespace")
	}
	a.mustApply(NamespaceUpsertType, NamespaceUpsertRequest{Namespaces: []*api.Namespace{
		{Name: "prod", Description: "production", Meta: map[string]string{"tier": "1"}}, {Name: "tmp"}}})
	if err := a.apply(NamespaceUpsertType, NamespaceUpsertRequest{Namespaces: []*api.Namespace{{Name: "ok"}, {Name: "bad name"}}}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("upsert with a bad name: %v", err)
	}
	if err := a.apply(NamespaceUpsertType, NamespaceUpsertRequest{Namespaces: []*api.Namespace{{Name: "q", Queue: "missing"}}}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("upsert with a missing queue: %v", err)
	}
	a.mustApply(NamespaceDeleteType, NamespaceDeleteRequest{Names: []string{"tmp"}})
	for name, want := range map[string]error{"tmp": api.ErrNotFound, api.DefaultNamespace: api.ErrBadRequest} {
		if err := a.apply(NamespaceDeleteType, NamespaceDeleteRequest{Names: []string{name}}); !errors.Is(err, want) {
			t.Errorf("delete %s: %v, want %v", name, err, want)
		}
	}
	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	want, _ := src.State().Namespaces(nil, "")
	got, _ := dst.State().Namespaces(nil, "")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored namespaces (-want +got):\n%s", diff)
	}
	if len(got) != 2 || got[1].Name != "prod" || got[1].Meta["tier"] != "1" {
		t.Errorf("restored namespaces %+v, want default and prod", got)
	}
}
