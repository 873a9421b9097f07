package client

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/drover/drover/api"
)

// GPUUsageReader is a DeviceSource that measures its GPUs (the NVIDIA
// fingerprinter): each instance's utilization and memory in use, by
// instance ID (instances it cannot measure are left out). simulated says
// the GPUs are the simulator's: their figures mean nothing, and an
// alloc's utilization is its tasks' DROVER_SIM_GPU_UTIL instead.
type GPUUsageReader interface {
	GPUUsage(ids []string) (samples map[string]GPUSample, simulated bool, err error)
}

// GPUSample is one GPU instance's reading.
type GPUSample struct {
	UtilPercent   float64
	MemoryUsedMiB int64
}

// DefaultGPUSampleInterval is how often allocs' GPUs are read.
const DefaultGPUSampleInterval = 30 * time.Second

// gpuReportDelta is how far utilization (points) or memory (MiB) must
// move from what was last sent to send again; turning idle or busy always
// sends.
const (
	gpuReportUtilDelta = 10
	gpuReportMemDelta  = 1024
)

// gpuLoop reads the GPUs of each running alloc every sampling interval
// and queues an alloc update when its usage changed enough (gpuChanged).
func (c *Client) gpuLoop(ctx context.Context) {
	r, ok := c.devices.(GPUUsageReader)
	if !ok {
		return
	}
	every := c.cfg.GPUSampleInterval
	if every <= 0 {
		every = DefaultGPUSampleInterval
	}
	for c.sleep(ctx, every) {
		c.sampleGPUs(r)
	}
}

// sampleGPUs reads every running alloc's GPUs once.
func (c *Client) sampleGPUs(r GPUUsageReader) {
	c.mu.Lock()
	var allocs []*api.Allocation
	for _, ar := range c.runners {
		allocs = append(allocs, ar.Alloc())
	}
	c.mu.Unlock()
	now := c.cfg.Clock.Now().UnixNano()
	live := map[string]bool{}
	for _, a := range allocs {
		ids := gpuIDs(a)
		if len(ids) == 0 || a.TerminalStatus() || a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		live[a.ID] = true
		samples, simulated, err := r.GPUUsage(ids)
		if err != nil {
			c.log.Debug("read gpu usage", "alloc_id", a.ID, "error", err)
			continue
		}
		u := &api.GPUUsage{GPUs: len(ids), SampledAt: now, Simulated: simulated}
		if simulated {
			u.UtilPercent = simGPUUtil(a)
		} else {
			n := 0
			for _, id := range ids {
				s, ok := samples[id]
				if !ok {
					continue
				}
				n++
				u.UtilPercent += s.UtilPercent
				u.MemoryUsedMiB += s.MemoryUsedMiB
			}
			if n == 0 {
				continue
			}
			u.UtilPercent /= float64(n)
		}
		c.gpuMu.Lock()
		send := nextGPUUsage(c.gpuUsage[a.ID], u)
		if send {
			c.gpuUsage[a.ID] = u
		}
		c.gpuMu.Unlock()
		if send {
			c.markDirty(a.ID)
		}
	}
	c.gpuMu.Lock()
	for id := range c.gpuUsage {
		if !live[id] {
			delete(c.gpuUsage, id)
		}
	}
	c.gpuMu.Unlock()
}

// nextGPUUsage sets u's IdleSince from the reading and what was sent
// before (prev, nil if nothing): idle since prev's IdleSince while it
// stays idle, since u's sample when it turns idle. It reports whether to
// send u: nothing was sent, the GPUs turned idle or busy, or the figures
// moved by a delta.
func nextGPUUsage(prev, u *api.GPUUsage) bool {
	u.IdleSince = 0
	if u.UtilPercent < api.GPUIdleUtilPercent {
		u.IdleSince = u.SampledAt
		if prev != nil && prev.IdleSince != 0 {
			u.IdleSince = prev.IdleSince
		}
	}
	if prev == nil || (prev.IdleSince == 0) != (u.IdleSince == 0) {
		return true
	}
	return math.Abs(prev.UtilPercent-u.UtilPercent) >= gpuReportUtilDelta ||
		absInt(prev.MemoryUsedMiB-u.MemoryUsedMiB) >= gpuReportMemDelta
}

func absInt(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// gpuUsageOf is what updateLoop sends for the alloc (nil: nothing new).
func (c *Client) gpuUsageOf(id string) *api.GPUUsage {
	c.gpuMu.Lock()
	defer c.gpuMu.Unlock()
	return c.gpuUsage[id]
}

// gpuIDs are the GPU and MIG instances the alloc holds.
func gpuIDs(a *api.Allocation) []string {
	if a.AllocatedResources == nil {
		return nil
	}
	var ids []string
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			if d.Type == api.DeviceTypeGPU || d.Type == api.DeviceTypeMIG {
				ids = append(ids, d.DeviceIDs...)
			}
		}
	}
	return ids
}

// simGPUUtil is a simulated alloc's utilization: the largest
// DROVER_SIM_GPU_UTIL of its tasks, else 100 (busy).
func simGPUUtil(a *api.Allocation) float64 {
	util := -1.0
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
			for _, t := range tg.Tasks {
				if v, err := strconv.ParseFloat(t.Env[api.SimGPUUtilEnv], 64); err == nil && v >= 0 {
					util = max(util, min(v, 100))
				}
			}
		}
	}
	if util < 0 {
		return 100
	}
	return util
}
