// Package sim is the node simulator: thousands of simulated client nodes
// in one process that talk to drover servers over the same HTTP protocol
// the real client (agent/client) uses — register (PUT /v1/node/register),
// heartbeat within the TTL the server hands out (PUT
// /v1/node/{id}/heartbeat), blocking reads of the node's alloc IDs and
// AllocModifyIndexes (GET /v1/node/{id}/client-allocs?index=) with a fetch
// of the changed allocs (POST /v1/node/{id}/allocations/fetch), and
// batched status updates (PUT /v1/node/{id}/allocations/update).
//
// A simulated node runs nothing: an alloc it is given reads "running"
// after Config.RunDelay and, when Config.CompleteAfter is set, "complete"
// (or "failed", with probability Config.FailRate) that long after, each
// report with a state per task (running since its start, or dead at its
// finish, with their events) as a real client sends. Nodes
// carry realistic attributes and resources, datacenters, topology.rack and
// topology.block meta and, with Config.GPUs, the simulated DGX GPUs of
// agent/fingerprint/nvidia with their NVLink topology.
//
// It is built to be cheap at 10,000 nodes: all nodes share one HTTP/2
// (cleartext, prior knowledge) transport, so their long polls are
// multiplexed over a handful of connections; heartbeats, run-delay and
// completion timers live in one timer heap served by a small worker pool
// (jittered, so they spread); status changes are coalesced per node and
// flushed in one request per node per Config.UpdateCoalesce; alloc reads
// decode only the fields a node needs. The only per-node goroutine is the
// alloc watch, parked in its blocking read.
//
// drover sim (agent/cli) runs it from the command line; tests and
// benchmarks use Start and Stop.
package sim
