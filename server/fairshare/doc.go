// Package fairshare computes each queue's fair share of the cluster and
// judges reclaims (preemptions across queues) against those shares. It is
// pure: Compute takes the queue tree, the cluster's capacity, each
// queue's demand and allocation and the decayed usage history, and
// returns Shares; no I/O, no clock (History.Advance takes the time), no
// randomness, and the same input always gives the same output.
//
// The math (fairshare.go, fill.go):
//
//   - Resources are a vector: GPUs (any model), CPU (MHz) and memory
//     (MB); a share is split by GPU model in proportion to the queue's
//     demand (most asks name no model, see space in vec.go). A queue's
//     dominant share of an amount v is max over dimensions r of v_r/C_r
//     (C: the cluster's capacity; dimensions with no capacity are left
//     out). Demand is capped by the queue's limit and the capacity.
//   - Recursively from the root, each parent's share (the cluster for
//     top queues) is split among its children: first each child's
//     guarantee, min(guaranteed, demand) per dimension (scaled down
//     proportionally only when the guarantees do not fit); then what is
//     left is water-filled among the children, the highest priority
//     first, by weighted dominant-resource progressive filling: every
//     child still wanting more grows its dominant share at the rate of
//     its effective weight, along the direction of its unmet demand,
//     until its demand is met or a resource it uses runs out. A queue
//     with both jobs of its own and children has a pseudo child (its own
//     name, weight 1) for its own jobs.
//   - What the filling of a parent's share leaves (demands coupling
//     resources, one of which ran out) is spread per dimension among the
//     children that want it, so the children's shares add up to the
//     parent's.
//   - Then one more filling over all leaves, with flattened weights and
//     the ancestors' limits as extra constraints, hands out what the
//     hierarchy could not (idle capacity is borrowable): the result is
//     work-conserving.
//   - Effective weight = weight * clamp(1 - usageWeight*o, 0.5, 1.5),
//     where o is how much more than its weight's expectation the queue
//     used in the past (History: exponentially decayed dominant share,
//     Config.HalfLife), relative to what its active siblings used
//     together. A queue is charged at least EntryPenalty times its
//     expectation (Config.EntryPenalty, default 1): idling earns no
//     credit of its own, so a new queue, or one that idles and then
//     bursts, cannot game the history.
//
// Invariants (checked by the property tests in fairshare_test.go):
// shares never exceed the capacity (in sum, per dimension) nor a queue's
// capped demand; each queue gets at least min(guarantee, demand) when the
// guarantees fit; work conservation: a queue short of its demand was
// stopped by a resource it wants running out or by a limit of its own or
// an ancestor's, never by idle capacity it could use; with unbounded
// demand and no history, siblings' shares follow their weights.
//
// Reclaim (reclaim.go): a queue below its fair share may preempt allocs
// of queues above theirs, regardless of job priority, as long as no
// victim queue drops below its own share and the distance from fairness,
// Φ = Σ_q |L_q - F_q*U| over queues (L: dominant share allocated, F:
// dominant fair share, U = ΣL/ΣF capped at 1: when fragmentation leaves
// capacity no ask can use, the shares that count are those of what is
// held), strictly decreases. Φ is a function of the state alone and the
// states are finite, so reclaims can never loop.
//
// Imports: api and the standard library only.
//
// Concurrency: Shares and History are immutable once returned and safe to
// share between goroutines; a Tally is one goroutine's.
package fairshare
