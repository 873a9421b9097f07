// Package defrag plans defragmentation: which restartable allocs to move
// so that pending work that cannot place now finds room (a whole node, or
// enough GPUs on one node, for a pending alloc). Plan is pure: it reads
// nodes, their live allocs and the pending asks, and returns moves (alloc,
// from, to, why) and what they unblock. It commits nothing: the server
// applies a plan through evals of trigger api.EvalTriggerDefrag, whose
// scheduling pass places each moved alloc on its destination and stops
// the original in the same plan, or leaves it running.
//
// Rules: only allocs of batch and service jobs move; a gang member moves
// only with its whole gang; an alloc younger than its job's min_runtime
// stays; a job loses at most Budget.PerJob allocs (gangs count once) and
// a queue Budget.PerQueue per round; allocs sharing device instances and
// allocs holding static host ports stay; moves go only to nodes the
// alloc's job may use (datacenters, node pool) and never onto a node
// being freed. Moves are made only for a pending ask that then fits: no
// plan when nothing pending benefits. A pending gang is helped whole or
// not at all.
//
// Imports: api, server/capacity and the standard library only.
//
// Concurrency: none; Plan is a pure function of its Input.
package defrag
