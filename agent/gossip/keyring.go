package gossip

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hashicorp/memberlist"
)

// ErrNoKeyring is returned by key operations when gossip runs without
// encryption (it cannot be turned on in a running pool).
var ErrNoKeyring = errors.New("gossip: encryption is not enabled (start the agents with -encrypt)")

// ErrBadKey wraps every malformed key.
var ErrBadKey = errors.New("gossip: invalid encryption key")

// Key operations, cluster-wide.
const (
	KeyInstall = "install"
	KeyUse     = "use"
	KeyRemove  = "remove"
	KeyList    = "list"
)

// DecodeKey parses a base64 key of 16, 24 or 32 bytes (what -encrypt takes).
func DecodeKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %v", ErrBadKey, err)
	}
	if err := memberlist.ValidateKey(k); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return k, nil
}

// GenerateKey returns a new random 32-byte key, base64 encoded.
func GenerateKey() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("gossip: generate key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

// KeyResponse aggregates the answers of every member to a key operation.
type KeyResponse struct {
	NumNodes int
	NumResp  int
	NumErr   int
	// Messages holds each failed member's error.
	Messages map[string]string
	// Keys counts, per base64 key, the members that hold it; PrimaryKeys
	// the members that encrypt with it.
	Keys        map[string]int
	PrimaryKeys map[string]int
}

const (
	msgKeyRequest  byte = 1
	msgKeyResponse byte = 2
	msgLeaveIntent byte = 3
	msgForceLeave  byte = 4
)

type keyRequest struct {
	ID   string
	From string
	Op   string
	Key  []byte
}

type keyAnswer struct {
	ID      string
	Node    string
	Error   string
	Keys    [][]byte
	Primary []byte
}

// keyOps is the queue of incoming key messages and the requests waiting
// for answers.
type keyOps struct {
	in      chan []byte
	mu      sync.Mutex
	pending map[string]chan keyAnswer
	opMu    sync.Mutex // one cluster-wide operation at a time
}

func (k *keyOps) init() {
	k.in = make(chan []byte, 128)
	k.pending = map[string]chan keyAnswer{}
}

func (k *keyOps) queue(b []byte, log *slog.Logger) {
	select {
	case k.in <- b:
	default:
		log.Warn("key message dropped: queue full")
	}
}

// keyWorker handles key messages off memberlist's goroutines.
func (g *Gossip) keyWorker() {
	for {
		select {
		case <-g.ctx.Done():
			return
		case b := <-g.keyOps.in:
			g.handleKeyMsg(b)
		}
	}
}

func (g *Gossip) handleKeyMsg(b []byte) {
	switch b[0] {
	case msgKeyRequest:
		var req keyRequest
		if err := json.Unmarshal(b[1:], &req); err != nil {
			g.log.Warn("malformed key request", "err", err)
			return
		}
		ans := g.applyKeyOp(req.Op, req.Key)
		ans.ID = req.ID
		var to *memberlist.Node
		for _, n := range g.aliveNodes() {
			if n.Name == req.From {
				to = n
			}
		}
		if to == nil {
			g.log.Warn("key request from unknown member", "from", req.From)
			return
		}
		if err := g.ml.SendReliable(to, encodeMsg(msgKeyResponse, ans)); err != nil {
			g.log.Warn("send key answer", "to", req.From, "err", err)
		}
	case msgKeyResponse:
		var ans keyAnswer
		if err := json.Unmarshal(b[1:], &ans); err != nil {
			g.log.Warn("malformed key answer", "err", err)
			return
		}
		g.keyOps.mu.Lock()
		ch := g.keyOps.pending[ans.ID]
		g.keyOps.mu.Unlock()
		if ch != nil {
			select {
			case ch <- ans:
			default:
			}
		}
	default:
		g.log.Warn("unknown gossip message type", "type", b[0])
	}
}

func encodeMsg(t byte, v any) []byte {
	b, _ := json.Marshal(v) // plain structs: cannot fail
	return append([]byte{t}, b...)
}

// applyKeyOp changes this member's keyring and persists it.
func (g *Gossip) applyKeyOp(op string, key []byte) keyAnswer {
	ans := keyAnswer{Node: g.cfg.Name}
	if g.keys == nil {
		ans.Error = ErrNoKeyring.Error()
		return ans
	}
	var err error
	switch op {
	case KeyInstall:
		err = g.keys.AddKey(key)
	case KeyUse:
		err = g.keys.UseKey(key)
	case KeyRemove:
		err = g.keys.RemoveKey(key)
	case KeyList:
	default:
		err = fmt.Errorf("unknown key operation %q", op)
	}
	if err == nil && op != KeyList {
		err = g.saveKeyring()
	}
	if err != nil {
		ans.Error = err.Error()
	}
	ans.Keys = g.keys.GetKeys()
	ans.Primary = g.keys.GetPrimaryKey()
	return ans
}

// KeyOperation runs op (KeyInstall, KeyUse, KeyRemove, KeyList) on every
// alive member and waits for their answers until ctx ends. To rotate
// without flapping: install the new key everywhere, then use it, then
// remove the old one (each member decrypts with any installed key).
func (g *Gossip) KeyOperation(ctx context.Context, op string, key []byte) (*KeyResponse, error) {
	if g.keys == nil {
		return nil, ErrNoKeyring
	}
	if op != KeyList {
		if err := memberlist.ValidateKey(key); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
		}
	}
	g.keyOps.opMu.Lock()
	defer g.keyOps.opMu.Unlock()
	var id [16]byte
	_, _ = rand.Read(id[:])
	req := keyRequest{ID: hex.EncodeToString(id[:]), From: g.cfg.Name, Op: op, Key: key}
	nodes := g.aliveNodes()
	ch := make(chan keyAnswer, len(nodes))
	g.keyOps.mu.Lock()
	g.keyOps.pending[req.ID] = ch
	g.keyOps.mu.Unlock()
	defer func() {
		g.keyOps.mu.Lock()
		delete(g.keyOps.pending, req.ID)
		g.keyOps.mu.Unlock()
	}()

	resp := &KeyResponse{NumNodes: len(nodes), Messages: map[string]string{}, Keys: map[string]int{}, PrimaryKeys: map[string]int{}}
	add := func(a keyAnswer) {
		resp.NumResp++
		if a.Error != "" {
			resp.NumErr++
			resp.Messages[a.Node] = a.Error
		}
		for _, k := range a.Keys {
			resp.Keys[base64.StdEncoding.EncodeToString(k)]++
		}
		if len(a.Primary) > 0 {
			resp.PrimaryKeys[base64.StdEncoding.EncodeToString(a.Primary)]++
		}
	}
	waiting := map[string]bool{}
	msg := encodeMsg(msgKeyRequest, req)
	for _, n := range nodes {
		if n.Name == g.cfg.Name {
			add(g.applyKeyOp(op, key))
			continue
		}
		if err := g.ml.SendReliable(n, msg); err != nil {
			resp.NumResp++
			resp.NumErr++
			resp.Messages[n.Name] = fmt.Sprintf("send: %v", err)
			continue
		}
		waiting[n.Name] = true
	}
	for len(waiting) > 0 {
		select {
		case a := <-ch:
			if waiting[a.Node] {
				delete(waiting, a.Node)
				add(a)
			}
		case <-ctx.Done():
			for name := range waiting {
				resp.NumErr++
				resp.Messages[name] = "no answer: " + ctx.Err().Error()
			}
			return resp, fmt.Errorf("gossip: key %s: %d of %d members did not answer: %w", op, len(waiting), len(nodes), ctx.Err())
		}
	}
	if resp.NumErr > 0 {
		return resp, fmt.Errorf("gossip: key %s failed on %d of %d members", op, resp.NumErr, resp.NumNodes)
	}
	return resp, nil
}

// LocalKeys returns this member's keys (primary first), base64 encoded.
func (g *Gossip) LocalKeys() []string {
	if g.keys == nil {
		return nil
	}
	var out []string
	for _, k := range orderedKeys(g.keys) {
		out = append(out, base64.StdEncoding.EncodeToString(k))
	}
	return out
}

func orderedKeys(kr *memberlist.Keyring) [][]byte {
	p := kr.GetPrimaryKey()
	out := [][]byte{p}
	for _, k := range kr.GetKeys() {
		if !slices.Equal(k, p) {
			out = append(out, k)
		}
	}
	return out
}

// loadKeyring builds the keyring from KeyringFile when it exists, else
// from Keys (persisting them to KeyringFile when set).
func (g *Gossip) loadKeyring() (*memberlist.Keyring, error) {
	keys := g.cfg.Keys
	fromFile := false
	if g.cfg.KeyringFile != "" {
		b, err := os.ReadFile(g.cfg.KeyringFile)
		switch {
		case err == nil:
			var enc []string
			if err := json.Unmarshal(b, &enc); err != nil {
				return nil, fmt.Errorf("%w: keyring file %s: %v", ErrBadKey, g.cfg.KeyringFile, err)
			}
			keys = nil
			for _, s := range enc {
				k, err := DecodeKey(s)
				if err != nil {
					return nil, fmt.Errorf("keyring file %s: %w", g.cfg.KeyringFile, err)
				}
				keys = append(keys, k)
			}
			fromFile = len(keys) > 0
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("gossip: read keyring: %w", err)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	for _, k := range keys {
		if err := memberlist.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
		}
	}
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	if fromFile && len(g.cfg.Keys) > 0 && !slices.ContainsFunc(kr.GetKeys(), func(k []byte) bool { return slices.Equal(k, g.cfg.Keys[0]) }) {
		g.log.Warn("the keyring file wins over -encrypt, whose key it does not hold", "file", g.cfg.KeyringFile)
	}
	g.keys = kr
	if !fromFile {
		if err := g.saveKeyring(); err != nil {
			return nil, err
		}
	}
	return kr, nil
}

// saveKeyring writes the keys (primary first) to KeyringFile atomically.
func (g *Gossip) saveKeyring() error {
	if g.cfg.KeyringFile == "" || g.keys == nil {
		return nil
	}
	var enc []string
	for _, k := range orderedKeys(g.keys) {
		enc = append(enc, base64.StdEncoding.EncodeToString(k))
	}
	b, _ := json.Marshal(enc)
	if err := os.MkdirAll(filepath.Dir(g.cfg.KeyringFile), 0o700); err != nil {
		return fmt.Errorf("gossip: save keyring: %w", err)
	}
	tmp := g.cfg.KeyringFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("gossip: save keyring: %w", err)
	}
	if err := os.Rename(tmp, g.cfg.KeyringFile); err != nil {
		return fmt.Errorf("gossip: save keyring: %w", err)
	}
	return nil
}
