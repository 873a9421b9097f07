package http

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// A server never forwards a user's token to a node. It checks the token
// itself (the action's capability in the alloc's own namespace) and sends
// the node a grant instead: one action (a namespace capability, or node
// read/write for /v1/client/metadata) on one alloc of that node, for
// grantTTL, signed with a key derived from the node's secret, which only
// the node and the servers know. A node that registered a hostile HTTP
// address thus learns nothing it could replay elsewhere.

// headerClientGrant carries a grant from a server to a node.
const headerClientGrant = "X-Drover-Client-Grant"

// grantTTL bounds a grant's life: it covers the start of one request
// (a stream, once authorized, runs as long as it runs).
const grantTTL = time.Minute

// maxGrantBytes bounds the header a node decodes.
const maxGrantBytes = 1024

// grant is what a server lets a node's agent do for one request.
type grant struct {
	Node  string `json:"n"`
	Alloc string `json:"a,omitempty"` // "" for the node's own routes
	Cap   string `json:"c"`           // a namespace capability, or grantNodeRead/Write
	Exp   int64  `json:"e"`           // Unix seconds
}

const (
	grantNodeRead  = "node-read"
	grantNodeWrite = "node-write"
)

// grantKey derives the signing key from a node's secret.
func grantKey(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("drover client grant v1"))
	return m.Sum(nil)
}

// signGrant encodes g as payload.mac, both base64url.
func signGrant(secret string, g grant) string {
	payload, _ := json.Marshal(g) // plain struct: cannot fail
	m := hmac.New(sha256.New, grantKey(secret))
	m.Write(payload)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(m.Sum(nil))
}

// parseGrant checks tok's MAC with the node's secret and decodes it.
func parseGrant(secret, tok string) (grant, error) {
	var g grant
	bad := api.Errorf(api.ErrPermissionDenied, "Permission denied: invalid client grant")
	if len(tok) > maxGrantBytes || secret == "" {
		return g, bad
	}
	p, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return g, bad
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return g, bad
	}
	m := hmac.New(sha256.New, grantKey(secret))
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return g, bad
	}
	if err := json.Unmarshal(payload, &g); err != nil {
		return g, bad
	}
	return g, nil
}

// grantFor is the grant a forwarded request r needs on node: its action's
// capability, on the alloc of its path (allocID, "" for the node's own
// routes).
func (s *HTTPServer) grantFor(r *nethttp.Request, nodeID, allocID string) grant {
	g := grant{Node: nodeID, Alloc: allocID, Exp: s.now().Add(grantTTL).Unix()}
	switch c := clientCap(r); {
	case c.kind == "namespace":
		g.Cap = c.cap
	case c.write:
		g.Cap = grantNodeWrite
	default:
		g.Cap = grantNodeRead
	}
	return g
}

// grantSecrets is the optional ability of a ClientRole to say its node's
// ID and secret, with which it verifies grants.
type grantSecrets interface {
	NodeID() string
	NodeSecret() string
}

// verifyGrant checks a request's grant on this agent's node: signed for
// this node, not expired, and for exactly this request's action and
// alloc. Anything else is permission denied.
func (s *HTTPServer) verifyGrant(r *nethttp.Request) error {
	gs, ok := s.cfg.Client.(grantSecrets)
	if !ok {
		return api.Errorf(api.ErrPermissionDenied, "Permission denied: this agent runs no client to take a grant")
	}
	g, err := parseGrant(gs.NodeSecret(), r.Header.Get(headerClientGrant))
	if err != nil {
		return err
	}
	want := s.grantFor(r, gs.NodeID(), clientAllocID(r.URL.Path))
	switch {
	case g.Node != want.Node:
		return api.Errorf(api.ErrPermissionDenied, "Permission denied: the grant is for another node")
	case g.Exp < s.now().Unix():
		return api.Errorf(api.ErrPermissionDenied, "Permission denied: the grant expired")
	case g.Cap != want.Cap || g.Alloc != want.Alloc:
		return api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Permission denied: the grant is for %s on %q, not this request", g.Cap, g.Alloc))
	}
	return nil
}

// stripCredentials removes every credential a caller sent (tokens, node
// secrets, the UI's websocket token protocol) from a request about to be
// forwarded to a node.
func stripCredentials(h nethttp.Header) {
	for _, k := range []string{api.HeaderToken, "X-Nomad-Token", "Authorization", api.NodeSecretHeader, headerClientGrant} {
		h.Del(k)
	}
	var keep []string
	for _, list := range h.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(list, ",") {
			if p = strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, api.WebSocketTokenProtocol) {
				keep = append(keep, p)
			}
		}
	}
	h.Del("Sec-WebSocket-Protocol")
	if len(keep) > 0 {
		h.Set("Sec-WebSocket-Protocol", strings.Join(keep, ", "))
	}
}

func (s *HTTPServer) now() time.Time {
	if s.cfg.Clock != nil {
		return s.cfg.Clock.Now()
	}
	return time.Now()
}
