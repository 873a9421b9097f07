package server

import (
	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// nodeFits reports whether allocs (the node's non-terminal allocations
// after the plan) fit on node, by the same capacity model the scheduler
// places with (server/capacity): cpu, memory, disk, reserved cores, ports
// and device instances. It returns a reason when they do not.
func nodeFits(node *api.Node, allocs []*api.Allocation) (bool, string) {
	if node.NodeResources == nil {
		return false, "node has no resources"
	}
	c := capacity.NewNode(node)
	for _, a := range allocs {
		v := capacity.AllocVector(a.AllocatedResources)
		if e := c.Fits(&v); e != nil {
			return false, e.Error()
		}
		c.Add(&v)
	}
	return true, ""
}
