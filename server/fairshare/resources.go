package fairshare

import (
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
			// The scheduler's queue accounting reads asks the same way
			// (api.GPUAskModel: MIG instances do not count).
			model, gpu := api.GPUAskModel(d.Name)
			if !gpu {
				continue
			}
			n := AskGPUs(d)
			r.GPUs = api.RoundGPUs(r.GPUs + n)
			if model != "" {
				if r.GPUsByModel == nil {
					r.GPUsByModel = map[string]float64{}
				}
				r.GPUsByModel[model] = api.RoundGPUs(r.GPUsByModel[model] + n)
			}
		}
	}
	return r
}

// AskGPUs is how many GPUs a device ask counts for: its count, times its
// fraction for a share (a share asked by memory counts whole: its
// fraction is known only on the GPU it gets).
func AskGPUs(d *api.RequestedDevice) float64 {
	n := float64(max(d.Count, 1))
	if sh := d.Share; sh != nil && sh.Fraction > 0 {
		milli, _ := sh.Milli(0)
		n = n * float64(milli) / api.MilliPerDevice
	}
	return api.RoundGPUs(n)
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
		if d.Type != api.DeviceTypeGPU {
			continue
		}
		k := 0
		for _, i := range d.Instances {
			if i.Healthy {
				k++
			}
		}
		r.GPUs += float64(k)
		if k > 0 && d.Name != "" {
			if r.GPUsByModel == nil {
				r.GPUsByModel = map[string]float64{}
			}
			r.GPUsByModel[d.Vendor+"/"+d.Type+"/"+d.Name] += float64(k)
		}
	}
	return r
}

// Scale returns r times n (n allocs of one ask).
func Scale(r api.QueueResources, n int) api.QueueResources {
	out := api.QueueResources{GPUs: api.RoundGPUs(r.GPUs * float64(n)), CPU: r.CPU * int64(n), MemoryMB: r.MemoryMB * int64(n)}
	for m, k := range r.GPUsByModel {
		if out.GPUsByModel == nil {
			out.GPUsByModel = map[string]float64{}
		}
		out.GPUsByModel[m] = api.RoundGPUs(k * float64(n))
	}
	return out
}
