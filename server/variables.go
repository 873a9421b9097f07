package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// Variables is the component of Nomad Variables: writes through Raft
// with their items sealed by the leader (AES-256-GCM with a key derived
// from the keyring's active root key, its ID stored beside the
// ciphertext), and reads that open them again. The Raft log, snapshots
// and the state store never hold items in the clear. It is safe for
// concurrent use.
type Variables struct {
	serverCore
	keys *Keyring

	mu    sync.Mutex
	aeads map[string]cipher.AEAD // by root key ID
}

// variableKeyInfo binds the derived key to its use.
const variableKeyInfo = "drover variables v1"

// aead is the cipher of root key rk (derived once, then cached).
func (v *Variables) aead(rk *state.RootKey) (cipher.AEAD, error) {
	v.mu.Lock()
	a := v.aeads[rk.KeyID]
	v.mu.Unlock()
	if a != nil {
		return a, nil
	}
	p, err := v.keys.private(rk)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(p)
	if err != nil {
		return nil, fmt.Errorf("root key %s: %w", rk.KeyID, err)
	}
	key, err := hkdf.Key(sha256.New, der, []byte(rk.KeyID), variableKeyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("derive variable key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	if a, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	v.mu.Lock()
	if v.aeads == nil {
		v.aeads = map[string]cipher.AEAD{}
	}
	v.aeads[rk.KeyID] = a
	v.mu.Unlock()
	return a, nil
}

// aad ties a ciphertext to its variable: sealed items moved to another
// path or namespace do not open.
func aad(ns, path string) []byte { return []byte(ns + "\x00" + path) }

// seal encrypts items with the active key: the nonce then the ciphertext.
func (v *Variables) seal(ctx context.Context, ns, path string, items map[string]string) (keyID string, data []byte, err error) {
	rk, _, err := v.keys.activeKey(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("variable key: %w", err)
	}
	a, err := v.aead(rk)
	if err != nil {
		return "", nil, err
	}
	plain, err := json.Marshal(items)
	if err != nil {
		return "", nil, err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, err
	}
	return rk.KeyID, a.Seal(nonce, nonce, plain, aad(ns, path)), nil
}

// open decrypts a stored variable's items.
func (v *Variables) open(sv *state.Variable) (map[string]string, error) {
	if len(sv.Data) == 0 && sv.KeyID == "" {
		return map[string]string{}, nil // a lock's variable without items
	}
	keys, err := v.state().RootKeys(nil)
	if err != nil {
		return nil, err
	}
	var rk *state.RootKey
	for _, k := range keys {
		if k.KeyID == sv.KeyID {
			rk = k
		}
	}
	if rk == nil {
		return nil, fmt.Errorf("variable %q: sealed with the unknown key %s", sv.Path, sv.KeyID)
	}
	a, err := v.aead(rk)
	if err != nil {
		return nil, err
	}
	if len(sv.Data) < a.NonceSize() {
		return nil, fmt.Errorf("variable %q: sealed data too short", sv.Path)
	}
	plain, err := a.Open(nil, sv.Data[:a.NonceSize()], sv.Data[a.NonceSize():], aad(sv.Namespace, sv.Path))
	if err != nil {
		return nil, fmt.Errorf("variable %q: open: %w", sv.Path, err)
	}
	items := map[string]string{}
	if err := json.Unmarshal(plain, &items); err != nil {
		return nil, fmt.Errorf("variable %q: items: %w", sv.Path, err)
	}
	return items, nil
}

// VariableMeta is a stored variable's metadata (no items; a lock without
// its ID).
func VariableMeta(sv *state.Variable) *api.VariableMetadata {
	return &api.VariableMetadata{Namespace: sv.Namespace, Path: sv.Path, CreateIndex: sv.CreateIndex, ModifyIndex: sv.ModifyIndex,
		CreateTime: sv.CreateTime, ModifyTime: sv.ModifyTime, Lock: apiLock(sv.Lock, false)}
}

func apiLock(l *state.VariableLock, withID bool) *api.VariableLock {
	if l == nil {
		return nil
	}
	out := &api.VariableLock{TTL: l.TTL.String(), LockDelay: l.Delay.String()}
	if withID {
		out.ID = l.ID
	}
	return out
}

// Open returns a stored variable with its items (its lock without the
// ID: only the acquirer is told it).
func (v *Variables) Open(sv *state.Variable) (*api.Variable, error) {
	items, err := v.open(sv)
	if err != nil {
		return nil, err
	}
	m := VariableMeta(sv)
	return &api.Variable{Namespace: m.Namespace, Path: m.Path, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex,
		CreateTime: m.CreateTime, ModifyTime: m.ModifyTime, Items: items, Lock: m.Lock}, nil
}

// ApplyVariable runs a variable write on the leader: op is "set",
// "delete" or a lock operation (api.VariableLockAcquire, ...); in carries
// the namespace, path and items, and in.Lock the TTL and delay to
// acquire with or the holder's ID; cas (nil: none) must be the stored
// ModifyIndex (0: the variable must not exist). It returns the variable
// as stored (nil after a delete; with its lock ID after an acquire). A
// conflict (check-and-set, or a lock another holds) is an error wrapping
// api.ErrCASConflict; the caller reads the current variable.
func (v *Variables) ApplyVariable(ctx context.Context, op string, in *api.Variable, cas *uint64) (*api.Variable, uint64, error) {
	w := struct {
		Op  state.VariableOp
		CAS *uint64
	}{state.VariableOp(op), cas}
	if in == nil {
		return nil, 0, api.Errorf(api.ErrBadRequest, "no variable given")
	}
	if in.Namespace == "" {
		in.Namespace = api.DefaultNamespace
	}
	if err := api.ValidateVariablePath(in.Path); err != nil {
		return nil, 0, err
	}
	if w.Op == state.VarSet || (w.Op == state.VarLockAcquire && len(in.Items) > 0) {
		if err := api.ValidateVariableItems(in.Items); err != nil {
			return nil, 0, err
		}
	}
	if !v.isLeader() {
		return nil, 0, errNotLeader()
	}
	if n, err := v.state().NamespaceByName(nil, in.Namespace); err != nil {
		return nil, 0, err
	} else if n == nil {
		return nil, 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("namespace %q does not exist", in.Namespace))
	}
	req := &state.VariableApply{Op: w.Op, CAS: w.CAS, Now: v.clock.Now().UnixNano(),
		Var: &state.Variable{Namespace: in.Namespace, Path: in.Path}}
	if in.Lock != nil {
		req.LockID = in.Lock.ID
	}
	if len(in.Items) > 0 && (w.Op == state.VarSet || w.Op == state.VarLockAcquire) {
		keyID, data, err := v.seal(ctx, in.Namespace, in.Path, in.Items)
		if err != nil {
			return nil, 0, err
		}
		req.Var.KeyID, req.Var.Data = keyID, data
	}
	if w.Op == state.VarLockAcquire {
		ttl, delay, err := in.Lock.ParseLockDurations()
		if err != nil {
			return nil, 0, err
		}
		req.Lock = &state.VariableLock{ID: newID(), TTL: ttl, Delay: delay}
	}
	idx, err := v.apply(ctx, fsm.VariableApplyType, req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s variable %q: %w", w.Op, in.Path, err)
	}
	if w.Op == state.VarDelete {
		return nil, idx, nil
	}
	sv, err := v.state().VariableByPath(nil, in.Namespace, in.Path)
	if err != nil || sv == nil {
		return nil, idx, err
	}
	out, err := v.Open(sv)
	if err != nil {
		return nil, idx, err
	}
	if w.Op == state.VarLockAcquire && sv.Lock != nil && sv.Lock.ID == req.Lock.ID {
		out.Lock = apiLock(sv.Lock, true)
	}
	return out, idx, nil
}

// ReadVariable reads a variable with its items (nil, nil when there is
// none), registering the read in ws.
func (v *Variables) ReadVariable(ws memdb.WatchSet, ns, path string) (*api.Variable, error) {
	sv, err := v.state().VariableByPath(ws, ns, path)
	if err != nil || sv == nil {
		return nil, err
	}
	return v.Open(sv)
}

// VariableList lists the metadata of the variables of ns ("*": all)
// under prefix, by namespace and path; nothing is decrypted.
func (v *Variables) VariableList(ws memdb.WatchSet, ns, prefix string) ([]*api.VariableMetadata, error) {
	vs, err := v.state().Variables(ws, ns, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]*api.VariableMetadata, 0, len(vs))
	for _, sv := range vs {
		out = append(out, VariableMeta(sv))
	}
	return out, nil
}
