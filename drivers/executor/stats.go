package executor

import (
	"fmt"
	"path/filepath"
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
	cpu := &api.CpuStats{Measured: []string{"Percent", "Total Ticks"}}
	p.mu.Lock()
	if !p.lastWall.IsZero() && now.After(p.lastWall) && cpuNS >= p.lastCPU {
		cpu.Percent = float64(cpuNS-p.lastCPU) / float64(now.Sub(p.lastWall)) * 100
	}
	p.lastCPU, p.lastWall = cpuNS, now
	p.mu.Unlock()
	cpu.TotalTicks = float64(cpuNS) / 1e6 // CPU milliseconds
	return &api.TaskResourceUsage{
		ResourceUsage: &api.ResourceUsage{MemoryStats: mem, CpuStats: cpu},
		Timestamp:     now.UnixNano(),
	}, nil
}
