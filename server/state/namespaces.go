package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// TableNamespaces holds the applied namespaces (*api.Namespace by name).
// The default namespace is stored only once an operator changes it;
// until then Namespaces and NamespaceByName return a built-in one.
const TableNamespaces = "namespaces"

func namespacesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNamespaces, Indexes: map[string]*memdb.IndexSchema{
		"id": {Name: "id", Unique: true, Indexer: str("Name")},
	}}
}

// Namespaces returns the namespaces whose name starts with prefix, sorted
// by name, the default one included.
func (r *reads) Namespaces(ws memdb.WatchSet, prefix string) ([]*api.Namespace, error) {
	stored, err := list[api.Namespace](r, ws, nil, TableNamespaces, "id_prefix", prefix)
	if err != nil {
		return nil, fmt.Errorf("read namespaces: %w", err)
	}
	hasDefault := false
	for _, n := range stored {
		hasDefault = hasDefault || n.Name == api.DefaultNamespace
	}
	if !hasDefault && strings.HasPrefix(api.DefaultNamespace, prefix) {
		stored = append(stored, api.DefaultNamespaceObject())
	}
	sort.Slice(stored, func(i, j int) bool { return stored[i].Name < stored[j].Name })
	return stored, nil
}

// NamespaceByName returns the namespace (the built-in default too) or nil, nil.
func (r *reads) NamespaceByName(ws memdb.WatchSet, name string) (*api.Namespace, error) {
	n, err := first[api.Namespace](r, ws, TableNamespaces, "id", name)
	if err != nil || n != nil {
		return n, err
	}
	if name == api.DefaultNamespace {
		return api.DefaultNamespaceObject(), nil
	}
	return nil, nil
}

// UpsertNamespaces stores namespaces at index (see Txn.UpsertNamespaces).
func (s *StateStore) UpsertNamespaces(index uint64, nss []*api.Namespace) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertNamespaces(nss) })
}

// DeleteNamespaces removes namespaces at index (see Txn.DeleteNamespaces).
func (s *StateStore) DeleteNamespaces(index uint64, names []string) error {
	return s.Write(index, func(t *Txn) error { return t.DeleteNamespaces(names) })
}

// UpsertNamespaces creates or replaces namespaces (all or none), keeping
// the first CreateIndex; a default queue must exist.
func (t *Txn) UpsertNamespaces(nss []*api.Namespace) error {
	for _, n := range nss {
		if err := n.Validate(); err != nil {
			return err
		}
		if n.Queue != "" && n.Queue != api.DefaultQueue {
			q, err := txnFirst[api.Queue](t, TableQueues, "id", n.Queue)
			if err != nil {
				return err
			}
			if q == nil {
				return api.Errorf(api.ErrBadRequest, fmt.Sprintf("namespace %q: queue %q does not exist", n.Name, n.Queue))
			}
		}
	}
	for _, n := range nss {
		old, err := txnFirst[api.Namespace](t, TableNamespaces, "id", n.Name)
		if err != nil {
			return err
		}
		c := n.Copy()
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex = old.CreateIndex
		}
		if err := t.insert(TableNamespaces, c); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNamespaces removes namespaces; all or none. The default one, an
// unknown one, or one that still has jobs can't be deleted.
func (t *Txn) DeleteNamespaces(names []string) error {
	del := map[string]*api.Namespace{}
	for _, name := range names {
		if name == api.DefaultNamespace {
			return api.Errorf(api.ErrBadRequest, "the default namespace can't be deleted")
		}
		n, err := txnFirst[api.Namespace](t, TableNamespaces, "id", name)
		if err != nil {
			return err
		}
		if n == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("namespace %q not found", name))
		}
		jobs, err := txnList[api.Job](t, TableJobs, "id_prefix", name)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if j.Namespace == name {
				return api.Errorf(api.ErrBadRequest, fmt.Sprintf("namespace %q has the job %q: purge it first", name, j.ID))
			}
		}
		del[name] = n
	}
	for _, n := range del {
		if err := t.delete(TableNamespaces, n); err != nil {
			return err
		}
	}
	return nil
}

// Namespace restores a stored namespace.
func (r *Restore) Namespace(n *api.Namespace) error { return r.put(TableNamespaces, n) }
