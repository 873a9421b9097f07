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

// RouteCaps is routeCaps, for the authz matrix (authz_matrix_test.go).
func RouteCaps() map[string]RouteCap {
	out := map[string]RouteCap{}
	for p, c := range routeCaps {
		out[p] = exportCap(c)
	}
	return out
}

// ClientCapOf is the capability a /v1/client/ request needs.
func ClientCapOf(r *nethttp.Request) RouteCap { return exportCap(clientCap(r)) }

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
