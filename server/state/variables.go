package state

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// TableVariables holds Nomad Variables (*Variable by namespace and path).
const TableVariables = "variables"

// Variable is a stored variable: its items are sealed (Data, AEAD with
// the keyring key KeyID; server/variables.go): the state, the Raft log
// and snapshots never hold them in the clear. A lock acquired on a new
// path without items stores none (no Data, no KeyID).
type Variable struct {
	Namespace string        `json:"Namespace"`
	Path      string        `json:"Path"`
	KeyID     string        `json:"KeyID"`
	Data      []byte        `json:"Data"`
	Lock      *VariableLock `json:"Lock,omitempty"`

	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
	CreateTime  int64  `json:"CreateTime"`
	ModifyTime  int64  `json:"ModifyTime"`
}

// VariableLock is a lock held over a variable: live until Expires (unix
// ns, renewed by its holder); once expired, it can be taken again from
// Expires+Delay.
type VariableLock struct {
	ID      string        `json:"ID"`
	TTL     time.Duration `json:"TTL"`
	Delay   time.Duration `json:"Delay"`
	Expires int64         `json:"Expires"`
}

// Live reports whether the lock is held at now (unix ns).
func (l *VariableLock) Live(now int64) bool { return l != nil && now < l.Expires }

// Blocks reports whether the lock keeps others from acquiring at now:
// held, or expired less than its delay ago.
func (l *VariableLock) Blocks(now int64) bool {
	return l != nil && now < l.Expires+int64(l.Delay)
}

func variablesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableVariables, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true, Indexer: nsKey("Path")},
	}}
}

// VariableOp is what a VariableApply does.
type VariableOp string

// Variable operations.
const (
	VarSet         VariableOp = "set"
	VarDelete      VariableOp = "delete"
	VarLockAcquire VariableOp = "lock-acquire"
	VarLockRenew   VariableOp = "lock-renew"
	VarLockRelease VariableOp = "lock-release"
)

// VariableApply is one variable write (the Raft command's body). Var
// carries the namespace, path and, for set and acquire, the sealed items
// (nil Data on acquire keeps the stored ones). CAS, when set, must be
// the stored ModifyIndex (0: the variable must not exist). LockID is the
// caller's lock: a set or delete of a variable locked by someone else is
// refused, as is a renew or release with another ID. Now (the leader's
// clock, unix ns) decides locks' expiry, the same on every server.
type VariableApply struct {
	Op     VariableOp    `json:"Op"`
	Var    *Variable     `json:"Var"`
	CAS    *uint64       `json:"CAS,omitempty"`
	LockID string        `json:"LockID,omitempty"`
	Lock   *VariableLock `json:"Lock,omitempty"` // acquire: the new lock (ID, TTL, Delay)
	Now    int64         `json:"Now"`
}

// VariableByPath returns a stored variable or nil, nil.
func (r *reads) VariableByPath(ws memdb.WatchSet, ns, path string) (*Variable, error) {
	v, err := first[Variable](r, ws, TableVariables, "id", ns, path)
	if err != nil {
		return nil, fmt.Errorf("read variable %s/%s: %w", ns, path, err)
	}
	return v, nil
}

// Variables returns the variables of namespace ns ("*": all) whose path
// starts with prefix, by namespace and path.
func (r *reads) Variables(ws memdb.WatchSet, ns, prefix string) ([]*Variable, error) {
	var out []*Variable
	var err error
	if ns == "*" {
		out, err = list[Variable](r, ws, func(v *Variable) bool { return strings.HasPrefix(v.Path, prefix) }, TableVariables, "id")
	} else {
		out, err = list[Variable](r, ws, nil, TableVariables, "id_prefix", ns, prefix)
	}
	if err != nil {
		return nil, fmt.Errorf("read variables: %w", err)
	}
	return out, nil
}

// ApplyVariable applies a variable write at index (see Txn.ApplyVariable).
func (s *StateStore) ApplyVariable(index uint64, req *VariableApply) error {
	return s.Write(index, func(t *Txn) error { return t.ApplyVariable(req) })
}

// ApplyVariable sets, deletes, locks, renews or releases a variable.
// A check-and-set mismatch, or a lock held by another, fails with
// api.ErrCASConflict (nothing changes).
func (t *Txn) ApplyVariable(req *VariableApply) error {
	if req == nil || req.Var == nil {
		return api.Errorf(api.ErrBadRequest, "variable write without a variable")
	}
	in := req.Var
	if err := api.ValidateVariablePath(in.Path); err != nil {
		return err
	}
	if in.Namespace == "" || in.Namespace == "*" {
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("variable %q: a namespace is required", in.Path))
	}
	old, err := txnFirst[Variable](t, TableVariables, "id", in.Namespace, in.Path)
	if err != nil {
		return err
	}
	conflict := func(why string) error {
		return api.Errorf(api.ErrCASConflict, fmt.Sprintf("variable %q: %s", in.Path, why))
	}
	if req.CAS != nil {
		var have uint64
		if old != nil {
			have = old.ModifyIndex
		}
		if have != *req.CAS {
			return conflict(fmt.Sprintf("check-and-set index %d, the variable's is %d", *req.CAS, have))
		}
	}
	var held *VariableLock // the stored lock, if still live
	if old != nil && old.Lock.Live(req.Now) {
		held = old.Lock
	}
	heldByOther := held != nil && held.ID != req.LockID
	switch req.Op {
	case VarDelete:
		if old == nil {
			return nil // purging a missing variable is not an error (Nomad)
		}
		if heldByOther {
			return conflict("locked by another holder")
		}
		return t.delete(TableVariables, old)
	case VarSet, VarLockAcquire:
		if len(in.Data) == 0 && req.Op == VarSet {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("variable %q: no items", in.Path))
		}
		if req.Op == VarSet && heldByOther {
			return conflict("locked by another holder: write with its lock ID")
		}
		c := *in
		c.CreateIndex, c.ModifyIndex, c.CreateTime, c.ModifyTime = t.index, t.index, req.Now, req.Now
		if old != nil {
			c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
			c.Lock = old.Lock
			if len(c.Data) == 0 {
				c.KeyID, c.Data = old.KeyID, old.Data
			}
		}
		if req.Op == VarLockAcquire {
			if req.Lock == nil || req.Lock.ID == "" || req.Lock.TTL <= 0 {
				return api.Errorf(api.ErrBadRequest, fmt.Sprintf("variable %q: lock without an ID or TTL", in.Path))
			}
			if old != nil && old.Lock.Blocks(req.Now) {
				return conflict("already locked (or in its lock delay)")
			}
			l := *req.Lock
			l.Expires = req.Now + int64(l.TTL)
			c.Lock = &l
		} else if c.Lock != nil && !c.Lock.Blocks(req.Now) {
			c.Lock = nil // a long-expired lock is dropped with the write
		}
		return t.insert(TableVariables, &c)
	case VarLockRenew, VarLockRelease:
		if old == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("variable %q not found", in.Path))
		}
		if held == nil || held.ID != req.LockID {
			return conflict("the lock is not held with this ID (released, expired or another's)")
		}
		c := *old
		c.ModifyIndex = t.index
		if req.Op == VarLockRenew {
			l := *held
			l.Expires = req.Now + int64(l.TTL)
			c.Lock = &l
		} else {
			c.Lock = nil
		}
		return t.insert(TableVariables, &c)
	}
	return api.Errorf(api.ErrBadRequest, fmt.Sprintf("unknown variable operation %q", req.Op))
}

// Variable restores a stored variable.
func (r *Restore) Variable(v *Variable) error { return r.put(TableVariables, v) }
