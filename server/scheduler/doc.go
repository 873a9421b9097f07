// Package scheduler turns an evaluation into a plan. It is pure: Schedule
// reads an immutable State snapshot and returns a Result; it does no I/O,
// starts no goroutines and takes its clock and randomness from Options
// (node order is shuffled with a seed derived from the eval ID; alloc IDs
// and dynamic ports come from a generator seeded with the eval ID and the
// snapshot index, so a retried pass never reuses committed IDs).
//
// What it owns: reconciliation (service, batch, system, sysbatch: place,
// stop, in-place vs destructive updates (the rule is on destructiveChange),
// rolling updates and canaries with deployments (the next batch waits for
// the health verdicts the server's deployment watcher writes; only with
// health_check "manual" does a running alloc count as healthy; a failed
// deployment halts its version's rollout), lost and migrating allocs,
// unknown allocs of disconnected nodes (disconnect.go: replaced, not
// stopped; on reconnect the older copy stops),
// rescheduling with delays and follow-up evals), feasibility
// (readiness, datacenters, pools, constraints, drivers, resources, ports,
// devices, with per computed-class caching), ranking (bin-packing, job
// anti-affinity, affinities, spread, device fit and topology) with node
// sampling, preemption of allocs of jobs at least 10 priority points lower
// (preempt.go: every job type by default, Options.Preemption; the
// cheapest victim set by highest priority, resources with devices
// weighted most, count and run time lost; preemptible = false and
// min_runtime protect work; a gang is evicted whole, on every node, an
// elastic one only down to its min), reservations that keep pending gangs
// from starving (reserve.go: recorded on the blocked eval, read back
// through State.Reservations, lower-priority work only backfills what the
// reservation does not need), all-at-once (gang) placement, and failure
// explanations (AllocMetric, ExplainFailure).
//
// Structure of a pass: reconcileGroup decides per group and returns a
// groupResult (stops, updates, placements, follow-up evals, annotation);
// applyGroup turns it into plan edits; then the placements are made.
// Node fit bookkeeping is server/capacity's (the same model the plan
// applier checks with; NodePlanFits is the scheduler's verdict on a plan's
// node for differential tests). Placement state can be checkpointed and
// rolled back (checkpoint, rollback, release: an undo journal of node
// usage, stops and per-group cursors) so a set of placements can be tried
// and undone. Options.Algorithm picks the fit score: binpack (default,
// fullest nodes first) or spread (emptiest first), as Nomad's
// scheduler_algorithm.
//
// Placement cost: nodes are visited in the shuffled order from a per-group
// cursor; nodes found infeasible or full are skipped for the rest of the
// pass, and each placement scores at most SampleLimit feasible nodes
// (default max(2, ceil(log2 n)) for service, 2 for batch, at least 32 for
// groups asking for devices so tight GPU fits are found, 100 for groups
// with affinities or spreads, which need a wider view).
//
// Imports: api, server/capacity and the standard library (plus small pure
// libraries such as go-version). Never server/state, agent or drivers.
//
// Concurrency: Schedule is safe to call from many goroutines at once as
// long as each call has its own State; it shares nothing between calls.
package scheduler
