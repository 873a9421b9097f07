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
// anti-affinity (service groups without devices by default; spread blocks
// or the meta MetaJobAntiAffinity turn it on or off), affinities, spread,
// device fit and topology) with node sampling, device picks on the
// device graph (devset.go: worst link level, NUMA nodes spanned, then
// best fit, taking devices from the most used NVLink island, PCIe switch
// and NUMA node first so whole ones stay free) with reserved cores from
// the NUMA nodes of the devices picked (when the node reports
// NodeCpuResources.NUMA), preemption of allocs of jobs at least 10
// priority points lower (preempt.go: every job type by default,
// Options.Preemption; the cheapest victim set by highest priority,
// resources with devices weighted most, count and run time lost;
// preemptible = false and min_runtime protect work; a gang is evicted
// whole, on every node, an elastic one only down to its min),
// reclaim by queue fair share when Options.FairShare is set (reclaim.go:
// across queues, allocs of queues above their share may be evicted for a
// queue below its share regardless of job priority, never dropping a
// victim queue below its share and always lowering the distance from
// fairness, so reclaims cannot loop; priority preempts only within a
// queue), reservations that keep pending gangs from starving (reserve.go:
// recorded on the blocked eval, read back through State.Reservations,
// lower-priority work only backfills what the reservation does not
// need), queue limits (quota.go: a placement stays within the Limit of
// the job's queue and of each ancestor, from State.QueueUsage and the
// plan's own stops and placements; failures say which limit in
// AllocMetric.QuotaExhausted), gangs (below), and failure explanations
// (AllocMetric, ExplainFailure). Why pending (explain_pending.go): at
// the end of a pass every failed group's metric gets structured Reasons
// (quota, gang, no nodes, device shortfalls with the largest free and NVLink-connected
// set, exhausted dimensions, constraints; never none) and
// Counterfactuals: the preemption search rerun with its rules relaxed to
// every lower-priority alloc says which job would have made room and what
// stopped it (preemption disabled, priority gap under 10, preemptible =
// false, min_runtime), and a bounded walk names the running job whose end
// frees room (batch first, then the longest running); at a queue limit
// only work of that queue's subtree counts. Both look at no more nodes
// than preemption and leave node state as they found it.
//
// Gangs (gang.go, topology.go): a group with a gang block, or every group
// of a job with one (job.GangOf), places its new allocs as one unit. The
// members are placed one by one with the normal machinery inside a
// checkpoint; each placement (alloc, evictions, link to the alloc it
// replaces) is held apart from the plan until enough members fit: every
// member, or Min (an elastic gang places up to its counts, never fewer
// than Min); with members running, what is missing to reach Min (at or
// above Min, replacements are placed one by one). Otherwise the
// checkpoint is rolled back (node usage, victims, cursors): nothing is
// held, every group of the gang fails with AllocMetric.GangFailure ("gang
// train needs 8 members, 7 fit"), the stops of destructive updates are
// taken back and a blocked eval retries when capacity frees. Placed
// members get an AllocGang (rank by placement order, a replacement keeps
// the rank it replaces; leader = rank 0's address and its reserved
// drover_gang dynamic port, asked like any port so the applier checks
// it); plan.Gangs lists each gang placed as a unit, which the plan
// applier commits whole or not at all. An unplaced gang fails after
// Timeout from the job version's SubmitTime (no blocked eval then; a
// follow-up eval at the deadline before). A gang whose running members
// stay below Min longer than StaleGrace (from the newest failed or lost
// member) is stopped and placed again whole in the same pass (a
// follow-up eval at the grace deadline before). Topology packs members
// by node meta "topology.<level>": single domains first, best fit (the
// least room that still holds the gang); "required" stops there,
// "preferred" then tries the fewest domains, largest first, then any
// node. Job-level all_at_once is the job-wide case of the same code (no
// gang info; plan.AllAtOnce makes the applier reject the whole plan).
//
// Structure of a pass: reconcileGroup decides per group and returns a
// groupResult (stops, updates, placements, follow-up evals, annotation);
// applyGroup turns it into plan edits; then the placements are made.
// Node fit bookkeeping is server/capacity's (the same model the plan
// applier checks with; NodePlanFits is the scheduler's verdict on a plan's
// node for differential tests). Placement state can be checkpointed and
// rolled back (checkpoint, rollback, release: an undo journal of node
// usage, stops and per-group cursors) so a set of placements can be tried
// and undone (gangs). Options.Algorithm picks the fit score: binpack (default,
// fullest nodes first) or spread (emptiest first), as Nomad's
// scheduler_algorithm.
//
// Group counts: a group's new allocs are one placement (placement.fresh)
// made one by one at the lowest free indexes as they are placed; once the
// group fails the rest are counted as coalesced failures at once, so a
// pass costs what fits, not what was asked (gangs list their members: their
// counts are within the bound). A group above Options.MaxGroupCount (the
// server's job_max_group_count; a job stored before it) is left alone with
// its gang: nothing placed, stopped or updated, an api.PendingCountLimit
// reason and no blocked eval (refuseOverLimit).
//
// Placement cost: nodes are visited in the shuffled order from a per-group
// cursor; nodes found infeasible or full are skipped for the rest of the
// pass, and each placement scores at most SampleLimit feasible nodes
// (default max(2, ceil(log2 n)) for service, 2 for batch, at least 32 for
// groups asking for devices, 100 for groups with affinities or spreads,
// which need a wider view). Groups asking for devices do not walk the
// shuffled order: they keep a per-pass index of every node with matching
// devices (devindex.go), ordered by how their first ask fits (nodes that
// can give it the interconnect of an empty node first, then fewest free
// matching devices), kept current from the pass's log of changed nodes,
// and score the first feasible nodes of that order, so the tight fits of
// the whole cluster are seen (best-fit) at one cheap count per node and
// pass.
//
// Imports: api, server/capacity, server/fairshare (pure: shares and the
// reclaim rule) and the standard library (plus small pure libraries such
// as go-version). Never server/state, agent or drivers.
//
// Concurrency: Schedule is safe to call from many goroutines at once as
// long as each call has its own State; it shares nothing between calls.
// ScheduleContext's context is checked before every placement: when it
// ends (server shutdown, lost leadership) the pass stops there and returns
// its error.
package scheduler
