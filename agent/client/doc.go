// Package client is the client role of an agent: it fingerprints the
// node, registers it with the servers and heartbeats within the TTL,
// watches the node's allocations with a blocking query, runs each one
// through an alloc runner, reports task and alloc status back in
// coalesced batches, persists its state in bbolt so an agent restart
// reattaches to running tasks, and serves the /v1/client/... endpoints
// (logs, alloc filesystem, stats, restart, signal, exec over a websocket).
// A client that cannot heartbeat for its TTL stops each alloc after its
// group's max_client_disconnect (at once without one) and reports it lost
// once back in touch; then every alloc's status is sent again
// (disconnect.go). A node with MIG-capable GPUs long-polls its MIG
// change and applies it once no task of its own uses those GPUs, then
// registers its new devices with the outcome (mig.go).
//
// The fs and logs endpoints open every path beneath the alloc dir with
// openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS (an
// O_NOFOLLOW openat walk where openat2 is missing) and read and stat only
// through the fd: a link the task planted or swapped in is refused (403),
// never followed, even inside the dir; ls lists links as links (fsopen.go).
//
// Optional driver abilities, found by type assertion: a driver with
// OnTaskEvent(func(taskID, message, at)) has its progress messages (image
// import, pull) routed to the task's runner as "Driver" task events; a
// driver with Leftovers(ctx, knownTaskIDs) is asked once at Start, after
// the allocations are read back and before their runners start, for what
// it runs that no restored task owns: each is logged at WARN, never
// stopped.
//
// GPUs shared in MPS mode get one MPS control daemon each, run by the
// client's agent/gpushare Manager (DataDir/mps/<GPU UUID>/); at Start the
// daemons of GPUs no restored task holds are told to quit, the others are
// adopted by their tasks (gpushare.go).
//
// Imports: api, drivers, agent/{fingerprint,allocrunner,taskrunner,
// clientstate,gpushare}, internal/clock. It talks to servers only through
// api.Client; never imports server.
//
// Concurrency: Start launches the loops (register/heartbeat, alloc
// watch, status updates, re-fingerprint, disconnect watch, MIG changes) and one goroutine per alloc
// runner, all owned by the Client and waited for in Shutdown. Handler,
// HasAlloc and NodeID are safe for concurrent use.
package client
