package http

import (
	nethttp "net/http"
	"time"
)

// RouteCap is a route's capability as the authz matrix test sees it.
type RouteCap struct {
	Public      bool
	Kind, Cap   string
	Write, List bool
}

func exportCap(c capability) RouteCap {
	return RouteCap{Public: c.public, Kind: c.kind, Cap: c.cap, Write: c.write, List: c.list}
}

// RouteCaps is the capability of every route of the table, by pattern,
// for the authz matrix (authz_matrix_test.go).
func RouteCaps() map[string]RouteCap {
	out := map[string]RouteCap{}
	for _, rt := range declaredRoutes() {
		out[rt.pattern] = exportCap(rt.cap)
	}
	return out
}

// capOf is the declared capability of the route pattern.
func capOf(pattern string) capability {
	for _, rt := range declaredRoutes() {
		if rt.pattern == pattern {
			return rt.cap
		}
	}
	return capability{}
}

// ClientCapOf is the capability a /v1/client/ request needs.
func ClientCapOf(r *nethttp.Request) RouteCap { return exportCap(clientCap(r)) }

// CapOf is the capability request r to the route pattern needs (routes
// whose capability depends on the request: /v1/client/, node sub-reads).
func CapOf(pattern string, r *nethttp.Request) RouteCap { return exportCap(capOf(pattern).of(r)) }

// ServerRoute reports whether a client-only agent forwards path to its servers.
func ServerRoute(path string) bool { return serverRoute(path) }

// StopHoldRetries leaves a request held for a leader only its leader
// notifications to wake it, until restore is called.
func StopHoldRetries() (restore func()) {
	prev := holdRetryAfter
	holdRetryAfter = func(int) <-chan time.Time { return nil }
	return func() { holdRetryAfter = prev }
}

// SetFetchIndexWait bounds a fetch's wait for its MinIndex, until restore.
func SetFetchIndexWait(d time.Duration) (restore func()) {
	prev := fetchIndexWait
	fetchIndexWait = d
	return func() { fetchIndexWait = prev }
}

// HeaderClientGrant is the header of a server's grant to a node.
const HeaderClientGrant = headerClientGrant

// Grant is a decoded grant.
type Grant struct{ Node, Alloc, Cap string }

// SignGrant signs a grant as a server does.
func SignGrant(secret, node, alloc, cap string, exp int64) string {
	return signGrant(secret, grant{Node: node, Alloc: alloc, Cap: cap, Exp: exp})
}

// ParseGrant checks and decodes a grant as a node does.
func ParseGrant(secret, tok string) (Grant, error) {
	g, err := parseGrant(secret, tok)
	return Grant{Node: g.Node, Alloc: g.Alloc, Cap: g.Cap}, err
}
