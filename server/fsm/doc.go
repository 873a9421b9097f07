// Package fsm is the Raft finite state machine over the state store:
// versioned, typed commands (Encode/Decode, one leading message-type byte
// and a JSON envelope with a version), Apply of each command as one state
// transaction, and Snapshot/Restore of every table as a typed record stream
// (the usage ledger's three tables share record 14; a snapshot without it
// restores with an empty ledger).
//
// It imports api, server/state and hashicorp/raft; never agent, drivers or
// the server package (the server hooks in through the Hooks interface).
//
// Concurrency: Raft calls Apply, Snapshot and Restore from one goroutine,
// never concurrently (Snapshot's Persist runs concurrently with Apply on an
// immutable state snapshot). State may be called from any goroutine; it
// returns the current store, which Restore replaces (abandoning the old
// one), so callers re-fetch it rather than caching it across a restore.
// Hooks are called synchronously from Apply and must not block.
package fsm
