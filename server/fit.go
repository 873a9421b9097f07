package server

import (
	"fmt"

	"github.com/drover/drover/api"
)

// nodeFits reports whether allocs (the node's non-terminal allocations
// after the plan) fit on node: cpu, memory, disk, reserved cores, ports
// and device instances. It returns a reason when they do not.
func nodeFits(node *api.Node, allocs []*api.Allocation) (bool, string) {
	if node.NodeResources == nil {
		return false, "node has no resources"
	}
	nr := node.NodeResources
	cpuCap, memCap, diskCap := nr.Cpu.CpuShares, nr.Memory.MemoryMB, nr.Disk.DiskMB
	reservedPorts := map[int]bool{}
	if rr := node.ReservedResources; rr != nil {
		cpuCap -= rr.Cpu.CpuShares
		memCap -= rr.Memory.MemoryMB
		diskCap -= rr.Disk.DiskMB
		for _, p := range parsePortRanges(rr.ReservedHostPorts) {
			reservedPorts[p] = true
		}
	}
	devices := map[string]bool{}
	for _, d := range nr.Devices {
		for _, inst := range d.Instances {
			devices[inst.ID] = true
		}
	}
	var cpu, mem, disk int64
	usedPorts := map[int]string{}
	usedCores := map[uint16]string{}
	usedDevices := map[string]string{}
	for _, a := range allocs {
		c, m, d := a.AllocatedResources.Comparable()
		cpu, mem, disk = cpu+c, mem+m, disk+d
		if a.AllocatedResources == nil {
			continue
		}
		ports := allocPorts(a.AllocatedResources)
		for _, p := range ports {
			if reservedPorts[p] {
				return false, fmt.Sprintf("port %d is reserved on the node", p)
			}
			if other, ok := usedPorts[p]; ok && other != a.ID {
				return false, fmt.Sprintf("port %d collision", p)
			}
			usedPorts[p] = a.ID
		}
		for _, t := range a.AllocatedResources.Tasks {
			for _, core := range t.Cpu.ReservedCores {
				if other, ok := usedCores[core]; ok && other != a.ID {
					return false, fmt.Sprintf("cpu core %d collision", core)
				}
				usedCores[core] = a.ID
			}
			for _, dev := range t.Devices {
				for _, id := range dev.DeviceIDs {
					if !devices[id] {
						return false, fmt.Sprintf("device %s not on node", id)
					}
					if other, ok := usedDevices[id]; ok && other != a.ID {
						return false, fmt.Sprintf("device %s collision", id)
					}
					usedDevices[id] = a.ID
				}
			}
		}
	}
	switch {
	case cpu > cpuCap:
		return false, "cpu exhausted"
	case mem > memCap:
		return false, "memory exhausted"
	case diskCap > 0 && disk > diskCap:
		return false, "disk exhausted"
	}
	return true, ""
}

// allocPorts lists the host ports an allocation holds (deduplicated per
// alloc: the same port may appear in shared ports and networks).
func allocPorts(r *api.AllocatedResources) []int {
	seen := map[int]bool{}
	var out []int
	add := func(v int) {
		if v > 0 && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, p := range r.Shared.Ports {
		add(p.Value)
	}
	nets := append([]*api.NetworkResource{}, r.Shared.Networks...)
	for _, t := range r.Tasks {
		nets = append(nets, t.Networks...)
	}
	for _, n := range nets {
		for _, p := range n.ReservedPorts {
			add(p.Value)
		}
		for _, p := range n.DynamicPorts {
			add(p.Value)
		}
	}
	return out
}

// parsePortRanges parses "22,80,8000-8005"; malformed parts are ignored
// (the client validated the string when it fingerprinted).
func parsePortRanges(s string) []int {
	var out []int
	start, cur, inRange, have := 0, 0, false, false
	flush := func() {
		if !have {
			return
		}
		if inRange {
			for p := start; p <= cur && p-start < 65536; p++ {
				out = append(out, p)
			}
		} else {
			out = append(out, cur)
		}
		start, cur, inRange, have = 0, 0, false, false
	}
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			cur = cur*10 + int(c-'0')
			have = true
		case c == '-':
			start, cur, inRange = cur, 0, true
		case c == ',':
			flush()
		}
	}
	flush()
	return out
}
