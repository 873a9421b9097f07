package scheduler

import "github.com/drover/drover/api"

// Checkpoint and rollback of the ledger, so a set of placements (a gang)
// can be tried and undone: while a checkpoint is open every change to
// node usage goes into an undo journal (not a copy of the nodes), and
// rollback replays it backwards. Every change to the ledger goes through
// the methods below, which journal it.
//
// What is restored: each node's usage ledger, live-alloc list (in its
// order) and job counters; the allocs marked stopped; each group's
// skipped nodes, cursor, failed flag, distinct_property and spread
// counters; the queue usage the limits are checked against. What is not:
// the plan and the eval's failure metrics; the caller keeps the
// placements of an attempt apart and appends them to the plan only when
// the attempt is kept (drop them otherwise).

type undoKind uint8

const (
	undoAdd     undoKind = iota // an alloc was counted on ns
	undoRemove                  // an alloc was released from ns at pos
	undoStopped                 // alloc ID marked stopped
	undoSkip                    // tc.skip[idx] was set
	undoCursor                  // tc.start was start
	undoFailed                  // tc.failed was false
	undoCount                   // tc.count(node, group, +1)
	undoUnskip                  // tc.skip[idx] was cleared (an eviction freed the node)
	undoQuota                   // countQuota(alloc, pos) (queue limits, quota.go)
)

type undoEntry struct {
	kind  undoKind
	ns    *nodeState
	alloc *api.Allocation
	pos   int
	tc    *tgCtx
	node  *api.Node
	group string
}

// checkpoint marks the node state to roll back to. Checkpoints nest; each
// must end with rollback or release, innermost first.
type checkpoint struct{ at, depth int }

func (l *ledger) checkpoint() checkpoint {
	l.undoDepth++
	return checkpoint{at: len(l.undo), depth: l.undoDepth}
}

// rollback undoes every node-state change since cp and closes it.
func (l *ledger) rollback(cp checkpoint) {
	l.closeCheckpoint(cp)
	job := l.env.job
	for i := len(l.undo) - 1; i >= cp.at; i-- {
		e := &l.undo[i]
		switch e.kind {
		case undoAdd:
			e.ns.removeAlloc(e.alloc, job)
		case undoRemove:
			e.ns.insertAlloc(e.pos, e.alloc, job)
		case undoStopped:
			delete(l.stopped, e.alloc.ID)
		case undoSkip:
			e.tc.skip[e.pos] = false
		case undoUnskip:
			e.tc.skip[e.pos] = true
		case undoCursor:
			e.tc.start = e.pos
		case undoFailed:
			e.tc.failed = false
		case undoCount:
			e.tc.count(e.node, e.group, -1)
		case undoQuota:
			l.quota.apply(e.alloc, -e.pos)
		}
		l.undo[i] = undoEntry{}
	}
	l.undo = l.undo[:cp.at]
}

// release closes cp keeping its changes (an enclosing checkpoint can
// still undo them).
func (l *ledger) release(cp checkpoint) {
	l.closeCheckpoint(cp)
	if l.undoDepth == 0 {
		clear(l.undo)
		l.undo = l.undo[:0]
	}
}

func (l *ledger) closeCheckpoint(cp checkpoint) {
	if cp.depth != l.undoDepth {
		panic("scheduler: checkpoints closed out of order")
	}
	l.undoDepth--
}

func (l *ledger) journal(e undoEntry) {
	if l.undoDepth > 0 {
		l.undo = append(l.undo, e)
	}
}

// addTo counts a on ns (a placement), journaled.
func (l *ledger) addTo(ns *nodeState, a *api.Allocation) {
	ns.addAlloc(a, l.env.job)
	l.journal(undoEntry{kind: undoAdd, ns: ns, alloc: a})
}

// removeFrom releases a from ns (a stop or an eviction), journaled.
func (l *ledger) removeFrom(ns *nodeState, a *api.Allocation) {
	for _, x := range ns.allocs {
		if x.ID == a.ID {
			a = x // journal what was counted
			break
		}
	}
	if pos := ns.removeAlloc(a, l.env.job); pos >= 0 {
		l.journal(undoEntry{kind: undoRemove, ns: ns, alloc: a, pos: pos})
	}
}

// stopAlloc marks a stopped by this plan and releases it from its node's
// usage (when the node is loaded), journaled.
func (l *ledger) stopAlloc(a *api.Allocation) {
	l.markStopped(a)
	if ns := l.byID[a.NodeID]; ns != nil && ns.loaded {
		l.removeFrom(ns, a)
	}
}

// unstopAlloc takes back a stop of this plan (the alloc keeps running):
// it counts again on its node and in its queue. The stopped mark itself
// is not journaled (an attempt that follows cannot undo it).
func (l *ledger) unstopAlloc(a *api.Allocation) {
	if !l.stopped[a.ID] {
		return
	}
	delete(l.stopped, a.ID)
	if !a.TerminalStatus() {
		l.countQuota(a, 1)
	}
	if ns := l.byID[a.NodeID]; ns != nil && ns.loaded {
		l.addTo(ns, a)
	}
}

// markStopped records a stopped by this plan, journaled.
func (l *ledger) markStopped(a *api.Allocation) {
	if !l.stopped[a.ID] {
		l.stopped[a.ID] = true
		l.journal(undoEntry{kind: undoStopped, alloc: a})
		if !a.TerminalStatus() {
			l.countQuota(a, -1) // its queue usage comes free
		}
	}
}

// countQuota adds sign times what a holds to the queue limits' usage
// (queueLimits.apply), journaled: a placement +1, a stop or an eviction
// of a live alloc -1.
func (l *ledger) countQuota(a *api.Allocation, sign int) {
	if !l.quota.limited() || a == nil {
		return
	}
	l.quota.apply(a, sign)
	l.journal(undoEntry{kind: undoQuota, alloc: a, pos: sign})
}

func (l *ledger) skipNode(tc *tgCtx, i int) {
	tc.skip[i] = true
	l.journal(undoEntry{kind: undoSkip, tc: tc, pos: i})
}

// unskipNode clears a skip mark (the node has room again), moving the
// cursor back to it, journaled.
func (l *ledger) unskipNode(tc *tgCtx, i int) {
	if !tc.skip[i] {
		return
	}
	tc.skip[i] = false
	l.journal(undoEntry{kind: undoUnskip, tc: tc, pos: i})
	if i < tc.start {
		l.saveCursor(tc)
		tc.start = i
	}
}

func (l *ledger) saveCursor(tc *tgCtx) {
	if l.undoDepth > 0 {
		l.undo = append(l.undo, undoEntry{kind: undoCursor, tc: tc, pos: tc.start})
	}
}

func (l *ledger) failGroup(tc *tgCtx) {
	if !tc.failed {
		tc.failed = true
		l.journal(undoEntry{kind: undoFailed, tc: tc})
	}
}

// countPlaced counts an alloc of group g placed on n in tc's
// distinct_property and spread counters, journaled.
func (l *ledger) countPlaced(tc *tgCtx, n *api.Node, g string) {
	tc.count(n, g, 1)
	l.journal(undoEntry{kind: undoCount, tc: tc, node: n, group: g})
}
