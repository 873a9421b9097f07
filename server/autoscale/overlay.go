package autoscale

import (
	"fmt"
	"maps"
	"sort"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

// overlay is a scheduler.State: the cluster's snapshot plus virtual nodes
// (not yet bought or still booting) and the allocs the counterfactual
// passes placed, with their queue usage, so that each pass sees the ones
// before it. Nodes may also be hidden (leave) and allocs marked to migrate
// (the least_busy what-if). It is used from one goroutine.
type overlay struct {
	scheduler.State
	nodes   []*api.Node
	byID    map[string]*api.Node
	hidden  map[string]bool // nodes made ineligible (draining in the what-if)
	allocs  map[string]*api.Allocation
	byNode  map[string][]*api.Allocation
	byJob   map[[2]string][]*api.Allocation
	migrate map[string]bool // base allocs marked to migrate
	usage   map[string]api.QueueResources
}

var _ scheduler.State = (*overlay)(nil)

func newOverlay(st scheduler.State) *overlay {
	return &overlay{State: st, byID: map[string]*api.Node{}, hidden: map[string]bool{}, allocs: map[string]*api.Allocation{},
		byNode: map[string][]*api.Allocation{}, byJob: map[[2]string][]*api.Allocation{}, migrate: map[string]bool{},
		usage: map[string]api.QueueResources{}}
}

// addNode adds a virtual node.
func (o *overlay) addNode(n *api.Node) {
	o.nodes = append(o.nodes, n)
	o.byID[n.ID] = n
}

func (o *overlay) Nodes() ([]*api.Node, error) {
	base, err := o.State.Nodes()
	if err != nil {
		return nil, err
	}
	out := make([]*api.Node, 0, len(base)+len(o.nodes))
	for _, n := range base {
		if o.hidden[n.ID] {
			n = hideNode(n)
		}
		out = append(out, n)
	}
	return append(out, o.nodes...), nil
}

func (o *overlay) NodeByID(id string) (*api.Node, error) {
	if n, ok := o.byID[id]; ok {
		return n, nil
	}
	n, err := o.State.NodeByID(id)
	if err == nil && n != nil && o.hidden[id] {
		n = hideNode(n)
	}
	return n, err
}

// hideNode is a copy of n draining, as the scheduler sees a node being
// removed.
func hideNode(n *api.Node) *api.Node {
	cp := *n
	cp.Drain = true
	cp.SchedulingEligibility = api.NodeSchedulingIneligible
	cp.DrainStrategy = &api.DrainStrategy{}
	return &cp
}

func (o *overlay) withMigrate(list []*api.Allocation) []*api.Allocation {
	if len(o.migrate) == 0 {
		return list
	}
	out := make([]*api.Allocation, len(list))
	for i, a := range list {
		if o.migrate[a.ID] {
			cp := *a
			t := true
			cp.DesiredTransition.Migrate = &t
			a = &cp
		}
		out[i] = a
	}
	return out
}

func (o *overlay) AllocsByNode(id string) ([]*api.Allocation, error) {
	var base []*api.Allocation
	if _, virtual := o.byID[id]; !virtual {
		var err error
		if base, err = o.State.AllocsByNode(id); err != nil {
			return nil, err
		}
	}
	return append(o.withMigrate(base), o.byNode[id]...), nil
}

func (o *overlay) AllocsByJob(ns, id string) ([]*api.Allocation, error) {
	base, err := o.State.AllocsByJob(ns, id)
	if err != nil {
		return nil, err
	}
	return append(o.withMigrate(base), o.byJob[[2]string{ns, id}]...), nil
}

func (o *overlay) AllocByID(id string) (*api.Allocation, error) {
	if a, ok := o.allocs[id]; ok {
		return a, nil
	}
	a, err := o.State.AllocByID(id)
	if err == nil && a != nil && o.migrate[id] {
		a = o.withMigrate([]*api.Allocation{a})[0]
	}
	return a, err
}

func (o *overlay) QueueUsage() (map[string]*api.QueueResources, error) {
	base, err := o.State.QueueUsage()
	if err != nil {
		return nil, err
	}
	if len(o.usage) == 0 {
		return base, nil
	}
	out := make(map[string]*api.QueueResources, len(base)+len(o.usage))
	for q, r := range base {
		cp := *r
		cp.GPUsByModel = maps.Clone(r.GPUsByModel)
		out[q] = &cp
	}
	for q, r := range o.usage {
		cur := out[q]
		if cur == nil {
			cur = &api.QueueResources{}
			out[q] = cur
		}
		addUsage(cur, r)
	}
	return out, nil
}

func addUsage(dst *api.QueueResources, r api.QueueResources) {
	dst.GPUs += r.GPUs
	dst.CPU += r.CPU
	dst.MemoryMB += r.MemoryMB
	for m, v := range r.GPUsByModel {
		if dst.GPUsByModel == nil {
			dst.GPUsByModel = map[string]float64{}
		}
		dst.GPUsByModel[m] += v
	}
}

// place records a pass's new allocs (those not already in state) and
// returns them.
func (o *overlay) place(plan *api.Plan) ([]*api.Allocation, error) {
	var out []*api.Allocation
	nodes := make([]string, 0, len(plan.NodeAllocation))
	for id := range plan.NodeAllocation {
		nodes = append(nodes, id)
	}
	sort.Strings(nodes)
	for _, id := range nodes {
		for _, a := range plan.NodeAllocation[id] {
			if _, ok := o.allocs[a.ID]; ok {
				continue
			}
			if prev, err := o.State.AllocByID(a.ID); err != nil {
				return nil, fmt.Errorf("read alloc %s: %w", a.ID, err)
			} else if prev != nil {
				continue // an in-place update
			}
			cp := *a
			if cp.Job == nil {
				cp.Job = plan.Job
			}
			cp.NodeID = id
			o.allocs[cp.ID] = &cp
			o.byNode[id] = append(o.byNode[id], &cp)
			k := [2]string{cp.Namespace, cp.JobID}
			o.byJob[k] = append(o.byJob[k], &cp)
			q := api.JobQueue(cp.Job)
			u := o.usage[q]
			addUsage(&u, cp.QueueUsage())
			o.usage[q] = u
			out = append(out, &cp)
		}
	}
	return out, nil
}
