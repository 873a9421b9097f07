package capacity

import (
	"github.com/drover/drover/api"
)

// Vector is the resources of one allocation (IDs chosen) or one placement
// ask (counts of cores and dynamic ports still to choose).
type Vector struct {
	CPU      int64 // MHz, reserved cores' share included
	MemoryMB int64
	DiskMB   int64

	Cores    []uint16 // reserved core IDs (a placed alloc)
	NumCores int      // whole cores wanted, IDs not chosen yet (an ask)

	Ports           []int // static host ports, each once
	NumDynamicPorts int   // dynamic ports wanted, values not chosen yet (an ask)

	Devices []string // device instance IDs held whole

	Shares []Share // parts of device instances (GPU sharing)
}

// Share is part of one device instance: thousandths of its compute, MiB
// of its memory (0: not asked by memory) and the mode it is shared in.
type Share struct {
	ID       string
	Milli    int
	MemoryMB int64
	Mode     string
}

// Add adds o's amounts and IDs to v.
func (v *Vector) Add(o *Vector) {
	v.CPU += o.CPU
	v.MemoryMB += o.MemoryMB
	v.DiskMB += o.DiskMB
	v.Cores = append(v.Cores, o.Cores...)
	v.NumCores += o.NumCores
	v.Ports = append(v.Ports, o.Ports...)
	v.NumDynamicPorts += o.NumDynamicPorts
	v.Devices = append(v.Devices, o.Devices...)
	v.Shares = append(v.Shares, o.Shares...)
}

// AllocVector is what a placed allocation holds: the Comparable amounts,
// its reserved cores, its host ports (shared ports and every network's
// reserved and dynamic ports, each once), its device instances and its
// shares of device instances. A nil
// r holds nothing. Slices are nil when empty (no allocation).
func AllocVector(r *api.AllocatedResources) Vector {
	var v Vector
	if r == nil {
		return v
	}
	v.DiskMB = r.Shared.DiskMB // CPU and memory as r.Comparable(), in the loop below (one pass over the map)
	addPort := func(p int) {
		if p <= 0 {
			return
		}
		for _, q := range v.Ports {
			if q == p {
				return
			}
		}
		v.Ports = append(v.Ports, p)
	}
	addNets := func(nets []*api.NetworkResource) {
		for _, n := range nets {
			for _, p := range n.ReservedPorts {
				addPort(p.Value)
			}
			for _, p := range n.DynamicPorts {
				addPort(p.Value)
			}
		}
	}
	for _, p := range r.Shared.Ports {
		addPort(p.Value)
	}
	addNets(r.Shared.Networks)
	for _, t := range r.Tasks {
		v.CPU += t.Cpu.CpuShares
		v.MemoryMB += t.Memory.MemoryMB
		v.Cores = append(v.Cores, t.Cpu.ReservedCores...)
		addNets(t.Networks)
		for _, d := range t.Devices {
			if sh := d.Share; sh != nil {
				for _, id := range d.DeviceIDs {
					v.Shares = append(v.Shares, Share{ID: id, Milli: sh.Milli, MemoryMB: sh.MemoryMB, Mode: sh.Mode})
				}
				continue
			}
			v.Devices = append(v.Devices, d.DeviceIDs...)
		}
	}
	return v
}
