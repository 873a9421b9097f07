package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// TableNodePools holds the user's node pools (*api.NodePool by name): the
// ones applied and the ones nodes registered into. The built-in "all" and
// "default" are never stored; NodePools adds them.
const TableNodePools = "node_pools"

func nodePoolsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNodePools, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true, Indexer: str("Name")},
	}}
}

// NodePools returns the built-in pools and the stored ones whose name
// starts with prefix, sorted by name (built-ins first).
func (r *reads) NodePools(ws memdb.WatchSet, prefix string) ([]*api.NodePool, error) {
	var out []*api.NodePool
	for _, p := range api.BuiltinNodePools() {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	stored, err := list[api.NodePool](r, ws, nil, TableNodePools, "id_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("read node pools: %w", err)
	}
	sort.Slice(stored, func(i, j int) bool { return stored[i].Name < stored[j].Name })
	return append(out, stored...), nil
}

// NodePoolByName returns the pool (a built-in one too) or nil, nil.
func (r *reads) NodePoolByName(ws memdb.WatchSet, name string) (*api.NodePool, error) {
	for _, p := range api.BuiltinNodePools() {
		if p.Name == name {
			return p, nil
		}
	}
	return first[api.NodePool](r, ws, TableNodePools, "id", name)
}

// UpsertNodePools stores pools at index (see Txn.UpsertNodePools).
func (s *StateStore) UpsertNodePools(index uint64, pools []*api.NodePool) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertNodePools(pools) })
}

// DeleteNodePools removes pools at index (see Txn.DeleteNodePools).
func (s *StateStore) DeleteNodePools(index uint64, names []string) error {
	return s.Write(index, func(t *Txn) error { return t.DeleteNodePools(names) })
}

// UpsertNodePools creates or replaces pools (all or none: each must be
// valid), keeping the first CreateIndex.
func (t *Txn) UpsertNodePools(pools []*api.NodePool) error {
	for _, p := range pools {
		if err := p.Validate(); err != nil {
			return err
		}
	}
	for _, p := range pools {
		old, err := txnFirst[api.NodePool](t, TableNodePools, "id", p.Name)
		if err != nil {
			return err
		}
		n := p.Copy()
		n.CreateIndex, n.ModifyIndex = t.index, t.index
		if old != nil {
			n.CreateIndex = old.CreateIndex
		}
		if err := t.insert(TableNodePools, n); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNodePools removes pools; all or none. A built-in pool, an unknown
// one, or one that still has nodes or live jobs can't be deleted.
func (t *Txn) DeleteNodePools(names []string) error {
	if len(names) == 0 {
		return nil
	}
	del := map[string]*api.NodePool{}
	for _, name := range names {
		if api.IsBuiltinNodePool(name) {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("node pool %q is built in and can't be deleted", name))
		}
		p, err := txnFirst[api.NodePool](t, TableNodePools, "id", name)
		if err != nil {
			return err
		}
		if p == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("node pool %q not found", name))
		}
		del[name] = p
	}
	nodes, err := txnList[api.Node](t, TableNodes, "id")
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if del[n.NodePool] != nil {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("node pool %q has nodes (%s): move or remove them first", n.NodePool, n.ID))
		}
	}
	jobs, err := txnList[api.Job](t, TableJobs, "id")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if del[j.NodePool] != nil && !j.Stop && j.Status != api.JobStatusDead {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("node pool %q has the live job %q: stop it first", j.NodePool, j.ID))
		}
	}
	for _, p := range del {
		if err := t.delete(TableNodePools, p); err != nil {
			return err
		}
	}
	return nil
}

// ensureNodePool creates the named pool (without description) when it
// does not exist: a node registering into a new pool creates it, as Nomad.
func (t *Txn) ensureNodePool(name string) error {
	if name == "" || api.IsBuiltinNodePool(name) {
		return nil
	}
	p, err := txnFirst[api.NodePool](t, TableNodePools, "id", name)
	if err != nil || p != nil {
		return err
	}
	return t.insert(TableNodePools, &api.NodePool{Name: name, CreateIndex: t.index, ModifyIndex: t.index})
}

// NodePool restores a stored pool.
func (r *Restore) NodePool(p *api.NodePool) error { return r.put(TableNodePools, p) }

// ensureNodePool adds the pool of a restored node when the snapshot (one
// written before pools were stored) has no row for it.
func (r *Restore) ensureNodePool(n *api.Node) error {
	if n.NodePool == "" || api.IsBuiltinNodePool(n.NodePool) {
		return nil
	}
	raw, err := r.txn.First(TableNodePools, "id", n.NodePool)
	if err != nil || raw != nil {
		return err
	}
	return r.put(TableNodePools, &api.NodePool{Name: n.NodePool, CreateIndex: n.CreateIndex, ModifyIndex: n.CreateIndex})
}
