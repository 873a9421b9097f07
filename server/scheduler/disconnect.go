package scheduler

import (
	"github.com/drover/drover/api"
)

// Disconnected clients (a group's max_client_disconnect), as in Nomad:
//
//   - An alloc the server marked unknown (its node missed its heartbeat
//     and is disconnected) is not stopped, since its client may still run
//     it, but it no longer counts toward the group: it gets a replacement
//     (PreviousAllocation set, no stop, no NextAllocation on the unknown
//     alloc: its node takes no plan writes while disconnected).
//   - An unknown alloc that already has a live replacement is left alone.
//   - When the node is back and the client reported the alloc's real
//     status, the alloc and its replacement are duplicates: the older copy
//     (the original) stops and the replacement keeps running. (Nomad keeps
//     the original by default; drover's rule is that the copy placed while
//     the node was away wins, so a reconnect never moves work twice.)
//   - When the window passes without a reconnect the server marks the node
//     down and the unknown allocs lost; reconcile then treats them as any
//     lost alloc whose index is held by its replacement.
//
// An unknown alloc on a node that is ready again keeps its slot until its
// client reports: a replacement then would only become a duplicate.

// disconnects takes the group's allocs (sorted by index) and returns
// those reconciler.group handles as usual, plus the unknown allocs to
// replace without stopping them. Reconnected originals that have a live
// replacement are stopped here (the first stops of r).
func (rc *reconciler) disconnects(r *groupResult, allocs []*api.Allocation) (rest, replace []*api.Allocation) {
	d := &r.desired
	next := map[string]*api.Allocation{} // PreviousAllocation -> its replacement
	disconnect := false
	for _, a := range allocs {
		if a.PreviousAllocation != "" {
			next[a.PreviousAllocation] = a
		}
		if a.ClientStatus == api.AllocClientStatusUnknown {
			disconnect = true
		}
	}
	if !disconnect && !replacedWhileAway(allocs, next) {
		return allocs, nil
	}
	rest = allocs[:0:0]
	for _, a := range allocs {
		if a.TerminalStatus() {
			rest = append(rest, a)
			continue
		}
		live := liveSuccessor(a, next)
		switch {
		case a.ClientStatus == api.AllocClientStatusUnknown && live != nil:
			d.Ignore++ // its replacement runs; the window decides its fate
		case a.ClientStatus == api.AllocClientStatusUnknown && rc.nodes.disconnected(a):
			replace = append(replace, a)
		case a.ClientStatus != api.AllocClientStatusUnknown && live != nil && a.DesiredStatus == api.AllocDesiredStatusRun:
			r.stop(a, "alloc not needed: its replacement runs since its node reconnected", "")
			d.Stop++
		default:
			rest = append(rest, a)
		}
	}
	return rest, replace
}

// replacedWhileAway reports whether some live alloc has a live successor
// (the state after a reconnect), so the common case pays one pass only.
func replacedWhileAway(allocs []*api.Allocation, next map[string]*api.Allocation) bool {
	if len(next) == 0 {
		return false
	}
	for _, a := range allocs {
		if !a.TerminalStatus() && liveSuccessor(a, next) != nil {
			return true
		}
	}
	return false
}

// liveSuccessor follows the replacement chain from a and returns the first
// live alloc on it (nil when none). Successors of a live alloc are only
// made for unknown allocs: every other replacement stops its predecessor.
func liveSuccessor(a *api.Allocation, next map[string]*api.Allocation) *api.Allocation {
	seen := map[string]bool{a.ID: true}
	for n := next[a.ID]; n != nil && !seen[n.ID]; n = next[n.ID] {
		if !n.TerminalStatus() {
			return n
		}
		seen[n.ID] = true
	}
	return nil
}
