package capacity

import (
	"fmt"
	"maps"
	"strconv"

	"github.com/drover/drover/api"
)

// Dimension names: the DimensionExhausted keys users see in placement
// failures. Do not change them.
const (
	DimCPU          = "cpu"
	DimCores        = "cores"
	DimMemory       = "memory"
	DimDisk         = "disk"
	DimPorts        = "network: port collision"
	DimDynamicPorts = "network: dynamic port exhausted"
	DimDevices      = "devices"
	DimDeviceShare  = "device share"
)

// Exhausted says which dimension an ask does not fit in.
type Exhausted struct {
	Dimension string // one of the Dim constants
	Need      int64  // amount asked (MHz, MB, cores, dynamic ports); 0 for ID collisions
	Free      int64  // amount free on the node
	ID        string // the port, core or device instance that collided, if one did
	Why       string // for ID collisions: "collision", "reserved on the node", "not on node"
}

// Error renders the explanation, e.g. "cpu exhausted: need 600, free 400"
// or "port 8080 collision".
func (e *Exhausted) Error() string {
	if e.ID != "" {
		what := e.ID
		switch e.Dimension {
		case DimPorts:
			what = "port " + e.ID
		case DimCores:
			what = "cpu core " + e.ID
		case DimDevices, DimDeviceShare:
			what = "device " + e.ID
		}
		return what + " " + e.Why
	}
	name := e.Dimension
	if e.Dimension == DimDynamicPorts {
		name = "dynamic ports"
	}
	return fmt.Sprintf("%s exhausted: need %d, free %d", name, e.Need, e.Free)
}

// Node is one node's capacity and the usage of the allocations counted on
// it. The zero value is a node with nothing to offer.
type Node struct {
	// Capacity after the node's own reservations. DiskMB <= 0 means the
	// node reports no disk: disk is not checked.
	CPU, MemoryMB, DiskMB int64
	// Dynamic port range (defaults applied).
	MinDynamicPort, MaxDynamicPort int

	cores         []uint16 // reservable cores the node does not reserve itself, in node order
	reservedPorts map[int]struct{}
	devices       map[string]int64 // every device instance on the node: its memory in MiB (0: unknown)

	used        Usage
	busyDynamic int // distinct busy ports (reserved or used) in the dynamic range
}

// Usage is what the allocations counted on a node use. Add and Sub keep
// reference counts, so Sub is the exact inverse of Add (maps go back to
// nil when empty).
type Usage struct {
	CPU, MemoryMB, DiskMB int64
	Cores                 map[uint16]int
	Ports                 map[int]int
	Devices               map[string]int
	// Shared is what shares hold of each shared device instance.
	Shared map[string]*SharedUse
}

// SharedUse is what the shares of one device instance hold: thousandths
// of its compute, MiB of its memory, and its mode, held by Holders shares.
type SharedUse struct {
	Milli    int
	MemoryMB int64
	Mode     string
	Holders  int
}

// NewNode reads n's capacity: NodeResources less ReservedResources (cpu,
// memory, disk, reserved cores, ReservedHostPorts), the reservable cores
// (ReservableCpuCores, else 0..TotalCpuCores-1), the dynamic port range
// and the device instances. Malformed parts of ReservedHostPorts are
// ignored (the client validated them when it fingerprinted).
func NewNode(n *api.Node) *Node {
	c := &Node{}
	r := n.NodeResources
	if r != nil {
		c.CPU, c.MemoryMB, c.DiskMB = r.Cpu.CpuShares, r.Memory.MemoryMB, r.Disk.DiskMB
		c.MinDynamicPort, c.MaxDynamicPort = r.MinDynamicPort, r.MaxDynamicPort
	}
	if c.MinDynamicPort <= 0 {
		c.MinDynamicPort = api.DefaultMinDynamicPort
	}
	if c.MaxDynamicPort <= 0 || c.MaxDynamicPort < c.MinDynamicPort {
		c.MaxDynamicPort = api.DefaultMaxDynamicPort
	}
	var reservedCores []uint16
	if rr := n.ReservedResources; rr != nil {
		c.CPU -= rr.Cpu.CpuShares
		c.MemoryMB -= rr.Memory.MemoryMB
		c.DiskMB -= rr.Disk.DiskMB
		reservedCores = rr.Cpu.ReservableCpuCores
		if rr.ReservedHostPorts != "" {
			ports, _ := ParsePortSpec(rr.ReservedHostPorts)
			c.reservedPorts = make(map[int]struct{}, len(ports))
			for _, p := range ports {
				c.reservedPorts[p] = struct{}{}
				if c.inDynamic(p) {
					c.busyDynamic++
				}
			}
		}
	}
	if r != nil {
		cores := r.Cpu.ReservableCpuCores
		if len(cores) == 0 {
			for i := uint16(0); i < r.Cpu.TotalCpuCores; i++ {
				cores = append(cores, i)
			}
		}
		for _, id := range cores {
			reserved := false
			for _, x := range reservedCores {
				if x == id {
					reserved = true
					break
				}
			}
			if !reserved {
				c.cores = append(c.cores, id)
			}
		}
		for _, d := range r.Devices {
			mem := d.MemoryMB()
			for _, inst := range d.Instances {
				if c.devices == nil {
					c.devices = map[string]int64{}
				}
				c.devices[inst.ID] = mem
			}
		}
	}
	return c
}

func (c *Node) inDynamic(p int) bool { return p >= c.MinDynamicPort && p <= c.MaxDynamicPort }

// DeviceMemory is device instance id's memory in MiB (0: unknown or not
// on the node).
func (c *Node) DeviceMemory(id string) int64 { return c.devices[id] }

// Used returns the node's usage (its maps are the ledger's own: read only).
func (c *Node) Used() Usage { return c.used }

// Add counts v as used on the node. It does not check that v fits.
func (c *Node) Add(v *Vector) {
	u := &c.used
	u.CPU += v.CPU
	u.MemoryMB += v.MemoryMB
	u.DiskMB += v.DiskMB
	for _, id := range v.Cores {
		if u.Cores == nil {
			u.Cores = map[uint16]int{}
		}
		u.Cores[id]++
	}
	for _, p := range v.Ports {
		if u.Ports == nil {
			u.Ports = map[int]int{}
		}
		u.Ports[p]++
		if _, res := c.reservedPorts[p]; u.Ports[p] == 1 && !res && c.inDynamic(p) {
			c.busyDynamic++
		}
	}
	for _, id := range v.Devices {
		if u.Devices == nil {
			u.Devices = map[string]int{}
		}
		u.Devices[id]++
	}
	for _, sh := range v.Shares {
		if u.Shared == nil {
			u.Shared = map[string]*SharedUse{}
		}
		su := u.Shared[sh.ID]
		if su == nil {
			su = &SharedUse{Mode: sh.Mode}
			u.Shared[sh.ID] = su
		}
		su.Milli += sh.Milli
		su.MemoryMB += sh.MemoryMB
		su.Holders++
	}
}

// Sub releases v, which should have been added before (IDs not counted
// are skipped; amounts are subtracted as given).
func (c *Node) Sub(v *Vector) {
	u := &c.used
	u.CPU -= v.CPU
	u.MemoryMB -= v.MemoryMB
	u.DiskMB -= v.DiskMB
	for _, id := range v.Cores {
		if u.Cores[id] == 0 {
			continue // never added: nothing to release
		}
		if u.Cores[id]--; u.Cores[id] == 0 {
			delete(u.Cores, id)
		}
	}
	if len(u.Cores) == 0 {
		u.Cores = nil
	}
	for _, p := range v.Ports {
		if u.Ports[p] == 0 {
			continue
		}
		if u.Ports[p]--; u.Ports[p] == 0 {
			delete(u.Ports, p)
			if _, res := c.reservedPorts[p]; !res && c.inDynamic(p) {
				c.busyDynamic--
			}
		}
	}
	if len(u.Ports) == 0 {
		u.Ports = nil
	}
	for _, id := range v.Devices {
		if u.Devices[id] == 0 {
			continue
		}
		if u.Devices[id]--; u.Devices[id] == 0 {
			delete(u.Devices, id)
		}
	}
	if len(u.Devices) == 0 {
		u.Devices = nil
	}
	for _, sh := range v.Shares {
		su := u.Shared[sh.ID]
		if su == nil || su.Holders == 0 {
			continue
		}
		su.Milli -= sh.Milli
		su.MemoryMB -= sh.MemoryMB
		if su.Holders--; su.Holders == 0 {
			delete(u.Shared, sh.ID)
		}
	}
	if len(u.Shared) == 0 {
		u.Shared = nil
	}
}

// PortBusy reports whether host port p is reserved by the node or used.
func (c *Node) PortBusy(p int) bool {
	if _, ok := c.reservedPorts[p]; ok {
		return true
	}
	return c.used.Ports[p] > 0
}

// DeviceUsed reports whether device instance id is used, whole or in
// part (it is not free for a whole ask).
func (c *Node) DeviceUsed(id string) bool { return c.used.Devices[id] > 0 || c.used.Shared[id] != nil }

// DeviceShareFree is what a share of mode may still take of device
// instance id: thousandths of its compute and MiB of its memory (memory
// -1: unknown). An instance held whole, or shared in another mode, has
// nothing free for it.
func (c *Node) DeviceShareFree(id, mode string) (milli int, memMB int64) {
	mem, ok := c.devices[id]
	if !ok || c.used.Devices[id] > 0 {
		return 0, 0
	}
	if mem == 0 {
		mem = -1
	}
	su := c.used.Shared[id]
	if su == nil {
		return api.MilliPerDevice, mem
	}
	if su.Mode != mode {
		return 0, 0
	}
	if mem > 0 {
		mem = max(0, mem-su.MemoryMB)
	}
	return max(0, api.MilliPerDevice-su.Milli), mem
}

// FreeCores returns up to k free reservable core IDs in node order.
func (c *Node) FreeCores(k int) []uint16 {
	var out []uint16
	for _, id := range c.cores {
		if len(out) == k {
			break
		}
		if c.used.Cores[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// FreeCoresPreferring returns up to k free reservable core IDs: those of
// prefer first (in its order), then the others in node order.
func (c *Node) FreeCoresPreferring(k int, prefer []uint16) []uint16 {
	if len(prefer) == 0 {
		return c.FreeCores(k)
	}
	chosen := make(map[uint16]bool, k)
	var out []uint16
	for _, id := range prefer {
		if len(out) == k {
			return out
		}
		if !chosen[id] && c.used.Cores[id] == 0 && indexOf(c.cores, id) {
			chosen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range c.cores {
		if len(out) == k {
			break
		}
		if !chosen[id] && c.used.Cores[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

func (c *Node) freeCoreCount(k int) int {
	n := 0
	for _, id := range c.cores {
		if n == k {
			break
		}
		if c.used.Cores[id] == 0 {
			n++
		}
	}
	return n
}

// Fits reports whether v fits in what is free on the node: nil when it
// does, else the first exhausted dimension in the order cpu, cores,
// memory, disk, ports (static collisions, then the dynamic range),
// devices. Static ports collide with the node's reserved ports, used
// ports and each other; reserved cores and device instances with used
// ones; a device instance must be on the node.
func (c *Node) Fits(v *Vector) *Exhausted {
	u := &c.used
	if u.CPU+v.CPU > c.CPU {
		return &Exhausted{Dimension: DimCPU, Need: v.CPU, Free: c.CPU - u.CPU}
	}
	if v.NumCores > 0 {
		if free := c.freeCoreCount(v.NumCores); free < v.NumCores {
			return &Exhausted{Dimension: DimCores, Need: int64(v.NumCores), Free: int64(free)}
		}
	}
	for i, id := range v.Cores {
		if u.Cores[id] > 0 || indexOf(v.Cores[:i], id) {
			return &Exhausted{Dimension: DimCores, ID: strconv.Itoa(int(id)), Why: "collision"}
		}
	}
	if u.MemoryMB+v.MemoryMB > c.MemoryMB {
		return &Exhausted{Dimension: DimMemory, Need: v.MemoryMB, Free: c.MemoryMB - u.MemoryMB}
	}
	if c.DiskMB > 0 && u.DiskMB+v.DiskMB > c.DiskMB {
		return &Exhausted{Dimension: DimDisk, Need: v.DiskMB, Free: c.DiskMB - u.DiskMB}
	}
	staticInRange := 0
	for i, p := range v.Ports {
		if _, res := c.reservedPorts[p]; res {
			return &Exhausted{Dimension: DimPorts, ID: strconv.Itoa(p), Why: "is reserved on the node"}
		}
		if u.Ports[p] > 0 || indexOf(v.Ports[:i], p) {
			return &Exhausted{Dimension: DimPorts, ID: strconv.Itoa(p), Why: "collision"}
		}
		if c.inDynamic(p) {
			staticInRange++
		}
	}
	if v.NumDynamicPorts > 0 {
		free := c.MaxDynamicPort - c.MinDynamicPort + 1 - c.busyDynamic - staticInRange
		if free < v.NumDynamicPorts {
			return &Exhausted{Dimension: DimDynamicPorts, Need: int64(v.NumDynamicPorts), Free: int64(max(free, 0))}
		}
	}
	for i, id := range v.Devices {
		if _, ok := c.devices[id]; !ok {
			return &Exhausted{Dimension: DimDevices, ID: id, Why: "not on node"}
		}
		if u.Devices[id] > 0 || u.Shared[id] != nil || indexOf(v.Devices[:i], id) {
			return &Exhausted{Dimension: DimDevices, ID: id, Why: "collision"}
		}
	}
	return c.sharesFit(v)
}

// sharesFit checks v's shares: each instance on the node, not held whole
// (by the node's allocs or v itself), one mode per instance, and the
// shares on it (v's included) within its compute and known memory.
func (c *Node) sharesFit(v *Vector) *Exhausted {
	u := &c.used
	for i, sh := range v.Shares {
		mem, ok := c.devices[sh.ID]
		if !ok {
			return &Exhausted{Dimension: DimDevices, ID: sh.ID, Why: "not on node"}
		}
		if u.Devices[sh.ID] > 0 || indexOf(v.Devices, sh.ID) {
			return &Exhausted{Dimension: DimDevices, ID: sh.ID, Why: "collision"}
		}
		milli, memMB, mode := sh.Milli, sh.MemoryMB, ""
		if su := u.Shared[sh.ID]; su != nil {
			milli, memMB, mode = milli+su.Milli, memMB+su.MemoryMB, su.Mode
		}
		for _, o := range v.Shares[:i] {
			if o.ID == sh.ID {
				milli, memMB = milli+o.Milli, memMB+o.MemoryMB
				if mode == "" {
					mode = o.Mode
				}
			}
		}
		if mode != "" && mode != sh.Mode {
			return &Exhausted{Dimension: DimDevices, ID: sh.ID, Why: "is shared in mode " + mode}
		}
		if milli > api.MilliPerDevice {
			return &Exhausted{Dimension: DimDeviceShare, ID: sh.ID, Need: int64(sh.Milli), Free: int64(api.MilliPerDevice - (milli - sh.Milli)), Why: "compute share exhausted"}
		}
		if mem > 0 && memMB > mem {
			return &Exhausted{Dimension: DimDeviceShare, ID: sh.ID, Need: sh.MemoryMB, Free: mem - (memMB - sh.MemoryMB), Why: "memory share exhausted"}
		}
	}
	return nil
}

func indexOf[T comparable](s []T, x T) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// Clone returns a copy whose usage can change independently (the
// capacity side, never modified after NewNode, is shared).
func (c *Node) Clone() *Node {
	d := *c
	d.used.Cores = maps.Clone(c.used.Cores)
	d.used.Ports = maps.Clone(c.used.Ports)
	d.used.Devices = maps.Clone(c.used.Devices)
	if c.used.Shared != nil {
		d.used.Shared = make(map[string]*SharedUse, len(c.used.Shared))
		for id, su := range c.used.Shared {
			cp := *su
			d.used.Shared[id] = &cp
		}
	}
	return &d
}
