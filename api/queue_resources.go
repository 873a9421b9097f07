package api

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// JobQueue is the queue a job's allocs count against: job.Queue, or
// DefaultQueue when it names none (or the job is nil).
func JobQueue(j *Job) string {
	if j == nil || j.Queue == "" {
		return DefaultQueue
	}
	return j.Queue
}

// QueueUsage is what a queue-accounted alloc holds: the CPU (MHz) and
// memory (MB) of its tasks and its GPUs, counted from the device IDs of
// every allocated device of type "gpu" (a share as its fraction), per
// model by the node device group's "vendor/type/name". It does not look at the alloc's status: the
// caller decides whether the alloc counts (it does while non-terminal).
func (a *Allocation) QueueUsage() QueueResources {
	var r QueueResources
	if a == nil || a.AllocatedResources == nil {
		return r
	}
	for _, t := range a.AllocatedResources.Tasks {
		if t == nil {
			continue
		}
		r.CPU += t.Cpu.CpuShares
		r.MemoryMB += t.Memory.MemoryMB
		for _, d := range t.Devices {
			if d == nil || d.Type != "gpu" || len(d.DeviceIDs) == 0 {
				continue
			}
			n := d.GPUs()
			r.GPUs = RoundGPUs(r.GPUs + n)
			if r.GPUsByModel == nil {
				r.GPUsByModel = map[string]float64{}
			}
			m := d.Vendor + "/" + d.Type + "/" + d.Name
			r.GPUsByModel[m] = RoundGPUs(r.GPUsByModel[m] + n)
		}
	}
	return r
}

// Add adds sign times o to r (sign is 1 or -1); per-model counts that
// reach zero are dropped.
func (r *QueueResources) Add(o QueueResources, sign int) {
	r.GPUs = RoundGPUs(r.GPUs + float64(sign)*o.GPUs)
	r.CPU += int64(sign) * o.CPU
	r.MemoryMB += int64(sign) * o.MemoryMB
	for m, n := range o.GPUsByModel {
		if r.GPUsByModel == nil {
			r.GPUsByModel = map[string]float64{}
		}
		r.GPUsByModel[m] = RoundGPUs(r.GPUsByModel[m] + float64(sign)*n)
		if r.GPUsByModel[m] == 0 {
			delete(r.GPUsByModel, m)
		}
	}
	if len(r.GPUsByModel) == 0 {
		r.GPUsByModel = nil
	}
}

// IsZero reports whether r holds nothing.
func (r *QueueResources) IsZero() bool {
	return r == nil || r.GPUs == 0 && r.CPU == 0 && r.MemoryMB == 0 && len(r.GPUsByModel) == 0
}

// Copy returns a deep copy (nil for nil).
func (r *QueueResources) Copy() *QueueResources {
	if r == nil {
		return nil
	}
	c := *r
	if r.GPUsByModel != nil {
		c.GPUsByModel = make(map[string]float64, len(r.GPUsByModel))
		for m, n := range r.GPUsByModel {
			c.GPUsByModel[m] = n
		}
	}
	return &c
}

// Exceeds lists, in a fixed order, the resources where used is above the
// limit: "gpu 17 of 16", "gpu nvidia/gpu/H100 9 of 8", "cpu 40000 of
// 32000 MHz", "memory 70000 of 65536 MB". In a limit a zero GPUs, CPU or
// MemoryMB means no cap, while a model listed in GPUsByModel is capped at
// its value (0 forbids the model). A nil limit caps nothing.
func (used QueueResources) Exceeds(limit *QueueResources) []string {
	if limit == nil {
		return nil
	}
	var out []string
	if limit.GPUs > 0 && used.GPUs > limit.GPUs {
		out = append(out, fmt.Sprintf("gpu %s of %s", FormatGPUs(used.GPUs), FormatGPUs(limit.GPUs)))
	}
	models := make([]string, 0, len(limit.GPUsByModel))
	for m := range limit.GPUsByModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		if n := used.ModelGPUs(m); n > limit.GPUsByModel[m] { // m counts the models it names (GPUModelKeyMatches)
			out = append(out, fmt.Sprintf("gpu %s %s of %s", m, FormatGPUs(n), FormatGPUs(limit.GPUsByModel[m])))
		}
	}
	if limit.CPU > 0 && used.CPU > limit.CPU {
		out = append(out, fmt.Sprintf("cpu %d of %d MHz", used.CPU, limit.CPU))
	}
	if limit.MemoryMB > 0 && used.MemoryMB > limit.MemoryMB {
		out = append(out, fmt.Sprintf("memory %d of %d MB", used.MemoryMB, limit.MemoryMB))
	}
	return out
}

// QueueAncestry is name and its ancestors by name, nearest first:
// "a/b/c" gives ["a/b/c", "a/b", "a"].
func QueueAncestry(name string) []string {
	out := []string{name}
	for p := ParentOf(name); p != ""; p = ParentOf(p) {
		out = append(out, p)
	}
	return out
}

// RoundGPUs keeps a GPU amount to thousandths (the grain of shares), so
// sums of shares added and taken away come back to exact values.
func RoundGPUs(g float64) float64 { return math.Round(g*MilliPerDevice) / MilliPerDevice }

// GPUs is how many GPUs the grant holds: its instances, each counted as
// the alloc's share of it.
func (d *AllocatedDeviceResource) GPUs() float64 {
	return RoundGPUs(float64(len(d.DeviceIDs)*d.Milli()) / MilliPerDevice)
}

// FormatGPUs renders a GPU amount: "4", "0.25".
func FormatGPUs(g float64) string { return strconv.FormatFloat(RoundGPUs(g), 'f', -1, 64) }
