package state

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// Persist walks every stored object of the snapshot, table by table in a
// fixed order (jobs, versions, summaries, node pools, queues, nodes, evals,
// deployments, allocs, service registrations, root keys, ACL policies,
// roles, tokens, auth methods and binding rules, scheduler configuration,
// usage ledger, indexes), for
// writing a Raft snapshot. fn's error stops the walk.
func (s *Snapshot) Persist(fn func(table string, obj any) error) error {
	txn := s.db.Txn(false)
	for _, table := range []string{TableJobs, TableJobVersions, TableJobSummary, TableNodePools, TableQueues, TableNamespaces, TableNodes, TableEvals,
		TableDeployments, TableAllocs, TableServices, TableRootKeys, TableACLPolicies, TableACLRoles, TableACLTokens, TableACLAuthMethods, TableACLBindingRules, TableSchedulerConfig, TableUsage, TableUsageOpen, TableUsageTotals, TableVariables, TableIndex} {
		it, err := txn.Get(table, "id")
		if err != nil {
			return fmt.Errorf("persist %s: %w", table, err)
		}
		for raw := it.Next(); raw != nil; raw = it.Next() {
			if err := fn(table, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

// Restore loads objects into an empty store in one transaction, as read
// from a Raft snapshot. Objects are stored as given (indexes untouched) and
// no events are published. Call Commit to make it visible or Abort.
type Restore struct {
	txn   *memdb.Txn
	share sharer
}

// Restore starts a restore; the store should be new and empty.
func (s *StateStore) Restore() *Restore {
	return &Restore{txn: s.db.Txn(true), share: sharer{nodes: s.nodes}}
}

func (r *Restore) put(table string, obj any) error {
	if err := r.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("restore %s: %w", table, err)
	}
	return nil
}

// Job restores a current job.
func (r *Restore) Job(j *api.Job) error { return r.put(TableJobs, j) }

// JobVersion restores a kept job version.
func (r *Restore) JobVersion(j *api.Job) error { return r.put(TableJobVersions, j) }

// JobSummary restores a job summary.
func (r *Restore) JobSummary(s *api.JobSummary) error { return r.put(TableJobSummary, s) }

// Node restores a node (and its pool, when the snapshot has no row for
// it, and its TableNodeAllocIndex row, when no alloc made one yet).
func (r *Restore) Node(n *api.Node) error {
	if err := r.ensureNodePool(n); err != nil {
		return err
	}
	if _, err := ensureNodeAllocRow(r.txn, n.ID); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := r.put(TableNodes, n); err != nil {
		return err
	}
	r.share.nodes.add(n)
	return nil
}

// Alloc restores an allocation (counting it in its queue's usage and its
// node's TableNodeAllocIndex row).
func (r *Restore) Alloc(a *api.Allocation) error {
	if err := r.countQueue(a); err != nil {
		return err
	}
	if err := r.nodeAllocIndexOnRestore(a); err != nil {
		return err
	}
	r.share.alloc(a)
	return r.put(TableAllocs, a)
}

// Eval restores an evaluation.
func (r *Restore) Eval(e *api.Evaluation) error { return r.put(TableEvals, e) }

// Deployment restores a deployment.
func (r *Restore) Deployment(d *api.Deployment) error { return r.put(TableDeployments, d) }

// Index restores a table's index.
func (r *Restore) Index(e *IndexEntry) error { return r.put(TableIndex, e) }

// Commit makes the restored data visible.
func (r *Restore) Commit() { r.txn.Commit() }

// Abort discards the restore.
func (r *Restore) Abort() { r.txn.Abort() }
