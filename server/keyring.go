package server

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// Keyring is the component of the root keys: it signs workload
// identities (for a node's live allocs) and node introductions with the
// active key, and publishes the public halves (JWKS). The key is made by
// the leader on first use (not at start: RSA key generation costs ~100 ms
// of CPU a dev agent's start should not pay) and replicated through Raft,
// so every server signs with the same key. It is safe for concurrent use.
type Keyring struct {
	serverCore
	region string // the subject's first part
	issuer string // Config.OIDCIssuer

	mu     sync.Mutex
	parsed map[string]*rsa.PrivateKey // by KeyID
}

// private is the parsed private key of rk (cached by KeyID).
func (k *Keyring) private(rk *state.RootKey) (*rsa.PrivateKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p := k.parsed[rk.KeyID]; p != nil {
		return p, nil
	}
	block, _ := pem.Decode([]byte(rk.PrivateKey))
	if block == nil {
		return nil, fmt.Errorf("root key %s: no PEM block", rk.KeyID)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("root key %s: %w", rk.KeyID, err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("root key %s: not an RSA key", rk.KeyID)
	}
	if k.parsed == nil {
		k.parsed = map[string]*rsa.PrivateKey{}
	}
	k.parsed[rk.KeyID] = rsaKey
	return rsaKey, nil
}

// activeKey returns the active root key, creating the first one on the
// leader (a follower without one answers not-leader: the request is
// forwarded).
func (k *Keyring) activeKey(ctx context.Context) (*state.RootKey, *rsa.PrivateKey, error) {
	rk, err := k.state().ActiveRootKey()
	if err != nil {
		return nil, nil, err
	}
	if rk == nil {
		if !k.isLeader() {
			return nil, nil, errNotLeader()
		}
		k.mu.Lock() // one key, however many tasks ask at once
		rk, err = k.state().ActiveRootKey()
		if err == nil && rk == nil {
			rk, err = k.newRootKey(ctx)
		}
		k.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
	}
	p, err := k.private(rk)
	return rk, p, err
}

func (k *Keyring) newRootKey(ctx context.Context) (*state.RootKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate root key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	rk := &state.RootKey{KeyID: newID(), Algorithm: string(jose.RS256), Active: true, CreateTime: k.clock.Now().UnixNano(),
		PrivateKey: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}
	if _, err := k.apply(ctx, fsm.RootKeyUpsertType, &fsm.RootKeyUpsertRequest{Key: rk}); err != nil {
		return nil, fmt.Errorf("store root key: %w", err)
	}
	k.log.Info("created the workload identity signing key", "key_id", rk.KeyID)
	return rk, nil
}

// signer signs JWTs with the keyring's active key (its ID in kid).
func (k *Keyring) signer(ctx context.Context) (jose.Signer, error) {
	rk, key, err := k.activeKey(ctx)
	if err != nil {
		return nil, err
	}
	return jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), rk.KeyID))
}

// SignIdentities signs every identity of a task of a live alloc on the
// node (authenticated by its secret).
func (k *Keyring) SignIdentities(ctx context.Context, nodeID, secret string, req *api.TaskIdentityRequest) (*api.TaskIdentityResponse, error) {
	if _, err := authNode(k.state(), nodeID, secret); err != nil {
		return nil, err
	}
	a, err := k.state().AllocByID(nil, req.AllocID)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("alloc %s: %w", req.AllocID, api.ErrAllocNotFound)
	}
	if a.NodeID != nodeID {
		return nil, fmt.Errorf("alloc %s belongs to another node: %w", a.ID, api.ErrPermissionDenied)
	}
	if a.TerminalStatus() {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("alloc %s is stopped: no identities", a.ID))
	}
	var task *api.Task
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			task = tg.LookupTask(req.Task)
		}
	}
	if task == nil {
		return nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("alloc %s has no task %q", a.ID, req.Task))
	}
	signer, err := k.signer(ctx)
	if err != nil {
		return nil, err
	}
	now := k.clock.Now()
	out := &api.TaskIdentityResponse{}
	for _, w := range task.TaskIdentities() {
		name := w.Name
		if name == "" {
			name = api.DefaultIdentityName
		}
		aud := w.Audience
		if len(aud) == 0 && name == api.DefaultIdentityName {
			aud = []string{api.DefaultIdentityAudience}
		}
		c := api.IdentityClaims{
			Subject:  fmt.Sprintf("%s:%s:%s:%s:%s:%s", k.region, a.Namespace, a.JobID, a.TaskGroup, task.Name, name),
			Audience: aud, IssuedAt: now.Unix(), NotBefore: now.Unix(), ID: newID(), Issuer: k.issuer,
			Namespace: a.Namespace, JobID: a.JobID, AllocationID: a.ID, Task: task.Name,
		}
		si := &api.SignedIdentity{Name: name}
		if w.TTL > 0 {
			si.Expiration = now.Add(w.TTL)
			c.Expiry = si.Expiration.Unix()
		}
		tok, err := jwt.Signed(signer).Claims(c).Serialize()
		if err != nil {
			return nil, fmt.Errorf("sign identity %q: %w", name, err)
		}
		si.Token = tok
		out.Identities = append(out.Identities, si)
	}
	return out, nil
}

// JWKS is the public half of every root key (the keyring's JSON Web Key
// Set, served at /.well-known/jwks.json).
func (k *Keyring) JWKS() (*jose.JSONWebKeySet, error) {
	keys, err := k.state().RootKeys(nil)
	if err != nil {
		return nil, err
	}
	set := &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, rk := range keys {
		p, err := k.private(rk)
		if err != nil {
			return nil, err
		}
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: p.Public(), KeyID: rk.KeyID, Algorithm: rk.Algorithm, Use: "sig"})
	}
	return set, nil
}

// RootKeyMetas lists the keyring without key material.
func (k *Keyring) RootKeyMetas() ([]*api.RootKeyMeta, error) {
	keys, err := k.state().RootKeys(nil)
	if err != nil {
		return nil, err
	}
	out := []*api.RootKeyMeta{}
	for _, rk := range keys {
		st := "inactive"
		if rk.Active {
			st = "active"
		}
		out = append(out, &api.RootKeyMeta{KeyID: rk.KeyID, Algorithm: rk.Algorithm, State: st, CreateTime: rk.CreateTime})
	}
	return out, nil
}

// OIDCIssuer is the issuer identities carry ("" when none is configured).
func (k *Keyring) OIDCIssuer() string { return k.issuer }

// publicKey is the public half of the keyring's key kid (nil: none).
func (k *Keyring) publicKey(kid string) (*rsa.PublicKey, error) {
	keys, err := k.state().RootKeys(nil)
	if err != nil {
		return nil, err
	}
	for _, rk := range keys {
		if rk.KeyID == kid {
			p, err := k.private(rk)
			if err != nil {
				return nil, err
			}
			return &p.PublicKey, nil
		}
	}
	return nil, nil
}
