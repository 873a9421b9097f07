// Package capacity is drover's one model of a node's resources: what a
// node offers, what its allocations use, and whether one more allocation
// (or a placement ask) fits. Both the scheduler (server/scheduler, its
// per-pass node bookkeeping) and the plan applier (server, nodeFits) use
// it, so they cannot disagree on what fits.
//
// What it owns: the resource Vector of one allocation or ask (cpu MHz,
// memory MB, disk MB, reserved core IDs or a core count, static host
// ports and a dynamic port count, device instance IDs), the Node ledger
// (capacity after the node's reservations, usage with Add and Sub that
// are exact inverses, Fits with an Exhausted explanation naming the
// dimension), and the one parser of port specs ("22,80,8000-8010", as in
// ReservedHostPorts). The dimension names are the DimensionExhausted keys
// the scheduler reports to users ("cpu", "memory", "network: port
// collision", ...); they must not change.
//
// Device shares (GPU sharing): a Vector's Shares hold thousandths of an
// instance's compute and MiB of its memory, in a mode; an instance is
// either held whole or shared, in one mode at a time, its shares within
// 1000 thousandths and its memory (the group's "memory" attribute).
//
// Imports: api and the standard library only (enforced by layout_test.go).
// It must not import server/state, the scheduler, agent or drivers.
//
// Concurrency: none. A Node is a plain value owned by one goroutine (one
// scheduling pass or one plan check); nothing is shared or locked.
package capacity
