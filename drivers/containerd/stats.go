package containerd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/typeurl/v2"

	"github.com/drover/drover/api"
)

// cgroupRoot is where cgroupfs is mounted on the host.
const cgroupRoot = "/sys/fs/cgroup"

// cpuSample is the previous cpu reading of a task, for percentages.
type cpuSample struct {
	at    time.Time
	total uint64 // ns
	user  uint64
	sys   uint64
}

// TaskStats implements drivers.Statser from the container's cgroup
// metrics (cgroup v1 or v2, as the daemon reports them).
func (d *Driver) TaskStats(ctx context.Context, taskID string) (*api.TaskResourceUsage, error) {
	ts, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	m, err := ts.task.Metrics(d.nsCtx(ctx))
	if err != nil {
		return nil, fmt.Errorf("stats of task %q: %w", taskID, err)
	}
	data, err := typeurl.UnmarshalAny(m.Data)
	if err != nil {
		return nil, fmt.Errorf("stats of task %q: decode metrics: %w", taskID, err)
	}
	now := time.Now()
	mem := &api.MemoryStats{}
	cpu := &api.CpuStats{}
	var sample cpuSample
	switch s := data.(type) {
	case *v1.Metrics:
		if s.Memory != nil {
			mem.RSS, mem.Cache = s.Memory.TotalRSS, s.Memory.TotalCache
			if s.Memory.Usage != nil {
				mem.Usage, mem.MaxUsage = s.Memory.Usage.Usage, s.Memory.Usage.Max
			}
			if s.Memory.Swap != nil {
				mem.Swap = s.Memory.Swap.Usage
			}
			mem.Measured = []string{"RSS", "Cache", "Swap", "Usage", "Max Usage"}
		}
		if s.CPU != nil && s.CPU.Usage != nil {
			sample = cpuSample{at: now, total: s.CPU.Usage.Total, user: s.CPU.Usage.User, sys: s.CPU.Usage.Kernel}
			if s.CPU.Throttling != nil {
				cpu.ThrottledPeriods, cpu.ThrottledTime = s.CPU.Throttling.ThrottledPeriods, s.CPU.Throttling.ThrottledTime
			}
		}
	case *v2.Metrics:
		if s.Memory != nil {
			mem.RSS, mem.Cache, mem.Swap = s.Memory.Anon, s.Memory.File, s.Memory.SwapUsage
			mem.Usage, mem.MaxUsage = s.Memory.Usage, s.Memory.MaxUsage
			mem.Measured = []string{"RSS", "Cache", "Swap", "Usage", "Max Usage"}
		}
		if s.CPU != nil {
			sample = cpuSample{at: now, total: s.CPU.UsageUsec * 1000, user: s.CPU.UserUsec * 1000, sys: s.CPU.SystemUsec * 1000}
			cpu.ThrottledPeriods, cpu.ThrottledTime = s.CPU.NrThrottled, s.CPU.ThrottledUsec*1000
		}
	default:
		return nil, fmt.Errorf("stats of task %q: unknown metrics type %T", taskID, data)
	}
	if !sample.at.IsZero() {
		ts.mu.Lock()
		prev := ts.lastCPU
		ts.lastCPU = sample
		ts.mu.Unlock()
		if !prev.at.IsZero() {
			wall := float64(sample.at.Sub(prev.at).Nanoseconds())
			if wall > 0 {
				cpu.Percent = float64(sample.total-prev.total) / wall * 100
				cpu.UserMode = float64(sample.user-prev.user) / wall * 100
				cpu.SystemMode = float64(sample.sys-prev.sys) / wall * 100
				cpu.TotalTicks = cpu.Percent / 100 * float64(d.mhzPerCore)
			}
		}
		cpu.Measured = []string{"System Mode", "User Mode", "Percent", "Total Ticks", "Throttled Periods", "Throttled Time"}
	}
	return &api.TaskResourceUsage{
		ResourceUsage: &api.ResourceUsage{MemoryStats: mem, CpuStats: cpu},
		Timestamp:     now.UnixNano(),
	}, nil
}

// oomKilled reads the oom_kill counter of the container's memory cgroup
// (cgroup v1 memory.oom_control, or v2 memory.events); the cgroup lives
// until the task is deleted, so this works right after the exit.
func oomKilled(containerID string) bool {
	rel := filepath.Join(CgroupParent, containerID)
	for _, f := range []string{
		filepath.Join(cgroupRoot, "memory", rel, "memory.oom_control"),
		filepath.Join(cgroupRoot, rel, "memory.events"),
		filepath.Join(cgroupRoot, "unified", rel, "memory.events"),
	} {
		if n, ok := readCounter(f, "oom_kill"); ok {
			return n > 0
		}
	}
	return false
}

// readCounter reads "key N" from a cgroup file.
func readCounter(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
