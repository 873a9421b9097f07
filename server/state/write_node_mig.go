package state

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// maxMIGError bounds the failure a client reports with a MIG change.
const maxMIGError = 1024

// UpdateNodeMIG records an operator's MIG layout change of a node.
func (s *StateStore) UpdateNodeMIG(index uint64, id string, change *api.NodeMIGChange, event *api.NodeEvent) error {
	return s.Write(index, func(t *Txn) error { return t.UpdateNodeMIG(id, change, event) })
}

// UpdateNodeMIG records a pending MIG layout change of node id. It is
// refused (api.ErrConflict) while another change of the node is pending,
// or while a live alloc on the node holds one of the GPUs it changes or
// their MIG instances: checked in the transaction that writes it, so
// every placement committed before it is seen. Until the node's client
// reports the outcome (UpsertNode), the devices the change takes away
// read unhealthy (api.MIGUnavailable): the scheduler places nothing there.
func (t *Txn) UpdateNodeMIG(id string, change *api.NodeMIGChange, event *api.NodeEvent) error {
	if change == nil || change.ID == "" || !change.Pending() || len(change.Layouts) == 0 {
		return fmt.Errorf("node %q: a MIG change needs an ID, layouts and status %q: %w", id, api.MIGChangePending, api.ErrBadRequest)
	}
	n, err := t.nodeCopy(id)
	if err != nil {
		return err
	}
	if cur := n.MIGChange; cur.Pending() {
		return api.Errorf(api.ErrConflict, fmt.Sprintf("node %s: MIG change %s is pending until its client applies it", id, cur.ID))
	}
	n.MIGChange = change
	devs := n.MIGPendingDevices()
	allocs, err := txnList[api.Allocation](t, TableAllocs, "node", id)
	if err != nil {
		return err
	}
	var busy []string
	for _, a := range allocs {
		if !a.TerminalStatus() && api.AllocHolds(a, devs) {
			busy = append(busy, fmt.Sprintf("%s (job %q)", shortID(a.ID), a.JobID))
		}
	}
	if len(busy) > 0 {
		slices.Sort(busy)
		return api.Errorf(api.ErrConflict, fmt.Sprintf("node %s: live allocations hold the GPUs to change: %s; stop them or drain the node first",
			id, strings.Join(busy, ", ")))
	}
	markMIGPending(n)
	t.addNodeEvent(n, event)
	if err := t.insert(TableNodes, n); err != nil {
		return err
	}
	t.emit(nodeEvent(n, "NodeMIG"))
	return nil
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// markMIGPending marks the devices a pending MIG change of n takes away
// unhealthy, copying what it changes (n's resources may be the stored
// node's).
func markMIGPending(n *api.Node) {
	devs := n.MIGPendingDevices()
	if len(devs) == 0 || n.NodeResources == nil {
		return
	}
	r := *n.NodeResources
	r.Devices = slices.Clone(r.Devices)
	for i, g := range r.Devices {
		if g == nil || !slices.ContainsFunc(g.Instances, func(d *api.NodeDevice) bool { return d != nil && devs[d.ID] }) {
			continue
		}
		c := *g
		c.Instances = slices.Clone(g.Instances)
		for j, d := range c.Instances {
			if d != nil && devs[d.ID] {
				x := *d
				x.Healthy, x.HealthDescription = false, api.MIGUnavailable
				c.Instances[j] = &x
			}
		}
		r.Devices[i] = &c
	}
	n.NodeResources = &r
}

// mergeMIGChange is the MIG change a registering node keeps: the stored
// one (a client never starts one); the client's report of its outcome
// (the same ID, applied or failed) ends a pending one, with a node event.
func mergeMIGChange(existing *api.Node, reported *api.NodeMIGChange) (*api.NodeMIGChange, *api.NodeEvent) {
	if existing == nil {
		return nil, nil
	}
	stored := existing.MIGChange
	if !stored.Pending() || reported == nil || reported.ID != stored.ID {
		return stored, nil
	}
	c := *stored
	switch reported.Status {
	case api.MIGChangeApplied:
		c.Status = api.MIGChangeApplied
	case api.MIGChangeFailed:
		c.Status, c.Error = api.MIGChangeFailed, reported.Error
		if len(c.Error) > maxMIGError {
			c.Error = c.Error[:maxMIGError]
		}
	default:
		return stored, nil
	}
	c.UpdateTime = reported.UpdateTime
	ev := &api.NodeEvent{Message: "MIG layout applied", Subsystem: "MIG", Details: map[string]string{"change": c.ID},
		Timestamp: time.Unix(0, c.UpdateTime).UTC()}
	if c.Status == api.MIGChangeFailed {
		ev.Message = "MIG layout change failed: " + c.Error
	}
	return &c, ev
}
