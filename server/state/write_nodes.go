package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/drover/drover/api"
)

// MaxNodeEvents is how many events a node keeps.
const MaxNodeEvents = 10

// UpsertNode registers or re-registers a node.
func (s *StateStore) UpsertNode(index uint64, node *api.Node) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertNode(node) })
}

// DeleteNode removes nodes.
func (s *StateStore) DeleteNode(index uint64, ids []string) error {
	return s.Write(index, func(t *Txn) error { return t.DeleteNode(ids) })
}

// UpdateNodeStatus sets a node's status.
func (s *StateStore) UpdateNodeStatus(index uint64, id, status string, updatedAt int64, event *api.NodeEvent) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateNodeStatus(id, status, updatedAt, event) })
}

// UpdateNodeDrain starts, updates or ends a node's drain.
func (s *StateStore) UpdateNodeDrain(index uint64, id string, drain *api.DrainStrategy, markEligible bool, event *api.NodeEvent) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateNodeDrain(id, drain, markEligible, event) })
}

// UpdateNodeEligibility sets a node's scheduling eligibility.
func (s *StateStore) UpdateNodeEligibility(index uint64, id, eligibility string, event *api.NodeEvent) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateNodeEligibility(id, eligibility, event) })
}

func nodeEvent(n *api.Node, typ string) api.Event {
	c := *n
	c.SecretID = "" // never stream secrets
	return api.Event{Topic: api.TopicNode, Type: typ, Key: n.ID, Payload: map[string]any{"Node": &c}}
}

// UpsertNode stores node (taking ownership). A re-registration keeps
// CreateIndex, the drain state, the eligibility, the events and the MIG
// change (whose outcome the client may report: write_node_mig.go); a new
// node without eligibility is eligible.
func (t *Txn) UpsertNode(node *api.Node) error {
	if node == nil || node.ID == "" {
		return fmt.Errorf("upsert node: missing node ID: %w", api.ErrBadRequest)
	}
	existing, err := txnFirst[api.Node](t, TableNodes, "id", node.ID)
	if err != nil {
		return err
	}
	if existing != nil {
		node.CreateIndex = existing.CreateIndex
		node.Drain = existing.Drain
		node.DrainStrategy = existing.DrainStrategy
		node.LastDrain = existing.LastDrain
		node.SchedulingEligibility = existing.SchedulingEligibility
		if len(node.Events) == 0 {
			node.Events = existing.Events
		}
	} else {
		node.CreateIndex = t.index
		if inserted, err := ensureNodeAllocRow(t.txn, node.ID); err != nil {
			return err
		} else if inserted {
			t.touch(TableNodeAllocIndex)
		}
	}
	// The servers own the MIG change; while one is pending, the devices
	// it takes away stay unavailable whatever the client reports.
	var migEvent *api.NodeEvent
	node.MIGChange, migEvent = mergeMIGChange(existing, node.MIGChange)
	markMIGPending(node)
	t.addNodeEvent(node, migEvent)
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = api.NodeSchedulingEligible
	}
	if node.NodePool == "" {
		node.NodePool = api.DefaultNodePool
	}
	if err := t.ensureNodePool(node.NodePool); err != nil {
		return err
	}
	node.Events = slices.DeleteFunc(node.Events, func(e *api.NodeEvent) bool { return e == nil })
	for _, e := range node.Events {
		if e.CreateIndex == 0 {
			e.CreateIndex = t.index
		}
	}
	node.ModifyIndex = t.index
	if err := t.insert(TableNodes, node); err != nil {
		return err
	}
	t.s.nodes.add(node)
	t.emit(nodeEvent(node, "NodeRegistration"))
	return nil
}

// DeleteNode removes nodes; a missing one is api.ErrNodeNotFound and
// nothing is removed.
func (t *Txn) DeleteNode(ids []string) error {
	for _, id := range ids {
		n, err := txnFirst[api.Node](t, TableNodes, "id", id)
		if err != nil {
			return err
		}
		if n == nil {
			return fmt.Errorf("delete node %q: %w", id, api.ErrNodeNotFound)
		}
		if err := t.delete(TableNodes, n); err != nil {
			return err
		}
		if _, err := t.txn.DeleteAll(TableNodeAllocIndex, "id", id); err != nil {
			return fmt.Errorf("delete %s of node %q: %w", TableNodeAllocIndex, id, err)
		}
		delete(t.s.nodes, id)
		t.emit(nodeEvent(n, "NodeDeregistration"))
	}
	return nil
}

// nodeCopy returns a shallow copy of the stored node for modification.
func (t *Txn) nodeCopy(id string) (*api.Node, error) {
	n, err := txnFirst[api.Node](t, TableNodes, "id", id)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, fmt.Errorf("node %q: %w", id, api.ErrNodeNotFound)
	}
	c := *n
	c.ModifyIndex = t.index
	return &c, nil
}

func (t *Txn) addNodeEvent(n *api.Node, e *api.NodeEvent) {
	if e == nil {
		return
	}
	e.CreateIndex = t.index
	evs := slices.Clone(n.Events)
	evs = append(evs, e)
	if len(evs) > MaxNodeEvents {
		evs = evs[len(evs)-MaxNodeEvents:]
	}
	n.Events = evs
}

// UpdateNodeStatus sets Status and StatusUpdatedAt and appends event.
func (t *Txn) UpdateNodeStatus(id, status string, updatedAt int64, event *api.NodeEvent) error {
	switch status {
	case api.NodeStatusInit, api.NodeStatusReady, api.NodeStatusDown, api.NodeStatusDisconnected:
	default:
		return fmt.Errorf("node %q: invalid status %q: %w", id, status, api.ErrBadRequest)
	}
	n, err := t.nodeCopy(id)
	if err != nil {
		return err
	}
	n.Status = status
	n.StatusUpdatedAt = updatedAt
	t.addNodeEvent(n, event)
	if err := t.insert(TableNodes, n); err != nil {
		return err
	}
	t.emit(nodeEvent(n, "NodeStatusUpdate"))
	return nil
}

// UpdateNodeDrain starts or updates a drain (drain != nil: the node becomes
// ineligible) or ends it (drain == nil: eligible again if markEligible).
// LastDrain records the drain's start and end ("draining", "complete").
func (t *Txn) UpdateNodeDrain(id string, drain *api.DrainStrategy, markEligible bool, event *api.NodeEvent) error {
	n, err := t.nodeCopy(id)
	if err != nil {
		return err
	}
	var at = drainTime(drain, event)
	if drain != nil {
		started := drain.StartedAt
		if n.LastDrain != nil && n.Drain {
			started = n.LastDrain.StartedAt
		}
		n.Drain, n.DrainStrategy = true, drain
		n.SchedulingEligibility = api.NodeSchedulingIneligible
		n.LastDrain = &api.DrainMetadata{StartedAt: started, UpdatedAt: at, Status: "draining", Reason: drain.Reason}
	} else {
		if n.Drain && n.LastDrain != nil {
			ld := *n.LastDrain
			ld.UpdatedAt, ld.Status = at, "complete"
			n.LastDrain = &ld
		}
		n.Drain, n.DrainStrategy = false, nil
		if markEligible {
			n.SchedulingEligibility = api.NodeSchedulingEligible
		}
	}
	t.addNodeEvent(n, event)
	if err := t.insert(TableNodes, n); err != nil {
		return err
	}
	t.emit(nodeEvent(n, "NodeDrain"))
	return nil
}

func drainTime(d *api.DrainStrategy, e *api.NodeEvent) (at time.Time) {
	if e != nil {
		return e.Timestamp
	}
	if d != nil {
		return d.StartedAt
	}
	return at
}

// UpdateNodeEligibility sets eligibility; a draining node cannot be made
// eligible (api.ErrConflict).
func (t *Txn) UpdateNodeEligibility(id, eligibility string, event *api.NodeEvent) error {
	switch eligibility {
	case api.NodeSchedulingEligible, api.NodeSchedulingIneligible:
	default:
		return fmt.Errorf("node %q: invalid eligibility %q: %w", id, eligibility, api.ErrBadRequest)
	}
	n, err := t.nodeCopy(id)
	if err != nil {
		return err
	}
	if n.Drain && eligibility == api.NodeSchedulingEligible {
		return fmt.Errorf("node %q is draining and cannot be marked eligible: %w", id, api.ErrConflict)
	}
	n.SchedulingEligibility = eligibility
	t.addNodeEvent(n, event)
	if err := t.insert(TableNodes, n); err != nil {
		return err
	}
	t.emit(nodeEvent(n, "NodeEligibility"))
	return nil
}
