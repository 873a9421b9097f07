package fairshare

import (
	"strings"

	"github.com/drover/drover/api"
)

// GroupAsk is what one alloc of tg asks as queues count it (as
// api.Allocation.QueueUsage counts what it holds): CPU, memory and GPUs
// (device asks naming type gpu; per model when the ask names one,
// "nvidia/gpu/H100").
func GroupAsk(tg *api.TaskGroup) api.QueueResources {
	var r api.QueueResources
	if tg == nil {
		return r
	}
	for _, t := range tg.Tasks {
		res := t.Resources
		if res == nil {
			res = api.DefaultResources()
		}
		r.CPU += int64(res.CPU)
		r.MemoryMB += int64(res.MemoryMB)
		for _, d := range res.Devices {
			parts := strings.Split(d.Name, "/")
			switch {
			case len(parts) == 1 && parts[0] == "gpu", len(parts) == 2 && parts[1] == "gpu":
				r.GPUs += int(d.Count)
			case len(parts) == 3 && parts[1] == "gpu":
				r.GPUs += int(d.Count)
				if r.GPUsByModel == nil {
					r.GPUsByModel = map[string]int{}
				}
				r.GPUsByModel[d.Name] += int(d.Count)
			}
		}
	}
	return r
}

// NodeOffers is what a node adds to the cluster's capacity as queues
// count it: its CPU and memory, and its healthy GPUs (per model too).
// Nodes that are not ready offer nothing.
func NodeOffers(n *api.Node) api.QueueResources {
	var r api.QueueResources
	if n == nil || n.NodeResources == nil || !n.Ready() {
		return r
	}
	r.CPU = n.NodeResources.Cpu.CpuShares
	r.MemoryMB = n.NodeResources.Memory.MemoryMB
	for _, d := range n.NodeResources.Devices {
		if d.Type != "gpu" {
			continue
		}
		k := 0
		for _, i := range d.Instances {
			if i.Healthy {
				k++
			}
		}
		r.GPUs += k
		if k > 0 && d.Name != "" {
			if r.GPUsByModel == nil {
				r.GPUsByModel = map[string]int{}
			}
			r.GPUsByModel[d.Vendor+"/"+d.Type+"/"+d.Name] += k
		}
	}
	return r
}

// Scale returns r times n (n allocs of one ask).
func Scale(r api.QueueResources, n int) api.QueueResources {
	out := api.QueueResources{GPUs: r.GPUs * n, CPU: r.CPU * int64(n), MemoryMB: r.MemoryMB * int64(n)}
	for m, k := range r.GPUsByModel {
		if out.GPUsByModel == nil {
			out.GPUsByModel = map[string]int{}
		}
		out.GPUsByModel[m] = k * n
	}
	return out
}
