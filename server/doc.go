// Package server is the server role: Raft-replicated state, the leader's
// evaluation broker and scheduler workers, the plan applier, and the
// components the HTTP layer calls.
//
// Shape. Server is a shell. It owns the lifecycle (New, Shutdown), Raft
// (status, peers, and raftApply: the one write path, which fails with
// api.ErrNotLeader on a follower, where forwarding to the leader hooks
// in), leadership (the leader loop; two signals, LeaderChanged, a
// channel closed at the next change of leader, and Ready, a channel closed
// while this server leads with its duties running; snapshot restores
// pausing the duties) and gossip membership (bootstrap with
// BootstrapExpect, the leader's HTTP address). Everything else is a
// component it builds in New and hands out:
//
//   - Jobs: register, deregister, evaluate, plan (a dry run of the
//     scheduler), dispatch, periodic force, revert, scale, job diffs.
//   - Nodes: node registration (with an introduction token or a client
//     certificate where required), heartbeats, drain, eligibility, the
//     clients' alloc updates (group-committed), introduction tokens, and a
//     node leaving service when its TTL runs out (down, or disconnected
//     for its allocs' max_client_disconnect).
//   - Allocs: stop one allocation. Deployments: promote, fail, pause.
//   - ACL: tokens, policies, roles; resolving a secret (a token, a node
//     secret, a task's workload identity) to an acl.ACL.
//     SSO: OIDC auth methods, binding rules and logins.
//   - Keyring: the root keys; workload identities, JWKS, and the
//     signatures of node introductions.
//   - Tenancy: namespaces, node pools, queues (and their fair shares);
//     the checks a job passes against them.
//   - Services: native service registrations.
//   - Variables: Nomad Variables, their items sealed with a key derived
//     from the keyring's active root key; check-and-set and locks.
//   - Operator: Raft peers, snapshot save and restore (a verified file
//     format), the scheduler configuration, GC now, eval delete.
//
// Each component embeds a copy of serverCore (the current state store,
// whether this server leads, typed Raft writes, the injected clock, a
// logger) and holds only the other parts it needs (Nodes the heartbeat
// timers and the Keyring, Tenancy the fair shares, Operator the Raft node
// and the blocked tracker); none holds the Server. agent/http consumes
// them through its own narrow interfaces, wired in
// agent/http/serverstate.
//
// Leader duties: each a component with narrow dependencies and Run(ctx),
// started by the leader loop for one leadership term: node heartbeat
// timers, scheduler workers, the plan applier (re-checks every node of a
// plan with server/capacity and queue limits before it commits), the
// drainer, eval GC, the eval reaper (failed and superseded evals), the
// periodic launcher (cron parsing is api.PeriodicConfig.Next), the
// deployment watcher (alloc health, rollout evals, failure, auto-revert,
// stable versions) and autopilot (new servers join as non-voters and are
// promoted once caught up, left ones are removed, failed ones after
// DeadServerGrace without risking quorum), and in a region that is not
// the authoritative one the ACL replicator (acl_replication.go: the
// authoritative region's policies and global tokens, read with blocking
// queries through Config.ACLReplication, written through this region's
// Raft; local tokens untouched), and in a federated region the spiller
// (spill.go: jobs with placement mode spill whose work waited
// spill_after move, whole and never once placed, to the other region
// where a dry-run plan says they fit soonest, through Config.Regions),
// and with Config.Autoscale policies the cluster autoscaler
// (autoscaler.go: server/autoscale's Scaler over the state, node drains
// and node removal).
// The queues' fair shares are
// computed per Raft index from state with server/fairshare, handed to the
// scheduler as Options.FairShare and to the broker as its queue-deficit
// order. Metrics are collected at scrape time (per-queue usage from the
// ledger, queue-status gauges).
//
// Reactions: components and duties write a change and the evals it calls
// for in one Raft entry; the FSM then tells the commit reactor, which
// hands pending evals to the broker, blocked ones to the blocked tracker,
// and wakes blocked evals when a node can take work, an alloc freed
// capacity (or room in a limited queue) or a queue changed. Nothing else
// enqueues or unblocks (a test enforces this); a new leader restores both
// from state.
//
// Imports: api, server/{state,fsm,raftstore,scheduler,broker,capacity,
// fairshare,acl}, internal/clock, hashicorp raft/memdb and prometheus.
// Never agent or drivers (a test enforces this).
//
// Concurrency: components are safe for concurrent use; their own state is
// a cache or a table under its lock (parsed ACL policies, OIDC logins in
// progress, parsed root keys, the alloc update batch). Server owns three
// kinds of goroutines and waits for them on Shutdown: the leader loop
// (one goroutine that turns leader duties on and off), the leader-change
// watch, and the bootstrap loop. Each leadership term runs every duty
// under one context and waits for all of them on revocation. Heartbeat
// timers come from the injected clock; a missed TTL spawns a node-down
// write the heartbeat duty waits for. The commit reactor runs on the
// FSM's goroutine and only takes the broker's and tracker's short locks.
package server
