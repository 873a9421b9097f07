package server

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// Variables are sealed at rest: the state store and a snapshot hold the
// items only as ciphertext under the keyring's active key; a read opens
// them; sealed items moved to another path do not open; a snapshot
// restored into a fresh FSM opens again (the keys travel with it).
func TestVariablesEncryptedAtRest(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	const secret = "PLAINTEXT-SECRET-7f3a"
	v, _, err := s.Variables().ApplyVariable(ctx, "set", &api.Variable{Path: "team/db", Items: map[string]string{"password": secret}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Items["password"] != secret {
		t.Fatalf("answer %+v", v)
	}
	sv, err := s.State().VariableByPath(nil, api.DefaultNamespace, "team/db")
	if err != nil || sv == nil {
		t.Fatalf("stored: %v %v", sv, err)
	}
	rk, _ := s.State().ActiveRootKey()
	if rk == nil || sv.KeyID != rk.KeyID {
		t.Errorf("sealed with key %q, want the active key %+v", sv.KeyID, rk)
	}
	if bytes.Contains(sv.Data, []byte(secret)) || bytes.Contains(sv.Data, []byte("password")) {
		t.Error("the state store holds the items in the clear")
	}
	var snap bufSink
	fs, err := s.rs.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Persist(&snap); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(snap.Bytes(), []byte(secret)) {
		t.Error("the snapshot holds the items in the clear")
	}
	got, err := s.Variables().ReadVariable(nil, api.DefaultNamespace, "team/db")
	if err != nil || got.Items["password"] != secret {
		t.Fatalf("read %+v %v", got, err)
	}

	// The ciphertext is bound to its namespace and path.
	moved := &state.VariableApply{Op: state.VarSet, Now: 1,
		Var: &state.Variable{Namespace: api.DefaultNamespace, Path: "team/other", KeyID: sv.KeyID, Data: sv.Data}}
	if _, err := s.core.apply(ctx, fsm.VariableApplyType, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Variables().ReadVariable(nil, api.DefaultNamespace, "team/other"); err == nil {
		t.Error("sealed items moved to another path opened")
	}

	// A restore keeps every acknowledged variable, readable.
	dst := fsm.New(fsm.Config{})
	if err := dst.Restore(nopCloser{bytes.NewReader(snap.Bytes())}); err != nil {
		t.Fatal(err)
	}
	rv, err := dst.State().VariableByPath(nil, api.DefaultNamespace, "team/db")
	if err != nil || rv == nil || !bytes.Equal(rv.Data, sv.Data) {
		t.Fatalf("restored %+v %v", rv, err)
	}
	opener := &Variables{serverCore: serverCore{current: dst.State}, keys: &Keyring{serverCore: serverCore{current: dst.State}}}
	items, err := opener.open(rv)
	if err != nil || items["password"] != secret {
		t.Fatalf("open the restored variable: %v %v", items, err)
	}

	// Check-and-set through the component.
	if _, _, err := s.Variables().ApplyVariable(ctx, "set", &api.Variable{Path: "team/db", Items: map[string]string{"k": "v"}}, new(uint64)); !errors.Is(err, api.ErrCASConflict) {
		t.Errorf("cas 0 on an existing variable: %v", err)
	}
	if _, _, err := s.Variables().ApplyVariable(ctx, "set", &api.Variable{Namespace: "nope", Path: "x", Items: map[string]string{"k": "v"}}, nil); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("a missing namespace: %v", err)
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
