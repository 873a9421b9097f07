// Package http is the agent's HTTP server: the REST API under /v1 (Nomad's
// paths and JSON shapes), the event stream, Prometheus metrics, forwarding
// of /v1/client/... requests to the node that holds an allocation, and the
// web UI under /ui.
//
// It owns routing and the cross-cutting middleware written once: JSON error
// rendering ({"error":{"code","message"}} with the status of the api.Error),
// body limits, request logging, metrics and blocking queries (?index=&wait=,
// woken by go-memdb watch sets, never by polling).
//
// It consumes the server role through the interfaces in backend.go
// (*server.Server satisfies Server; agent/http/serverstate adapts its state
// store to State and EventSource) and the client role through ClientRole.
// An agent without the server role proxies server API calls to
// Config.Servers. On a server (leader.go), writes and every read but
// ?stale ones (blocking queries included; /v1/status/* and the event
// stream excepted) that arrive at a follower are reverse-proxied to the
// leader's HTTP address, as Nomad does (held through an election for up to
// LeaderHoldTimeout, retrying only requests the leader never saw), so a
// write a server acknowledged is visible to a plain read on it at once;
// ?consistent on the leader verifies leadership first; ?stale reads are
// served locally.
// operator.go serves Raft peers, snapshots, the gossip keyring and
// force-leave through optional interfaces found by type assertion;
// usage.go serves the usage ledger (GET /v1/usage, JSON or CSV) the same
// way, pricing GPU hours with Config.UsagePrices. It must not import package agent, server/* or drivers/*
// (serverstate may): the agent wires concrete types in. It imports jobspec
// for POST /v1/jobs/parse.
//
// Concurrency: a *Server is safe for concurrent use; net/http runs each
// request on its own goroutine. Start launches one serving goroutine that
// Shutdown waits for. Event-stream handlers own their subscription and end
// when the request's context ends.
package http
