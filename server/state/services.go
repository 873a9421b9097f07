package state

import (
	"fmt"
	"sort"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// TableServices holds native service registrations
// (*api.ServiceRegistration by ID), written by the client of the alloc's
// node and deleted with the alloc when the client finishes it.
const TableServices = "service_registrations"

func servicesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableServices, Indexes: map[string]*memdb.IndexSchema{
		"id":      {Name: "id", Unique: true, Indexer: str("ID")},
		"service": {Name: "service", Indexer: nsKey("ServiceName")},
		"alloc":   {Name: "alloc", Indexer: str("AllocID")},
	}}
}

// Services returns the registrations of a namespace ("" or "*": all),
// sorted by namespace, service name and ID.
func (r *reads) Services(ws memdb.WatchSet, namespace string) ([]*api.ServiceRegistration, error) {
	var out []*api.ServiceRegistration
	var err error
	if allNS(namespace) {
		out, err = list[api.ServiceRegistration](r, ws, nil, TableServices, "id")
	} else {
		out, err = list[api.ServiceRegistration](r, ws, nil, TableServices, "service_prefix", namespace, "")
	}
	if err != nil {
		return nil, fmt.Errorf("read services: %w", err)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.ServiceName != b.ServiceName {
			return a.ServiceName < b.ServiceName
		}
		return a.ID < b.ID
	})
	return out, nil
}

// ServicesByName returns the instances of one service, sorted by ID.
func (r *reads) ServicesByName(ws memdb.WatchSet, namespace, name string) ([]*api.ServiceRegistration, error) {
	out, err := list[api.ServiceRegistration](r, ws, nil, TableServices, "service", normNS(namespace), name)
	if err != nil {
		return nil, fmt.Errorf("read service %q: %w", name, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ServicesByAlloc returns the registrations of one alloc.
func (r *reads) ServicesByAlloc(ws memdb.WatchSet, allocID string) ([]*api.ServiceRegistration, error) {
	return list[api.ServiceRegistration](r, ws, nil, TableServices, "alloc", allocID)
}

// UpdateNodeServices writes and deletes registrations of one node's
// allocs at index (see Txn.UpdateNodeServices).
func (s *StateStore) UpdateNodeServices(index uint64, nodeID string, upserts []*api.ServiceRegistration, deletes []string) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateNodeServices(nodeID, upserts, deletes) })
}

// DeleteServices removes registrations by ID at index (unknown ones are
// skipped).
func (s *StateStore) DeleteServices(index uint64, ids []string) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateNodeServices("", nil, ids) })
}

// UpdateNodeServices deletes the registrations in deletes, then writes
// upserts. Each upsert must belong to a live alloc on nodeID; its
// namespace, job, node and datacenter are taken from the stored alloc and
// node, not from the request. An upsert for an alloc that is gone or
// finished is dropped (a late write must not bring a stopped instance
// back). A registration whose content is unchanged keeps its ModifyIndex.
// With nodeID "" only deletes are allowed (an operator's delete).
func (t *Txn) UpdateNodeServices(nodeID string, upserts []*api.ServiceRegistration, deletes []string) error {
	for _, id := range deletes {
		old, err := txnFirst[api.ServiceRegistration](t, TableServices, "id", id)
		if err != nil {
			return err
		}
		if old == nil || (nodeID != "" && old.NodeID != nodeID) {
			continue
		}
		if err := t.deleteService(old); err != nil {
			return err
		}
	}
	var node *api.Node
	if len(upserts) > 0 {
		n, err := txnFirst[api.Node](t, TableNodes, "id", nodeID)
		if err != nil {
			return err
		}
		if n == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("node %q not found", nodeID))
		}
		node = n
	}
	for i, u := range upserts {
		if u == nil || u.ID == "" || u.ServiceName == "" || u.AllocID == "" {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("Upserts[%d]: ID, ServiceName and AllocID are required", i))
		}
		a, err := t.allocByID(u.AllocID)
		if err != nil {
			return err
		}
		if a != nil && a.NodeID != nodeID {
			return api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("Upserts[%d]: alloc %s runs on another node", i, u.AllocID))
		}
		if a == nil || a.ClientTerminalStatus() {
			continue
		}
		c := *u
		c.Tags = append([]string(nil), u.Tags...)
		c.Namespace, c.JobID, c.NodeID, c.Datacenter = a.Namespace, a.JobID, node.ID, node.Datacenter
		old, err := txnFirst[api.ServiceRegistration](t, TableServices, "id", u.ID)
		if err != nil {
			return err
		}
		if old != nil && old.AllocID != c.AllocID {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("Upserts[%d]: ID %q is registered for another alloc", i, u.ID))
		}
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex, c.ModifyIndex = old.CreateIndex, old.ModifyIndex
			if sameService(old, &c) {
				continue
			}
			c.ModifyIndex = t.index
		}
		if err := t.insert(TableServices, &c); err != nil {
			return err
		}
		t.emit(api.Event{Topic: api.TopicService, Type: "ServiceRegistration", Key: c.ServiceName, Namespace: c.Namespace,
			FilterKeys: filterKeys(c.JobID, c.AllocID), Payload: map[string]any{"Service": &c}})
	}
	return nil
}

func sameService(a, b *api.ServiceRegistration) bool {
	if len(a.Tags) != len(b.Tags) {
		return false
	}
	for i := range a.Tags {
		if a.Tags[i] != b.Tags[i] {
			return false
		}
	}
	return a.ServiceName == b.ServiceName && a.Namespace == b.Namespace && a.NodeID == b.NodeID && a.Datacenter == b.Datacenter &&
		a.JobID == b.JobID && a.Address == b.Address && a.Port == b.Port && a.Health == b.Health && a.HealthTime == b.HealthTime
}

func (t *Txn) deleteService(r *api.ServiceRegistration) error {
	if err := t.delete(TableServices, r); err != nil {
		return err
	}
	t.emit(api.Event{Topic: api.TopicService, Type: "ServiceDeregistration", Key: r.ServiceName, Namespace: r.Namespace,
		FilterKeys: filterKeys(r.JobID, r.AllocID), Payload: map[string]any{"Service": r}})
	return nil
}

// deleteAllocServices removes the registrations of an alloc the client
// finished (or that is gone).
func (t *Txn) deleteAllocServices(allocID string) error {
	regs, err := txnList[api.ServiceRegistration](t, TableServices, "alloc", allocID)
	if err != nil {
		return err
	}
	for _, r := range regs {
		if err := t.deleteService(r); err != nil {
			return err
		}
	}
	return nil
}

// Service restores a stored registration.
func (r *Restore) Service(s *api.ServiceRegistration) error { return r.put(TableServices, s) }
