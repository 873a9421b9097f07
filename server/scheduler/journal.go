package scheduler

import "github.com/drover/drover/api"

// Checkpoint and rollback of the pass's node state, so a set of
// placements (a gang) can be tried and undone: while a checkpoint is
// open every change to node usage goes into an undo journal (not a copy
// of the nodes), and rollback replays it backwards.
//
// What is restored: each node's usage ledger, live-alloc list (in its
// order) and job counters; the allocs marked stopped; each group's
// skipped nodes, cursor, failed flag, distinct_property and spread
// counters; the queue usage the limits are checked against. What is not: the plan and the eval's failure metrics; the
// caller keeps the placements of an attempt apart and appends them to
// the plan only when the attempt is kept (drop them otherwise).

type undoKind uint8

const (
	undoAdd     undoKind = iota // an alloc was counted on ns
	undoRemove                  // an alloc was released from ns at pos
	undoStopped                 // alloc ID marked stopped
	undoSkip                    // tc.skip[idx] was set
	undoCursor                  // tc.start was start
	undoFailed                  // tc.failed was false
	undoCount                   // countAlloc(tc, node, group, +1)
	undoUnskip                  // tc.skip[idx] was cleared (an eviction freed the node)
	undoQuota                   // quotaCount(alloc, pos) (queue limits, quota.go)
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

func (s *sched) checkpoint() checkpoint {
	s.undoDepth++
	return checkpoint{at: len(s.undo), depth: s.undoDepth}
}

// rollback undoes every node-state change since cp and closes it.
func (s *sched) rollback(cp checkpoint) {
	s.closeCheckpoint(cp)
	for i := len(s.undo) - 1; i >= cp.at; i-- {
		e := &s.undo[i]
		switch e.kind {
		case undoAdd:
			e.ns.removeAlloc(e.alloc, s.job)
		case undoRemove:
			e.ns.insertAlloc(e.pos, e.alloc, s.job)
		case undoStopped:
			delete(s.stopped, e.alloc.ID)
		case undoSkip:
			e.tc.skip[e.pos] = false
		case undoUnskip:
			e.tc.skip[e.pos] = true
		case undoCursor:
			e.tc.start = e.pos
		case undoFailed:
			e.tc.failed = false
		case undoCount:
			s.countAlloc(e.tc, e.node, e.group, -1)
		case undoQuota:
			s.quotaApply(e.alloc, -e.pos)
		}
		s.undo[i] = undoEntry{}
	}
	s.undo = s.undo[:cp.at]
}

// release closes cp keeping its changes (an enclosing checkpoint can
// still undo them).
func (s *sched) release(cp checkpoint) {
	s.closeCheckpoint(cp)
	if s.undoDepth == 0 {
		clear(s.undo)
		s.undo = s.undo[:0]
	}
}

func (s *sched) closeCheckpoint(cp checkpoint) {
	if cp.depth != s.undoDepth {
		panic("scheduler: checkpoints closed out of order")
	}
	s.undoDepth--
}

func (s *sched) journal(e undoEntry) {
	if s.undoDepth > 0 {
		s.undo = append(s.undo, e)
	}
}

// addTo counts a on ns (a placement), journaled.
func (s *sched) addTo(ns *nodeState, a *api.Allocation) {
	ns.addAlloc(a, s.job)
	s.journal(undoEntry{kind: undoAdd, ns: ns, alloc: a})
}

// removeFrom releases a from ns (a stop or an eviction), journaled.
func (s *sched) removeFrom(ns *nodeState, a *api.Allocation) {
	for _, x := range ns.allocs {
		if x.ID == a.ID {
			a = x // journal what was counted
			break
		}
	}
	if pos := ns.removeAlloc(a, s.job); pos >= 0 {
		s.journal(undoEntry{kind: undoRemove, ns: ns, alloc: a, pos: pos})
	}
}

// markStopped records a stopped by this plan, journaled.
func (s *sched) markStopped(a *api.Allocation) {
	if !s.stopped[a.ID] {
		s.stopped[a.ID] = true
		s.journal(undoEntry{kind: undoStopped, alloc: a})
		if !a.TerminalStatus() {
			s.quotaCount(a, -1) // its queue usage comes free
		}
	}
}

func (s *sched) skipNode(tc *tgCtx, i int) {
	tc.skip[i] = true
	s.journal(undoEntry{kind: undoSkip, tc: tc, pos: i})
}

// unskipNode clears a skip mark (the node has room again), moving the
// cursor back to it, journaled.
func (s *sched) unskipNode(tc *tgCtx, i int) {
	if !tc.skip[i] {
		return
	}
	tc.skip[i] = false
	s.journal(undoEntry{kind: undoUnskip, tc: tc, pos: i})
	if i < tc.start {
		s.saveCursor(tc)
		tc.start = i
	}
}

func (s *sched) saveCursor(tc *tgCtx) {
	if s.undoDepth > 0 {
		s.undo = append(s.undo, undoEntry{kind: undoCursor, tc: tc, pos: tc.start})
	}
}

func (s *sched) failGroup(tc *tgCtx) {
	if !tc.failed {
		tc.failed = true
		s.journal(undoEntry{kind: undoFailed, tc: tc})
	}
}

func (s *sched) countPlaced(tc *tgCtx, n *api.Node, g string) {
	s.countAlloc(tc, n, g, 1)
	s.journal(undoEntry{kind: undoCount, tc: tc, node: n, group: g})
}
