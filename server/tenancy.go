package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// Tenancy is the component of the cluster's partitions: namespaces, node
// pools and queues (their writes through Raft, and the queues' current
// fair shares). The checks a job must pass against them (checkNamespace,
// checkNodePool, checkQueue) read the state the caller holds. It is safe
// for concurrent use.
type Tenancy struct {
	serverCore
	fair *fairShares // the leader's queue fair shares (fair.go)
}

// UpsertNamespaces creates or replaces namespaces through Raft (all or
// none); an invalid one, or one naming a queue that does not exist, is
// api.ErrBadRequest.
func (t *Tenancy) UpsertNamespaces(ctx context.Context, nss []*api.Namespace) (uint64, error) {
	if len(nss) == 0 {
		return 0, api.Errorf(api.ErrBadRequest, "no namespaces given")
	}
	for _, n := range nss {
		if err := n.Validate(); err != nil {
			return 0, err
		}
	}
	if !t.isLeader() {
		return 0, errNotLeader()
	}
	idx, err := t.apply(ctx, fsm.NamespaceUpsertType, &fsm.NamespaceUpsertRequest{Namespaces: nss})
	if err != nil {
		return 0, fmt.Errorf("upsert namespaces: %w", err)
	}
	return idx, nil
}

// DeleteNamespace deletes a namespace through Raft: not the default one
// or one with jobs (api.ErrBadRequest), not an unknown one (api.ErrNotFound).
func (t *Tenancy) DeleteNamespace(ctx context.Context, name string) (uint64, error) {
	if !t.isLeader() {
		return 0, errNotLeader()
	}
	idx, err := t.apply(ctx, fsm.NamespaceDeleteType, &fsm.NamespaceDeleteRequest{Names: []string{name}})
	if err != nil {
		return 0, fmt.Errorf("delete namespace %q: %w", name, err)
	}
	return idx, nil
}

// checkNamespace refuses a job in a namespace that does not exist (as
// Nomad) and gives a job that names no queue its namespace's default one.
func checkNamespace(st *state.StateStore, job *api.Job) error {
	ns, err := st.NamespaceByName(nil, job.Namespace)
	if err != nil {
		return fmt.Errorf("job %q: namespace %q: %w", job.ID, job.Namespace, err)
	}
	if ns == nil {
		return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q is in nonexistent namespace %q", job.ID, job.Namespace))
	}
	if job.Queue == "" && ns.Queue != "" {
		job.Queue = ns.Queue
	}
	return nil
}

// UpsertNodePools creates or replaces node pools through Raft (all or
// none); a built-in or invalid pool is api.ErrBadRequest.
func (t *Tenancy) UpsertNodePools(ctx context.Context, pools []*api.NodePool) (uint64, error) {
	if len(pools) == 0 {
		return 0, fmt.Errorf("upsert node pools: %w", api.Errorf(api.ErrBadRequest, "no node pools given"))
	}
	for _, p := range pools {
		if err := p.Validate(); err != nil {
			return 0, err
		}
	}
	if !t.isLeader() {
		return 0, errNotLeader()
	}
	idx, err := t.apply(ctx, fsm.NodePoolUpsertType, &fsm.NodePoolUpsertRequest{NodePools: pools})
	if err != nil {
		return 0, fmt.Errorf("upsert node pools: %w", err)
	}
	return idx, nil
}

// DeleteNodePool deletes a pool through Raft: not a built-in one, not one
// that still has nodes or live jobs (api.ErrBadRequest), and not an
// unknown one (api.ErrNotFound).
func (t *Tenancy) DeleteNodePool(ctx context.Context, name string) (uint64, error) {
	if !t.isLeader() {
		return 0, errNotLeader()
	}
	idx, err := t.apply(ctx, fsm.NodePoolDeleteType, &fsm.NodePoolDeleteRequest{Names: []string{name}})
	if err != nil {
		return 0, fmt.Errorf("delete node pool %q: %w", name, err)
	}
	return idx, nil
}

// checkNodePool refuses a job whose node pool does not exist (as Nomad):
// the built-in pools always do; others are applied or created by the
// nodes that register into them.
func checkNodePool(st *state.StateStore, job *api.Job) error {
	if job.NodePool == "" {
		return nil
	}
	p, err := st.NodePoolByName(nil, job.NodePool)
	if err != nil {
		return fmt.Errorf("job %q: node pool %q: %w", job.ID, job.NodePool, err)
	}
	if p == nil {
		return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q is in nonexistent node pool %q", job.ID, job.NodePool))
	}
	return nil
}

// UpsertQueues creates or replaces queues through Raft (all or none). An
// unset Parent is the name's prefix. An invalid queue, or one that breaks
// the tree (missing parent, guarantees above the parent's), or a
// gpu_models key that counts nothing (checkQueueModels) is
// api.ErrBadRequest.
func (t *Tenancy) UpsertQueues(ctx context.Context, queues []*api.Queue) (uint64, error) {
	if len(queues) == 0 {
		return 0, fmt.Errorf("upsert queues: %w", api.Errorf(api.ErrBadRequest, "no queues given"))
	}
	for _, q := range queues {
		if q != nil && q.Parent == "" {
			q.Parent = api.ParentOf(q.Name)
		}
		if err := q.Validate(); err != nil {
			return 0, err
		}
		if err := checkQueueModels(q); err != nil {
			return 0, err
		}
	}
	if !t.isLeader() {
		return 0, errNotLeader()
	}
	idx, err := t.apply(ctx, fsm.QueueUpsertType, &fsm.QueueUpsertRequest{Queues: queues})
	if err != nil {
		return 0, fmt.Errorf("upsert queues: %w", err)
	}
	return idx, nil
}

// DeleteQueue deletes a queue through Raft: not "default", not one with
// child queues or live jobs (api.ErrBadRequest), and not an unknown one
// (api.ErrNotFound).
func (t *Tenancy) DeleteQueue(ctx context.Context, name string) (uint64, error) {
	if !t.isLeader() {
		return 0, errNotLeader()
	}
	idx, err := t.apply(ctx, fsm.QueueDeleteType, &fsm.QueueDeleteRequest{Names: []string{name}})
	if err != nil {
		return 0, fmt.Errorf("delete queue %q: %w", name, err)
	}
	return idx, nil
}

// checkQueue refuses a job whose queue does not exist ("default", the
// queue of jobs naming none, always does).
func checkQueue(st *state.StateStore, job *api.Job) error {
	name := api.JobQueue(job)
	q, err := st.QueueByName(nil, name)
	if err != nil {
		return fmt.Errorf("job %q: queue %q: %w", job.ID, name, err)
	}
	if q == nil {
		return api.Errorf(api.ErrInvalidJob, fmt.Sprintf("job %q is in nonexistent queue %q", job.ID, name))
	}
	return nil
}

// QueueFairShare is queue name's current fair share as the leader's
// workers schedule with it (api.QueueStatus.FairShare, gauges); nil on a
// follower, before the first scheduling pass, or with only the default
// queue.
func (t *Tenancy) QueueFairShare(name string) *api.QueueResources { return t.fair.share(name) }
