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
// Routes: routes.go declares every route once, in one table of {pattern,
// capability, handler}; one loop registers each behind enforce, which
// checks the capability (acl_mux.go: ns, nsList, nodeReadable, self,
// nodeSub, client, nodeRegister, public, ...) before the handler runs. A
// route without a capability does not compile (the table's literals are
// unkeyed) and a zero one panics at New. RoutePatterns lists the table for
// the tenancy matrix tests. Handlers that serve an object by ID check the
// route's capability again in the object's own namespace (checkObject,
// allowObject).
//
// Backends: the handlers of each resource are a small type (jobHandlers,
// nodeHandlers, aclHandlers, ...) holding the narrow interface it writes
// through (JobsBackend, NodesBackend, ACLBackend, ...); reads go to the
// state store (Store, made of the resources' XxxState interfaces), which
// StateSource gives anew on every read: the server swaps its store on a
// snapshot restore, and blocking queries also watch the old store's
// abandon channel. Config.Server (a ServerRole) wires every one of them
// explicitly; agent/http/serverstate binds a *server.Server's parts to all and
// holds the compile-time checks. The client role is ClientRole (its
// optional abilities, the namespace of an alloc and the node's ID and
// secret for grants, are found by type assertion). An agent without the
// server role proxies server API calls to Config.Servers.
//
// On a server (leader.go), writes and every read but ?stale ones (blocking
// queries included; /v1/status/* and the event stream excepted) that
// arrive at a follower are reverse-proxied to the leader's HTTP address,
// as Nomad does (held through an election for up to LeaderHoldTimeout,
// retrying only requests the leader never saw), so a write a server
// acknowledged is visible to a plain read on it at once; ?consistent on
// the leader verifies leadership first; ?stale reads are served locally.
// Before any of that, the middleware sends a request whose ?region= names
// another region to a live server of that region (region.go: found
// through Config.Regions, the servers' WAN pool; under TLS with this
// server's certificate, accepting only that region's server one), whole
// and streamed, or answers unknown_region (400) or region_unavailable
// (503, fast: dials are bounded by RegionDialTimeout); a client agent
// hands it to its servers. A server of a region that is not
// Config.AuthoritativeRegion sends ACL bootstrap, policy and global token
// writes to the authoritative one. GET /v1/regions lists the regions.
// ?region=all on GET /v1/usage and GET /v1/queues (global.go) asks every
// region as the caller, in parallel, and merges the answers, naming the
// regions that did not answer within GlobalViewTimeout (Partial, Missing).
// usage.go serves the usage ledger (GET /v1/usage, JSON or CSV), pricing
// GPU hours with Config.UsagePrices.
//
// It must not import package agent, server/* (but server/acl) or
// drivers/*; agent/http/serverstate may import server.
// It imports jobspec for POST /v1/jobs/parse.
//
// Concurrency: a *HTTPServer is safe for concurrent use; net/http runs
// each request on its own goroutine, and the handler types hold nothing
// but their backends, fixed at New. Backends must be safe for concurrent
// use. Start launches one serving goroutine that Shutdown waits for.
// Event-stream handlers own their subscription and end when the request's
// context ends.
package http
