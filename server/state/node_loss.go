package state

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/drover/drover/api"
)

// Allocs on a down node, decided when the write applies.
//
// The leader reads a lost node's allocs from a snapshot and then writes
// the node down with an eval per job it saw there; the plan applier
// verifies a plan against a snapshot that may predate that write. So a
// plan can place allocs on the node after the leader's read, and can even
// commit after the node went down. Nothing then marked those allocs lost
// or replaced them: in the node-loss storm benchmark, 103 allocs placed
// three Raft entries before their node went down stayed pending for good
// and the run never finished. Both windows close here, in the FSM's fixed
// order of writes: a node going down loses every live alloc on it at that
// point, and an alloc placed on a node that is already down is lost as it
// is stored; either way its job gets an eval in the same write. (A node
// going disconnected keeps such allocs pending: its client may come back
// and run them, and if it does not, the node goes down.)

// AllocLostDescription is the client description of an alloc lost with
// its node.
const AllocLostDescription = "alloc is lost since its node is down"

// nodeLossSpace is the UUID namespace of the evals the state store creates
// for jobs that lose allocs to a down node: their IDs are name-based
// (RFC 9562 version 5) on the Raft index, node and job, so every server,
// and every replay of the log, creates the same eval.
var nodeLossSpace = uuid.MustParse("5b0f6a43-2c1e-4f7e-9d2a-8c4f1e6b7a90")

// LoseNodeAllocs marks every live alloc on the node lost, at unix-nano
// time at, and gives each job that had one an eval (node-update) unless
// covered holds an eval of that job: the leader's evals for the
// node in the same write. Call it with the write that sets the node down.
func (t *Txn) LoseNodeAllocs(nodeID string, at int64, covered []*api.Evaluation) error {
	node, err := txnFirst[api.Node](t, TableNodes, "id", nodeID)
	if err != nil || node == nil {
		return err
	}
	allocs, err := txnList[api.Allocation](t, TableAllocs, "node", nodeID)
	if err != nil {
		return err
	}
	for _, e := range covered {
		if e != nil && e.JobID != "" {
			t.markLossEval(normNS(e.Namespace), e.JobID)
		}
	}
	for _, old := range allocs {
		if old.TerminalStatus() {
			continue
		}
		c := *old
		c.ClientStatus = api.AllocClientStatusLost
		c.ClientDescription = AllocLostDescription
		c.ModifyTime = at // the usage ledger's end of a lost alloc
		c.ModifyIndex = t.index
		if err := t.putAlloc(old, &c, "AllocationUpdated"); err != nil {
			return err
		}
		if err := t.lossEval(node, &c, at); err != nil {
			return err
		}
	}
	return nil
}

// placedOnDownNode marks a, a new alloc about to be stored, lost when its
// node is down (a plan verified before the node went down) and returns
// that node, for lossEval once a is stored; else it returns nil.
func (t *Txn) placedOnDownNode(a *api.Allocation) (*api.Node, error) {
	if a.NodeID == "" {
		return nil, nil
	}
	node, err := txnFirst[api.Node](t, TableNodes, "id", a.NodeID)
	if err != nil || node == nil || node.Status != api.NodeStatusDown {
		return nil, err
	}
	a.ClientStatus = api.AllocClientStatusLost
	a.ClientDescription = AllocLostDescription
	if a.CreateTime != 0 {
		a.ModifyTime = a.CreateTime // it never ran
	}
	return node, nil
}

// markLossEval notes that the job has an eval for this write's lost allocs;
// it reports whether it had none before.
func (t *Txn) markLossEval(ns, jobID string) bool {
	k := api.NamespacedID{Namespace: ns, ID: jobID}
	if _, ok := t.lossEvals[k]; ok {
		return false
	}
	if t.lossEvals == nil {
		t.lossEvals = map[api.NamespacedID]struct{}{}
	}
	t.lossEvals[k] = struct{}{}
	return true
}

// lossEval writes a node-update eval for a's job, once per job and write.
func (t *Txn) lossEval(node *api.Node, a *api.Allocation, at int64) error {
	ns := normNS(a.Namespace)
	if !t.markLossEval(ns, a.JobID) {
		return nil
	}
	job, err := txnFirst[api.Job](t, TableJobs, "id", ns, a.JobID)
	if err != nil {
		return err
	}
	if job == nil {
		job = a.Job
	}
	if job == nil {
		return nil // a job gone with its allocs needs no replacements
	}
	name := fmt.Sprintf("%d\x00%s\x00%s\x00%s", t.index, node.ID, ns, a.JobID)
	e := &api.Evaluation{
		ID: uuid.NewSHA1(nodeLossSpace, []byte(name)).String(), Namespace: ns, Priority: job.Priority, Type: job.Type,
		TriggeredBy: api.EvalTriggerNodeUpdate, JobID: a.JobID, NodeID: node.ID, NodeModifyIndex: node.ModifyIndex,
		Status: api.EvalStatusPending, CreateTime: at, ModifyTime: at,
	}
	if err := t.UpsertEvals([]*api.Evaluation{e}); err != nil {
		return err
	}
	t.createdEvals = append(t.createdEvals, e)
	return nil
}

// CreatedEvals returns the evals the transaction created itself (for lost
// allocs), which the FSM reports to its hooks with the command's own.
func (t *Txn) CreatedEvals() []*api.Evaluation { return t.createdEvals }
