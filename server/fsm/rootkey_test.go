package fsm

import (
	"bytes"
	"io"
	"testing"

	"github.com/drover/drover/server/state"
	"github.com/google/go-cmp/cmp"
)

// Root keys go through Raft and snapshots; a new active key retires the
// old one, which stays (its tokens still verify).
func TestApplyAndSnapshotRootKeys(t *testing.T) {
	src := populated(t)
	a := &applier{t: t, f: src, index: src.State().LatestIndex()}
	a.mustApply(RootKeyUpsertType, RootKeyUpsertRequest{Key: &state.RootKey{KeyID: "k1", Algorithm: "RS256", PrivateKey: "pem1", Active: true}})
	a.mustApply(RootKeyUpsertType, RootKeyUpsertRequest{Key: &state.RootKey{KeyID: "k2", Algorithm: "RS256", PrivateKey: "pem2", Active: true}})
	if err := a.apply(RootKeyUpsertType, RootKeyUpsertRequest{Key: &state.RootKey{KeyID: "k3"}}); err == nil {
		t.Error("a key without material was stored")
	}
	keys, _ := src.State().RootKeys(nil)
	if len(keys) != 2 || keys[0].Active || !keys[1].Active {
		t.Fatalf("keys %+v, want k1 retired and k2 active", keys)
	}
	if k, _ := src.State().ActiveRootKey(); k == nil || k.KeyID != "k2" {
		t.Errorf("active key %+v", k)
	}
	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	got, _ := dst.State().RootKeys(nil)
	if diff := cmp.Diff(keys, got); diff != "" {
		t.Errorf("restored keys (-want +got):\n%s", diff)
	}
}
