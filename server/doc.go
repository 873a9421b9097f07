// Package server is the server role: Raft-replicated state, the leader's
// evaluation broker, scheduler workers, the plan applier, heartbeats,
// drains and the endpoints the HTTP layer calls.
//
// It never imports agent or drivers (a test enforces this).
package server
