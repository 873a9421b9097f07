package server

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// evalQueue is where pending evals go (the broker).
type evalQueue interface {
	Enqueue(e *api.Evaluation)
}

// capacityWaiters tracks blocked evals and wakes them when capacity
// appears (the blocked tracker).
type capacityWaiters interface {
	Block(e *api.Evaluation)
	Unblock(class string, index uint64)
	UnblockAll(index uint64)
	Untrack(namespace, jobID string) *api.Evaluation
}

// commitReactor is the one path from a committed change to the leader's
// reactions: the FSM calls it after every applied command, on every
// server. Committed pending evals go to the broker, blocked ones to the
// blocked tracker, and capacity that appears (a node that is ready and
// eligible, an alloc that stopped) wakes blocked evals. On a follower the
// broker and the tracker are disabled and drop what they get; the new
// leader restores both from state (restore). Endpoints and leader
// duties never enqueue or unblock by hand: they write the evals in the
// same Raft entry as the change and this reactor does the rest.
//
// Everything here runs on the FSM's goroutine and only takes short locks.
type commitReactor struct {
	state   func() *state.StateStore
	evals   evalQueue
	blocked capacityWaiters
	// obsolete gets a blocked eval that a job's deregistration made
	// pointless (the leader cancels it through Raft).
	obsolete func(*api.Evaluation)
}

var (
	_ fsm.Hooks     = (*commitReactor)(nil)
	_ fsm.QueueHook = (*commitReactor)(nil)
)

// QueuesUpdated wakes every blocked eval when a queue was created or
// changed: a raised (or removed) limit may admit work blocked on it.
// Queue writes are operator actions, rare next to alloc churn.
func (r *commitReactor) QueuesUpdated(index uint64, _ []*api.Queue) {
	r.blocked.UnblockAll(index)
}

func (r *commitReactor) EvalsUpserted(evals []*api.Evaluation) {
	for _, e := range evals {
		if e.Status == api.EvalStatusPending && e.TriggeredBy == api.EvalTriggerJobDeregister {
			// The job stopped: what it waited for capacity for is gone.
			if b := r.blocked.Untrack(e.Namespace, e.JobID); b != nil && r.obsolete != nil {
				r.obsolete(b)
			}
		}
	}
	r.dispatch(evals)
}

// restore hands every stored eval to dispatch, as if it had just been
// committed (a new leader's broker and tracker start from state).
func (r *commitReactor) restore() error {
	evals, err := r.state().Evals(nil, state.AllNamespaces, "")
	if err != nil {
		return fmt.Errorf("list evals: %w", err)
	}
	r.dispatch(evals)
	return nil
}

// dispatch hands evals to the broker (pending) or the tracker (blocked).
func (r *commitReactor) dispatch(evals []*api.Evaluation) {
	for _, e := range evals {
		switch e.Status {
		case api.EvalStatusPending:
			r.evals.Enqueue(e)
		case api.EvalStatusBlocked:
			r.blocked.Block(e)
		}
	}
}

// NodesUpdated wakes blocked evals of the node's class when the node can
// take work: registered, back from down, re-fingerprinted, made eligible
// or its drain ended.
func (r *commitReactor) NodesUpdated(index uint64, nodes []*api.Node) {
	for _, n := range nodes {
		if n.Status == api.NodeStatusReady && n.SchedulingEligibility == api.NodeSchedulingEligible && n.DrainStrategy == nil {
			r.blocked.Unblock(n.ComputedClass, index)
		}
	}
}

// AllocsUpdated wakes blocked evals of a node's class when an alloc there
// stopped using its resources (a plan stopped or preempted it, the client
// finished it), if the node can take work. An alloc of a queue under a
// limit (its own or an ancestor's) also frees room in the queue wherever
// it ran: a lost one, or one on a node that can't take work, wakes that
// node's class too, which reaches the evals blocked on the limit (they
// escape the class filter, see scheduler/quota.go).
func (r *commitReactor) AllocsUpdated(index uint64, changes []fsm.AllocChange) {
	var done map[string]bool
	st := r.state()
	for _, c := range changes {
		if c.Freed() && !done[c.After.NodeID] && (c.After.ClientStatus == api.AllocClientStatusLost || !nodeReady(st, c.After.NodeID)) &&
			queueLimited(st, api.JobQueue(c.After.Job)) {
			if done == nil {
				done = map[string]bool{}
			}
			done[c.After.NodeID] = true
			if n, err := st.NodeByID(nil, c.After.NodeID); err == nil && n != nil {
				r.blocked.Unblock(n.ComputedClass, index)
			}
			continue
		}
		// A lost alloc frees nothing usable: its node is going down
		// (heartbeat missed) and the node's own evals replace it.
		if !c.Freed() || c.After.ClientStatus == api.AllocClientStatusLost || done[c.After.NodeID] {
			continue
		}
		if done == nil {
			done = map[string]bool{}
		}
		done[c.After.NodeID] = true
		n, err := st.NodeByID(nil, c.After.NodeID)
		if err != nil || n == nil || n.Status != api.NodeStatusReady {
			continue
		}
		r.blocked.Unblock(n.ComputedClass, index)
	}
}

// nodeReady reports whether the node exists and is ready.
func nodeReady(st *state.StateStore, id string) bool {
	n, err := st.NodeByID(nil, id)
	return err == nil && n != nil && n.Status == api.NodeStatusReady
}

// queueLimited reports whether the queue or one of its ancestors has a limit.
func queueLimited(st *state.StateStore, name string) bool {
	for _, q := range api.QueueAncestry(name) {
		if x, err := st.QueueByName(nil, q); err == nil && x != nil && x.Limit != nil && !x.Limit.IsZero() {
			return true
		}
	}
	return false
}
