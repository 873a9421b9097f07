package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

func u64(n uint64) *uint64 { return &n }

// Variables go through Raft entries and snapshots: set with and without
// check-and-set (a stale index changes nothing), locks (held, renewed,
// released; another's acquire and write refused until it expires and its
// delay passes), delete; a restore holds every acknowledged variable.
func TestApplyAndSnapshotVariables(t *testing.T) {
	src := New(Config{})
	a := &applier{t: t, f: src}
	sealed := func(ns, path, data string) *state.Variable {
		return &state.Variable{Namespace: ns, Path: path, KeyID: "k1", Data: []byte(data)}
	}
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "team/db", "c1"), Now: 100})
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "team/cache", "c2"), Now: 100})
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("prod", "team/db", "c3"), Now: 100})
	st := src.State()
	v, _ := st.VariableByPath(nil, "default", "team/db")
	if v == nil || string(v.Data) != "c1" || v.CreateIndex != 1 || v.ModifyIndex != 1 || v.CreateTime != 100 {
		t.Fatalf("stored %+v", v)
	}
	if err := a.apply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "team/db", "stale"), CAS: u64(7), Now: 200}); !errors.Is(err, api.ErrCASConflict) {
		t.Fatalf("stale cas: %v, want a conflict", err)
	}
	if err := a.apply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "team/db", "exists"), CAS: u64(0), Now: 200}); !errors.Is(err, api.ErrCASConflict) {
		t.Fatalf("cas 0 on an existing variable: %v, want a conflict", err)
	}
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "team/db", "c1b"), CAS: u64(1), Now: 300})
	v, _ = st.VariableByPath(nil, "default", "team/db")
	if string(v.Data) != "c1b" || v.CreateIndex != 1 || v.ModifyIndex != a.index || v.ModifyTime != 300 || v.CreateTime != 100 {
		t.Fatalf("after cas update %+v", v)
	}
	if err := a.apply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "a/../b", "x")}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("bad path: %v", err)
	}

	// Locks.
	lock := &state.VariableLock{ID: "L1", TTL: 1000, Delay: 500} // nanoseconds: Now is too
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarLockAcquire, Var: sealed("default", "lock/x", "items"), Lock: lock, Now: 1000})
	for _, c := range []struct {
		name string
		req  VariableApplyRequest
	}{
		{"another acquire", VariableApplyRequest{Op: state.VarLockAcquire, Var: sealed("default", "lock/x", ""), Lock: &state.VariableLock{ID: "L2", TTL: 1000}, Now: 1500}},
		{"a write without the ID", VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "lock/x", "w"), Now: 1500}},
		{"a delete without the ID", VariableApplyRequest{Op: state.VarDelete, Var: sealed("default", "lock/x", ""), Now: 1500}},
		{"a renew with another ID", VariableApplyRequest{Op: state.VarLockRenew, Var: sealed("default", "lock/x", ""), LockID: "L2", Now: 1500}},
		{"an acquire in the delay after expiry", VariableApplyRequest{Op: state.VarLockAcquire, Var: sealed("default", "lock/x", ""), Lock: &state.VariableLock{ID: "L2", TTL: 1000}, Now: 2900}},
	} {
		if c.name == "an acquire in the delay after expiry" {
			a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarLockRenew, Var: sealed("default", "lock/x", ""), LockID: "L1", Now: 1800})
		}
		if err := a.apply(VariableApplyType, c.req); !errors.Is(err, api.ErrCASConflict) {
			t.Errorf("%s: %v, want a conflict", c.name, err)
		}
	}
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarSet, Var: sealed("default", "lock/x", "by-holder"), LockID: "L1", Now: 2000})
	// Renewed at 1800: expires at 2800, blocks until 3300.
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarLockAcquire, Var: sealed("default", "lock/x", ""), Lock: &state.VariableLock{ID: "L2", TTL: 1000}, Now: 3300})
	v, _ = st.VariableByPath(nil, "default", "lock/x")
	if v.Lock == nil || v.Lock.ID != "L2" || string(v.Data) != "by-holder" {
		t.Fatalf("after the expiry and delay: %+v", v)
	}
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarLockRelease, Var: sealed("default", "lock/x", ""), LockID: "L2", Now: 3400})
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarDelete, Var: sealed("default", "team/cache", ""), Now: 3500})
	a.mustApply(VariableApplyType, VariableApplyRequest{Op: state.VarDelete, Var: sealed("default", "missing", ""), Now: 3500})

	list, _ := st.Variables(nil, "default", "team/")
	if len(list) != 1 || list[0].Path != "team/db" {
		t.Errorf("default team/ list %+v", list)
	}
	all, _ := st.Variables(nil, "*", "")
	if len(all) != 3 {
		t.Errorf("all variables: %d, want 3", len(all))
	}

	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	got, _ := dst.State().Variables(nil, "*", "")
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("restored variables (-want +got):\n%s", diff)
	}
	if dst.State().Index(state.TableVariables) != st.Index(state.TableVariables) {
		t.Errorf("restored variables index %d, want %d", dst.State().Index(state.TableVariables), st.Index(state.TableVariables))
	}
}
