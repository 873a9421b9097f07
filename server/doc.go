// Package server is the server role: Raft-replicated state, the leader's
// evaluation broker, scheduler workers, the plan applier, heartbeats,
// drains and the endpoints the HTTP layer calls.
//
// Owns: Config/New/Shutdown, the leader loop (leader.go), scheduler workers
// (worker.go), the plan applier (plan_apply.go, fit.go), node heartbeats
// (heartbeat.go), the drainer (drain.go), eval GC (gc.go), the periodic
// launcher (periodic.go, cron.go), the deployment watcher and the
// deployment endpoints (deploymentwatcher.go: alloc health, rollout evals,
// failure, auto-revert, stable versions), the job diff (jobdiff.go), the endpoint
// methods (endpoints_*.go) and metrics. Multi-server: membership.go
// (Membership, the consumer view of gossip the agent adapts; bootstrap
// with BootstrapExpect; leader lookup by Raft address), autopilot.go (a
// leader duty: new servers join as non-voters and are promoted once caught
// up, left ones are removed, failed ones after DeadServerGrace without
// risking quorum; operator peer list/removal) and membership_snapshot.go
// (operator snapshot save/restore, verified before use; leader duties
// pause around a restore). Every write goes through
// Server.raftApply (apply.go encodes the fsm commands); on a follower it
// fails with api.ErrNotLeader — forwarding to the leader hooks in there.
//
// Imports: api, server/{state,fsm,raftstore,scheduler,broker}, hashicorp
// raft/memdb and prometheus. Never agent or drivers (a test enforces this).
//
// Concurrency: endpoint methods are safe for concurrent use. One goroutine
// (monitorLeadership, owned by New/Shutdown) turns leader duties on and
// off; each leadership term starts the plan applier, NumSchedulers
// workers, the drainer, the eval reaper, the GC, the periodic launcher and
// the deployment watcher
// under one context and waits for all of them on revocation. Heartbeat timers come from the injected clock;
// a missed TTL spawns a node-down write the heartbeat tracker waits for
// (node-disconnected first when its allocs' groups set max_client_disconnect:
// they become unknown, and the node goes down when the window passes).
// Evals are handed to the broker by the code that committed them (after
// Raft returns), and restored from state on gaining leadership.
package server
