package state

import (
	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// Scheduler adapts the snapshot to scheduler.State (no watch sets); its
// Index is the snapshot's latest index. The concrete type is returned so
// this package does not depend on server/scheduler; it satisfies
// scheduler.State structurally.
func (s *Snapshot) Scheduler() *SchedulerView { return &SchedulerView{s: s, index: s.LatestIndex()} }

// SchedulerView is a Snapshot with the scheduler.State method set.
type SchedulerView struct {
	s     *Snapshot
	index uint64
	txn   *memdb.Txn // NodeAllocsVersion's, made on first use (a pass reads from one goroutine)
}

type schedState = *SchedulerView

func (a schedState) Index() uint64 { return a.index }
func (a schedState) JobByID(ns, id string) (*api.Job, error) {
	return a.s.JobByID(nil, ns, id)
}
func (a schedState) Nodes() ([]*api.Node, error)                  { return a.s.Nodes(nil, "") }
func (a schedState) NodeByID(id string) (*api.Node, error)        { return a.s.NodeByID(nil, id) }
func (a schedState) AllocByID(id string) (*api.Allocation, error) { return a.s.AllocByID(nil, id) }
func (a schedState) AllocsByJob(ns, jobID string) ([]*api.Allocation, error) {
	return a.s.AllocsByJob(nil, ns, jobID, true)
}
func (a schedState) AllocsByNode(nodeID string) ([]*api.Allocation, error) {
	return a.s.AllocsByNode(nil, nodeID)
}
func (a schedState) NodeAllocsVersion(nodeID string) (any, error) {
	if a.txn == nil {
		a.txn = a.s.db.Txn(false)
	}
	return nodeAllocsVersion(a.txn, nodeID)
}
func (a schedState) LatestDeploymentByJobID(ns, jobID string) (*api.Deployment, error) {
	return a.s.LatestDeploymentByJobID(nil, ns, jobID)
}
func (a schedState) Reservations() ([]*api.Reservation, error) { return a.s.Reservations(nil) }
func (a schedState) Queues() ([]*api.Queue, error)             { return a.s.Queues(nil, "") }
func (a schedState) QueueUsage() (map[string]*api.QueueResources, error) {
	return a.s.QueueUsage(nil)
}
