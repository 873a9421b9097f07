// Package raftstore builds a *raft.Raft for a server: a raft-boltdb/v2 log
// and stable store (DataDir/raft/raft.db), file snapshots
// (DataDir/raft/snapshots, two retained), a TCP transport on
// BindAddr:RaftPort advertising RaftAddr, a server ID persisted in
// DataDir/node-id, an hclog-to-slog adapter, timeouts tuned so a single
// voter elects itself quickly, and an in-memory mode (no DataDir) for tests
// and the dev agent.
//
// It imports only hashicorp/raft and its stores; no drover package (the FSM
// is passed in as a raft.FSM).
//
// Concurrency: New and Shutdown are called once each by the owning server;
// the returned *raft.Raft is safe for concurrent use.
package raftstore
