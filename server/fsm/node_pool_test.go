package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

// Node pools go through Raft entries (all or none) and snapshots.
func TestApplyAndSnapshotNodePools(t *testing.T) {
	src := populated(t)
	a := &applier{t: t, f: src, index: src.State().LatestIndex()}
	a.mustApply(NodePoolUpsertType, NodePoolUpsertRequest{NodePools: []*api.NodePool{
		{Name: "gpu", Description: "H100", Meta: map[string]string{"team": "ml"}}, {Name: "spare"}}})
	if err := a.apply(NodePoolUpsertType, NodePoolUpsertRequest{NodePools: []*api.NodePool{{Name: "x"}, {Name: "all"}}}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("upsert with a built-in: %v", err)
	}
	a.mustApply(NodePoolDeleteType, NodePoolDeleteRequest{Names: []string{"spare"}})
	if err := a.apply(NodePoolDeleteType, NodePoolDeleteRequest{Names: []string{"spare"}}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	want, _ := src.State().NodePools(nil, "")
	got, _ := dst.State().NodePools(nil, "")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored pools (-want +got):\n%s", diff)
	}
	if len(got) < 3 || got[2].Name != "gpu" || got[2].Meta["team"] != "ml" {
		t.Errorf("restored pools %+v", got)
	}
}
