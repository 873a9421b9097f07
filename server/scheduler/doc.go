// Package scheduler turns an evaluation into a plan. It is pure: Schedule
// reads an immutable State snapshot and returns a Result; it does no I/O,
// starts no goroutines and takes its clock and randomness from Options
// (node order is shuffled with a seed derived from the eval ID; alloc IDs
// and dynamic ports come from a generator seeded with the eval ID and the
// snapshot index, so a retried pass never reuses committed IDs).
//
// # Stages
//
// A pass runs four stages over shared inputs (passEnv: the state
// snapshot, eval, options and job, the seeded generator of IDs and dynamic
// ports, the pass's first error) into one output record (output: the plan
// and result, the failed groups' metrics and queued counts, the blocked
// eval's class eligibility). The pass type only wires the stages and runs
// them in order: reconcile a group, apply its decisions, next group; then
// place; then explain what stayed pending and finish the eval. No stage
// reads another's fields: each reaches the others through the methods and
// the small consumer-owned interfaces named below, and no stage has a mode
// switch another sets.
//
//   - reconcile (reconciler): per group, the diff between the job and its
//     allocs, a groupResult: stops, in-place updates, placements (each with
//     the alloc it replaces), follow-up evals and annotation counts. It
//     reads the job, the eval, the clock, node statuses (nodeIndex) and the
//     state's deployments, and draws IDs; it edits only the plan's
//     deployment, which all groups share, and never sees node usage. A
//     system job's group goes in two steps through systemNodes (the
//     candidate nodes and the group's class and node checks): its existing
//     allocs, then, once their stops are applied, one new alloc on each
//     node still without one. The pass applies every groupResult before
//     the next group is reconciled (applyGroup: the stops through the
//     placer; updates, follow-ups and the deployment verdict to the plan).
//   - placer (placer, built with the ranker, gangPlacer, ledger,
//     queueLimits, reservations and devicePicker): owns node state and the
//     placements. The ledger is the candidate nodes (ready, in the job's
//     datacenters and pool, shuffled), their usage (server/capacity's
//     model, the one the plan applier checks with, read on a node's first
//     visit), the allocs this plan stops, and an undo journal: every change
//     to usage, stops, group cursors and skip marks, distinct_property and
//     spread counters and queue usage goes through the ledger, journaled,
//     so checkpoint, rollback and release can try a set of placements and
//     undo it. The ranker holds each group's context, the feasibility
//     checks (class, node, resources, devices, room held by reservations,
//     queue limits) and the scores, and walks the shuffled nodes or a
//     device index. place makes one alloc in node state (its victims
//     evicted); keep writes it, its evictions and the stop of the alloc it
//     replaces to the plan; gangPlacer holds a gang's members apart inside
//     a checkpoint and keeps them all or rolls them back. A failed group's
//     metric says why now (failureMetric); the placer also writes the
//     blocked eval's reservation.
//   - preemptor: the victim-set solver over preemptView, a read-only view
//     of the placer (eligible, fits, score, stopped). It may probe a node
//     (take victims out, check the fit, put them back, restore the alloc
//     order) but leaves it as it found it: evicting the set it returns is
//     the placer's. A victimRule parameter says whose allocs it may take:
//     the scheduler's rule, or the relaxed one of why pending. It owns the
//     fair-share tally and the cache of other jobs' gangs.
//   - explainer: at the end of the pass, every failed group's reasons and
//     counterfactuals (why pending, below). It reads the placer through
//     explainView (candidates, group contexts, eligible, fits), runs the
//     preemptor with the relaxed victimRule (naming the queue whose limit
//     the group is at, if any) and moves the queue limits' usage to try a
//     release; it leaves node usage and queue usage as it found them.
//
// NodePlanFits replays one node of a plan on the ledger's bookkeeping: the
// scheduler's verdict, for differential tests against the plan applier.
//
// # Reconcile
//
// Service, batch, system and sysbatch jobs: place, stop, in-place vs
// destructive updates (the rule is on destructiveChange), rolling updates
// and canaries with deployments (the next batch waits for the health
// verdicts the server's deployment watcher writes; only with health_check
// "manual" does a running alloc count as healthy; a failed deployment
// halts its version's rollout), lost and migrating allocs, unknown allocs
// of disconnected nodes (replaced, not stopped; on reconnect the older
// copy stops), rescheduling with delays and follow-up evals. A group's
// new allocs are one placement (placement.fresh) made one by one at the
// lowest free indexes as they are placed; once the group fails the rest
// are counted as coalesced failures at once, so a pass costs what fits,
// not what was asked (gangs list their members: their counts are within
// the bound). A group above Options.MaxGroupCount (the server's
// job_max_group_count; a job stored before it) is left alone with its
// gang: nothing placed, stopped or updated, an api.PendingCountLimit
// reason and no blocked eval (refuseOverLimit).
//
// # Placement
//
// Feasibility (readiness, datacenters, pools, constraints, drivers,
// resources, ports, devices, with per computed-class caching), ranking
// (bin-packing, job anti-affinity (service groups without devices by
// default; spread blocks or the meta MetaJobAntiAffinity turn it on or
// off), affinities, spread, device fit and topology) with node sampling.
// Options.Algorithm picks the fit score: binpack (default, fullest nodes
// first) or spread (emptiest first), as Nomad's scheduler_algorithm.
// Device picks work on the device graph (worst link level, NUMA nodes
// spanned, then best fit, taking devices from the most used NVLink
// island, PCIe switch and NUMA node first so whole ones stay free), with
// reserved cores from the NUMA nodes of the devices picked (when the node
// reports NodeCpuResources.NUMA). Reservations keep pending gangs from
// starving: recorded on the blocked eval, read back through
// State.Reservations; lower-priority work only backfills what the
// reservation does not need. Queue limits: a placement stays within the
// Limit of the job's queue and of each ancestor, from State.QueueUsage and
// the plan's own stops and placements; failures say which limit in
// AllocMetric.QuotaExhausted.
//
// Placement cost: nodes are visited in the shuffled order from a per-group
// cursor; nodes found infeasible or full are skipped for the rest of the
// pass, and each placement scores at most SampleLimit feasible nodes
// (default max(2, ceil(log2 n)) for service, 2 for batch, at least 32 for
// groups asking for devices, 100 for groups with affinities or spreads,
// which need a wider view). Groups asking for devices do not walk the
// shuffled order: they keep a per-pass index of every node with matching
// devices, ordered by how their first ask fits (nodes that can give it the
// interconnect of an empty node first, then fewest free matching
// devices), kept current from the ledger's log of changed nodes, and score
// the first feasible nodes of that order, so the tight fits of the whole
// cluster are seen (best-fit) at one cheap count per node and pass.
//
// Gangs: a group with a gang block, or every group of a job with one
// (job.GangOf), places its new allocs as one unit. The members are placed
// one by one with the normal machinery inside a checkpoint; each
// placement (alloc, evictions, link to the alloc it replaces) is held
// apart from the plan until enough members fit: every member, or Min (an
// elastic gang places up to its counts, never fewer than Min); with
// members running, what is missing to reach Min (at or above Min,
// replacements are placed one by one). Otherwise the checkpoint is rolled
// back (node usage, victims, cursors): nothing is held, every group of the
// gang fails with AllocMetric.GangFailure ("gang train needs 8 members, 7
// fit"), the stops of destructive updates are taken back and a blocked
// eval retries when capacity frees. Placed members get an AllocGang (rank
// by placement order, a replacement keeps the rank it replaces; leader =
// rank 0's address and its reserved drover_gang dynamic port, asked like
// any port so the applier checks it); plan.Gangs lists each gang placed as
// a unit, which the plan applier commits whole or not at all. An unplaced
// gang fails after Timeout from the job version's SubmitTime (no blocked
// eval then; a follow-up eval at the deadline before). A gang whose
// running members stay below Min longer than StaleGrace (from the newest
// failed or lost member) is stopped and placed again whole in the same
// pass (a follow-up eval at the grace deadline before). Topology packs
// members by node meta "topology.<level>": single domains first, best fit
// (the least room that still holds the gang); "required" stops there,
// "preferred" then tries the fewest domains, largest first, then any
// node. Job-level all_at_once is the job-wide case of the same code (no
// gang info; plan.AllAtOnce makes the applier reject the whole plan).
//
// # Preemption
//
// Allocs of jobs at least 10 priority points lower may be evicted
// (every job type by default, Options.Preemption): the cheapest victim
// set by highest priority, resources with devices weighted most, count
// and run time lost; preemptible = false and min_runtime protect work; a
// gang is evicted whole, on every node, an elastic one only down to its
// min. With Options.FairShare, preemption across queues is reclaim by fair
// share: allocs of queues above their share may be evicted for a queue
// below its share regardless of job priority, never dropping a victim
// queue below its share and always lowering the distance from fairness,
// so reclaims cannot loop; priority preempts only within a queue.
//
// # Why pending
//
// A failed placement's AllocMetric counts what the walk over the nodes
// rejected and why (ExplainFailure renders it). At the end of a pass every
// failed group's metric gets structured Reasons (quota, gang, no nodes,
// device shortfalls with the largest free and NVLink-connected set,
// exhausted dimensions, constraints; never none) and Counterfactuals: the
// preemption search rerun with its rules relaxed to every lower-priority
// alloc says which job would have made room and what stopped it
// (preemption disabled, priority gap under 10, preemptible = false,
// min_runtime), and a bounded walk names the running job whose end frees
// room (batch first, then the longest running); at a queue limit only work
// of that queue's subtree counts. Both look at no more nodes than
// preemption and leave node state as they found it.
//
// Imports: api, server/capacity, server/fairshare (pure: shares and the
// reclaim rule), server/glob and the standard library (plus small pure
// libraries such as go-version). Never server/state, agent or drivers.
//
// Concurrency: Schedule is safe to call from many goroutines at once as
// long as each call has its own State; it shares nothing between calls.
// ScheduleContext's context is checked before every placement: when it
// ends (server shutdown, lost leadership) the pass stops there and returns
// its error.
package scheduler
