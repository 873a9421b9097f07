// Package state is the server's in-memory state store: a go-memdb database
// holding jobs (and their last versions and summaries), nodes, allocations,
// evaluations, deployments, node pools, queues and the scheduler
// configuration (a singleton), plus a per-table index of the last Raft
// index that changed it. The evals table indexes blocked evals that carry
// a gang's reservation, so Reservations (read by every scheduling pass) is
// one index lookup. The queue_usage table holds what each queue's
// non-terminal allocs hold, kept by the alloc writes in their own
// transaction (never persisted: a restore recomputes it), so QueueUsage
// is a read of one row per queue, not a scan of the allocs.
//
// The usage ledger (usage.go) is kept by the alloc writes themselves:
// hourly buckets of GPU-seconds per model, CPU-core-seconds and memory
// GiB-seconds per namespace, job and queue, the open intervals of running
// allocs and per-queue totals, all computed from times carried in the
// Raft entries (never the wall clock), so every server's ledger is the
// same; Usage and UsageTotals read it with running allocs up to a given now.
//
// It owns: the memdb schema, the write methods the FSM calls (one memdb
// transaction each, stamped with the Raft index), the read methods the HTTP
// layer and the scheduler call, immutable point-in-time snapshots, blocking
// query support through memdb.WatchSet, the change-event broker that feeds
// the event stream, and the Persist/Restore helpers used for Raft snapshots.
//
// It must not import anything of drover but api (its tests also import
// server/scheduler to check that Snapshot.Scheduler() satisfies
// scheduler.State); it knows nothing of Raft, HTTP or agents.
//
// Concurrency: writes are serialised by the caller (the FSM applies one log
// entry at a time) and memdb additionally serialises write transactions.
// Reads and snapshots are safe from any number of goroutines at any time.
// Stored objects are immutable: a write takes ownership of the objects passed
// to it (the caller must not touch them afterwards) and every change to an
// existing object is made on a copy. Objects returned by reads are shared and
// must never be modified; copy them first (api types have Copy()).
//
// Write combines several writes into one transaction (the FSM commits a
// job and its eval together); each StateStore write method is Write around
// the Txn method of the same name.
//
// After a Raft snapshot restore the FSM swaps in a new StateStore and calls
// Abandon on the old one: every blocked query (its WatchSet includes
// AbandonCh) wakes up and must re-read from the new store.
package state
