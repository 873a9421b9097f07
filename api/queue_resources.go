package api

import (
	"fmt"
	"sort"
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
// every allocated device of type "gpu", per model by the node device
// group's "vendor/type/name". It does not look at the alloc's status: the
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
			r.GPUs += len(d.DeviceIDs)
			if r.GPUsByModel == nil {
				r.GPUsByModel = map[string]int{}
			}
			r.GPUsByModel[d.Vendor+"/"+d.Type+"/"+d.Name] += len(d.DeviceIDs)
		}
	}
	return r
}

// Add adds sign times o to r (sign is 1 or -1); per-model counts that
// reach zero are dropped.
func (r *QueueResources) Add(o QueueResources, sign int) {
	r.GPUs += sign * o.GPUs
	r.CPU += int64(sign) * o.CPU
	r.MemoryMB += int64(sign) * o.MemoryMB
	for m, n := range o.GPUsByModel {
		if r.GPUsByModel == nil {
			r.GPUsByModel = map[string]int{}
		}
		r.GPUsByModel[m] += sign * n
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
		c.GPUsByModel = make(map[string]int, len(r.GPUsByModel))
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
		out = append(out, fmt.Sprintf("gpu %d of %d", used.GPUs, limit.GPUs))
	}
	models := make([]string, 0, len(limit.GPUsByModel))
	for m := range limit.GPUsByModel {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		if n := used.GPUsByModel[m]; n > limit.GPUsByModel[m] {
			out = append(out, fmt.Sprintf("gpu %s %d of %d", m, n, limit.GPUsByModel[m]))
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
