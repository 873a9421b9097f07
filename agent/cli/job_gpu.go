package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// maxStatsAllocs bounds the allocs whose live CPU and memory use job
// status asks their clients for.
const maxStatsAllocs = 20

// resourceUse is what a job's live allocs requested and use.
type resourceUse struct {
	gpus, gpusUsed    float64 // GPUs held; GPUs' worth of utilization
	gpusMeasured      int     // GPUs with a reading
	cpuMHz, cpuUsed   float64
	memMB, memUsedMB  float64
	statsAllocs, live int
}

// jobResourceUse adds up the live allocs' requests, their GPU usage and,
// where stats holds them, their CPU and memory use.
func jobResourceUse(allocs []*api.AllocListStub, stats map[string]*api.AllocResourceUsage) resourceUse {
	var u resourceUse
	for _, a := range allocs {
		if a.DesiredStatus != api.AllocDesiredStatusRun || a.ClientStatus != api.AllocClientStatusRunning || a.AllocatedResources == nil {
			continue
		}
		u.live++
		gpus := 0
		for _, t := range a.AllocatedResources.Tasks {
			u.cpuMHz += float64(t.Cpu.CpuShares)
			u.memMB += float64(t.Memory.MemoryMB)
			for _, d := range t.Devices {
				if d.Type == api.DeviceTypeGPU || d.Type == api.DeviceTypeMIG {
					gpus += len(d.DeviceIDs)
				}
			}
		}
		u.gpus += float64(gpus)
		if g := a.GPUUsage; g != nil && gpus > 0 {
			u.gpusMeasured += gpus
			u.gpusUsed += float64(gpus) * g.UtilPercent / 100
		}
		if s := stats[a.ID]; s != nil && s.ResourceUsage != nil {
			u.statsAllocs++
			if c := s.ResourceUsage.CpuStats; c != nil {
				u.cpuUsed += c.TotalTicks
			}
			if m := s.ResourceUsage.MemoryStats; m != nil {
				used := m.RSS
				if m.Usage > used {
					used = m.Usage
				}
				u.memUsedMB += float64(used) / (1 << 20)
			}
		}
	}
	return u
}

// printResourceUse is job status's "Requested vs Used" section: GPUs
// (used: their mean utilization, in GPUs), CPU and memory (used: the
// clients' live stats of up to maxStatsAllocs allocs), and a line per
// alloc holding GPUs idle past its idle_timeout.
func printResourceUse(w io.Writer, job *api.Job, q *api.Queue, allocs []*api.AllocListStub, stats map[string]*api.AllocResourceUsage, now time.Time) {
	u := jobResourceUse(allocs, stats)
	if u.live > 0 {
		fmt.Fprintln(w, "\nRequested vs Used")
		var rows []string
		if u.gpus > 0 {
			used := "not measured"
			if u.gpusMeasured > 0 {
				used = fmt.Sprintf("%s used (avg util %.0f%%)", fmtAmount(u.gpusUsed), 100*u.gpusUsed/float64(u.gpusMeasured))
			}
			rows = append(rows, fmt.Sprintf("GPU\t%s requested, %s", fmtAmount(u.gpus), used))
		}
		cpu, mem := "not measured", "not measured"
		if u.statsAllocs > 0 {
			cpu = fmt.Sprintf("%.0f MHz used", u.cpuUsed)
			mem = fmt.Sprintf("%.0f MB used", u.memUsedMB)
			if u.statsAllocs < u.live {
				cpu += fmt.Sprintf(" (%d of %d allocs)", u.statsAllocs, u.live)
				mem += fmt.Sprintf(" (%d of %d allocs)", u.statsAllocs, u.live)
			}
		}
		rows = append(rows, fmt.Sprintf("CPU\t%.0f MHz requested, %s", u.cpuMHz, cpu), fmt.Sprintf("Memory\t%.0f MB requested, %s", u.memMB, mem))
		table(w, "Resource\tRequested vs Used", rows)
	}
	var idle []string
	for _, a := range allocs {
		if a.GPUUsage == nil || a.DesiredStatus != api.AllocDesiredStatusRun {
			continue
		}
		timeout := api.IdleTimeout(job, job.LookupTaskGroup(a.TaskGroup), q)
		full := &api.Allocation{DesiredStatus: a.DesiredStatus, ClientStatus: a.ClientStatus, GPUUsage: a.GPUUsage}
		if d, ok := full.GPUIdle(timeout, now); ok {
			idle = append(idle, fmt.Sprintf("Alloc %s (%s) on node %s: GPU idle %s (idle_timeout %s)",
				short(a.ID), a.Name, short(a.NodeID), fmtIdle(d), fmtIdle(timeout)))
		}
	}
	if len(idle) > 0 {
		sort.Strings(idle)
		fmt.Fprintln(w, "\nIdle GPUs")
		for _, l := range idle {
			fmt.Fprintln(w, l)
		}
	}
}

// fmtIdle renders a duration in minutes: "2h13m", "2h", "45m".
func fmtIdle(d time.Duration) string {
	s := d.Truncate(time.Minute).String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func fmtAmount(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

// allocStats asks the clients for the live allocs' stats (up to
// maxStatsAllocs); allocs whose client does not answer are left out.
func allocStats(ctx context.Context, c *api.Client, allocs []*api.AllocListStub) map[string]*api.AllocResourceUsage {
	out := map[string]*api.AllocResourceUsage{}
	for _, a := range allocs {
		if len(out) >= maxStatsAllocs {
			break
		}
		if a.DesiredStatus != api.AllocDesiredStatusRun || a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := c.AllocStats(ctx, a.ID)
		cancel()
		if err == nil && s != nil {
			out[a.ID] = s
		}
	}
	return out
}

// jobQueue reads the job's queue (nil when it cannot).
func jobQueue(ctx context.Context, c *api.Client, job *api.Job) *api.Queue {
	var st api.QueueStatus
	if _, err := c.Query(ctx, queuePath(api.JobQueue(job)), &st, nil); err != nil {
		return nil
	}
	return st.Queue
}
