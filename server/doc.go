// Package server is the server role: Raft-replicated state, the leader's
// evaluation broker, scheduler workers, the plan applier, heartbeats,
// drains and the endpoints the HTTP layer calls.
//
// Owns: Config/New/Shutdown; the server core every part shares (core.go:
// current state, typed Raft writes in apply.go, clock, log); the one
// commit-reaction path (reactions.go: the FSM's hooks); the leader loop
// (leader.go, which only starts and stops the leader duties); the duties,
// each a component with narrow dependencies and Run(ctx): scheduler workers
// (worker.go), the plan applier (plan_apply.go, fit.go over
// server/capacity; plan_quota.go re-checks queue limits), node heartbeats (heartbeat.go), the drainer
// (drain.go), eval GC (gc.go), the eval reaper (reaper.go), the periodic
// launcher (periodic.go; cron parsing is api.PeriodicConfig.Next), the
// deployment watcher (deploymentwatcher.go: alloc health, rollout evals,
// failure, auto-revert, stable versions) and autopilot (autopilot.go: new
// servers join as non-voters and are promoted once caught up, left ones
// are removed, failed ones after DeadServerGrace without risking quorum).
// The queues' fair shares (fair.go: computed per Raft index from state
// with server/fairshare, handed to the scheduler as Options.FairShare and
// to the broker as its queue-deficit order). Also the scheduler
// configuration (scheduler_config.go), the job diff
// (jobdiff.go), the endpoint methods (endpoints_*.go, deployment endpoints
// in deploymentwatcher.go) and metrics (metrics_queue.go: per-queue usage
// from the ledger and queue-status gauges, collected at scrape time). Multi-server: membership.go
// (Membership, the consumer view of gossip the agent adapts; bootstrap
// with BootstrapExpect; leader lookup by Raft address) and
// membership_snapshot.go (operator snapshot save/restore, verified before
// use; leader duties pause around a restore). Every write goes through
// Server.raftApply; on a follower it fails with api.ErrNotLeader —
// forwarding to the leader hooks in there.
//
// Reactions: endpoints and duties write a change and the evals it calls
// for in one Raft entry; the FSM then tells the commit reactor, which hands
// pending evals to the broker, blocked ones to the blocked tracker, and
// wakes blocked evals when a node can take work, an alloc freed capacity
// (or room in a limited queue) or a queue changed. Nothing else enqueues or unblocks (a test enforces this); a new
// leader restores both from state.
//
// Imports: api, server/{state,fsm,raftstore,scheduler,broker,capacity,fairshare},
// hashicorp raft/memdb and prometheus. Never agent or drivers (a test
// enforces this).
//
// Concurrency: endpoint methods are safe for concurrent use. One goroutine
// (monitorLeadership, owned by New/Shutdown) turns leader duties on and
// off; each leadership term runs every duty under one context and waits
// for all of them on revocation. Heartbeat timers come from the injected
// clock; a missed TTL spawns a node-down write the heartbeat duty waits for
// (node-disconnected first when its allocs' groups set
// max_client_disconnect: they become unknown, and the node goes down when
// the window passes). The commit reactor runs on the FSM's goroutine and
// only takes the broker's and tracker's short locks.
package server
