// Package autoscale is the cluster autoscaler: per node pool, a Policy
// (min, max, provider, node shape, cooldown, scale-in strategy and idle
// time, Nomad Autoscaler's words) and the decisions that follow from the
// cluster's state.
//
// Scale-out is computed from the pending work itself with the real
// scheduler as the counterfactual: the blocked evals are scheduled again
// on the state plus virtual nodes of the pool's shape (first the nodes
// already booting, then up to max), and the virtual nodes the passes use
// are the nodes to buy. The scheduler places gangs whole or not at all and
// keeps every queue within its limits, so capacity is never bought for a
// part of a gang or for work its queue may not run (Demand, overlay.go).
//
// Scale-in picks nodes the provider owns, past the pool's min only: with
// "empty", nodes without work for the idle time; with "least_busy", the
// least used node idle that long whose work the scheduler places on the
// other nodes (a gang's members only when the whole gang moves). Chosen
// nodes are drained with a deadline, then destroyed (Scaler).
//
// Providers (Provider) sit behind a small interface: sim (bookkeeping with
// a boot delay and a price, for benchmarks), local (real client agents on
// this host, for e2e tests) and external (any command speaking JSON lines,
// external.go). Interruptions of spot capacity drain the node with the
// notice's deadline and the reason "spot interruption".
//
// Imports: api, server/scheduler (pure), internal/clock and the standard
// library; never server/state or agent. Decisions (Demand, ScaleIn) are
// pure functions of their inputs; Scaler.Step runs one pass from the
// caller's goroutine; Scaler.Run is the leader duty's loop on the injected
// clock. Providers are safe for concurrent use.
package autoscale
