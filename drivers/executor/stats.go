package executor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers/executor/supervisor"
)

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// Stats measures the task: from its cgroup when it has one, else from
// /proc over its process group.
func (p *Process) Stats() (*api.TaskResourceUsage, error) {
	if p.Exited() {
		return nil, fmt.Errorf("task has exited")
	}
	now := time.Now()
	mem := &api.MemoryStats{}
	var cpuNS uint64
	if name := p.State.Cgroup; name != "" {
		if CgroupsV2() {
			dir := CgroupDir(name, "")
			mem.Usage = supervisor.ReadUint(filepath.Join(dir, "memory.current"))
			mem.MaxUsage = supervisor.ReadUint(filepath.Join(dir, "memory.peak"))
			mem.RSS = supervisor.ReadKV(filepath.Join(dir, "memory.stat"), "anon")
			mem.Cache = supervisor.ReadKV(filepath.Join(dir, "memory.stat"), "file")
			cpuNS = supervisor.ReadKV(filepath.Join(dir, "cpu.stat"), "usage_usec") * 1000
		} else {
			md := CgroupDir(name, "memory")
			mem.Usage = supervisor.ReadUint(filepath.Join(md, "memory.usage_in_bytes"))
			mem.MaxUsage = supervisor.ReadUint(filepath.Join(md, "memory.max_usage_in_bytes"))
			mem.RSS = supervisor.ReadKV(filepath.Join(md, "memory.stat"), "total_rss")
			mem.Cache = supervisor.ReadKV(filepath.Join(md, "memory.stat"), "total_cache")
			mem.Swap = supervisor.ReadKV(filepath.Join(md, "memory.stat"), "total_swap")
			cpuNS = supervisor.ReadUint(filepath.Join(CgroupDir(name, "cpuacct"), "cpuacct.usage"))
		}
		mem.Measured = []string{"RSS", "Cache", "Swap", "Usage", "Max Usage"}
	} else {
		pgrp := p.State.TaskPID
		rss, ticks, err := groupUsage(pgrp)
		if err != nil {
			return nil, fmt.Errorf("task stats: %w", err)
		}
		mem.RSS, mem.Usage = rss, rss
		mem.Measured = []string{"RSS"}
		cpuNS = ticks * uint64(time.Second/clockTicks)
	}
	p.mu.Lock()
	cpu := cpuRate(p.lastCPU, p.lastWall, cpuNS, now, float64(hostMHz()))
	p.lastCPU, p.lastWall = cpuNS, now
	p.mu.Unlock()
	return &api.TaskResourceUsage{
		ResourceUsage: &api.ResourceUsage{MemoryStats: mem, CpuStats: cpu},
		Timestamp:     now.UnixNano(),
	}, nil
}

// cpuRate is the CPU use between two samples of the task's cumulative
// CPU time (ns) at wall times prev and now: Percent of one core, and
// TotalTicks the MHz that is on a core of mhzPerCore (the unit of a
// task's cpu ask, as Nomad reports it). The first sample has no rate.
func cpuRate(prevCPU uint64, prev time.Time, cpuNS uint64, now time.Time, mhzPerCore float64) *api.CpuStats {
	cpu := &api.CpuStats{Measured: []string{"Percent", "Total Ticks"}}
	if prev.IsZero() || !now.After(prev) || cpuNS < prevCPU {
		return cpu
	}
	cpu.Percent = float64(cpuNS-prevCPU) / float64(now.Sub(prev)) * 100
	cpu.TotalTicks = cpu.Percent / 100 * mhzPerCore
	return cpu
}

// hostMHz is the MHz of one core as the client's fingerprint counts it
// (agent/fingerprint: cpuinfo_max_freq, else the first "cpu MHz" of
// /proc/cpuinfo, else 1000), read once.
var hostMHz = sync.OnceValue(func() int {
	return readMHz("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "/proc/cpuinfo")
})

func readMHz(maxFreq, cpuinfo string) int {
	if b, err := os.ReadFile(maxFreq); err == nil {
		if khz, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && khz > 0 {
			return khz / 1000
		}
	}
	if b, err := os.ReadFile(cpuinfo); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.TrimSpace(k) == "cpu MHz" {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f > 0 {
					return int(f)
				}
			}
		}
	}
	return 1000
}
