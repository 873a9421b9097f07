package fairshare

import (
	"strings"

	"github.com/drover/drover/api"
)

// AllocHolds is what a placed alloc holds as queues count it: its tasks'
// CPU (MHz) and memory, and its GPUs (devices of type "gpu"), also per
// model ("vendor/gpu/name").
func AllocHolds(a *api.Allocation) *api.QueueResources {
	r := &api.QueueResources{}
	if a == nil || a.AllocatedResources == nil {
		return r
	}
	for _, t := range a.AllocatedResources.Tasks {
		r.CPU += t.Cpu.CpuShares
		r.MemoryMB += t.Memory.MemoryMB
		for _, d := range t.Devices {
			if d.Type != "gpu" {
				continue
			}
			n := len(d.DeviceIDs)
			r.GPUs += n
			if d.Name != "" {
				if r.GPUsByModel == nil {
					r.GPUsByModel = map[string]int{}
				}
				r.GPUsByModel[d.Vendor+"/"+d.Type+"/"+d.Name] += n
			}
		}
	}
	return r
}

// GroupAsk is what one alloc of tg asks as queues count it: CPU, memory
// and GPUs (device asks naming type gpu; per model when the ask names
// one, "nvidia/gpu/H100").
func GroupAsk(tg *api.TaskGroup) *api.QueueResources {
	r := &api.QueueResources{}
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

// Add adds b to a (in place) and returns a; a nil a starts from zero.
func Add(a, b *api.QueueResources) *api.QueueResources {
	if a == nil {
		a = &api.QueueResources{}
	}
	if b == nil {
		return a
	}
	a.GPUs += b.GPUs
	a.CPU += b.CPU
	a.MemoryMB += b.MemoryMB
	for m, n := range b.GPUsByModel {
		if a.GPUsByModel == nil {
			a.GPUsByModel = map[string]int{}
		}
		a.GPUsByModel[m] += n
	}
	return a
}

// Scale returns r times n.
func Scale(r *api.QueueResources, n int) *api.QueueResources {
	out := &api.QueueResources{GPUs: r.GPUs * n, CPU: r.CPU * int64(n), MemoryMB: r.MemoryMB * int64(n)}
	for m, k := range r.GPUsByModel {
		if out.GPUsByModel == nil {
			out.GPUsByModel = map[string]int{}
		}
		out.GPUsByModel[m] = k * n
	}
	return out
}

// QueueOf is the queue a job's allocs count against (api.DefaultQueue
// when it names none).
func QueueOf(j *api.Job) string {
	if j == nil || j.Queue == "" {
		return api.DefaultQueue
	}
	return j.Queue
}

// NodeOffers is what a node adds to the cluster's capacity as queues
// count it: its CPU and memory, and its healthy GPUs (per model too).
// Nodes that are not ready offer nothing.
func NodeOffers(n *api.Node) *api.QueueResources {
	r := &api.QueueResources{}
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
