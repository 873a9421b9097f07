package scheduler

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// nodeState is one candidate node with its free resources, computed
// lazily (on first visit) from the node's allocations and then updated
// as this pass places and stops allocations.
type nodeState struct {
	node  *api.Node
	pos   int
	class string

	loaded                      bool
	cpuTotal, memTotal, diskTot int64
	cpuUsed, memUsed, diskUsed  int64
	allocs                      []*api.Allocation // live allocs (not stopped by this plan)
	ports                       map[int]struct{}  // nil until a group asks for ports
	devUsed                     map[string]struct{}
	coresUsed                   map[uint16]struct{}
	jobTG                       map[string]int // live allocs of the scheduled job, by group
	jobTotal                    int
	minPort, maxPort            int
}

// load computes the node's usage once.
func (s *sched) load(ns *nodeState) {
	if ns.loaded {
		return
	}
	ns.loaded = true
	n := ns.node
	if r := n.NodeResources; r != nil {
		ns.cpuTotal, ns.memTotal, ns.diskTot = r.Cpu.CpuShares, r.Memory.MemoryMB, r.Disk.DiskMB
		ns.minPort, ns.maxPort = r.MinDynamicPort, r.MaxDynamicPort
	}
	if ns.minPort <= 0 {
		ns.minPort = api.DefaultMinDynamicPort
	}
	if ns.maxPort <= 0 || ns.maxPort < ns.minPort {
		ns.maxPort = api.DefaultMaxDynamicPort
	}
	if r := n.ReservedResources; r != nil {
		ns.cpuTotal -= r.Cpu.CpuShares
		ns.memTotal -= r.Memory.MemoryMB
		ns.diskTot -= r.Disk.DiskMB
	}
	allocs, err := s.st.AllocsByNode(n.ID)
	if err != nil {
		s.err = err
		return
	}
	for _, a := range allocs {
		if a.TerminalStatus() || s.stopped[a.ID] {
			continue
		}
		ns.addAlloc(a, s.job)
	}
}

func (ns *nodeState) addAlloc(a *api.Allocation, job *api.Job) {
	ns.allocs = append(ns.allocs, a)
	cpu, mem, disk := a.AllocatedResources.Comparable()
	ns.cpuUsed += cpu
	ns.memUsed += mem
	ns.diskUsed += disk
	if r := a.AllocatedResources; r != nil {
		for _, t := range r.Tasks {
			for _, c := range t.Cpu.ReservedCores {
				if ns.coresUsed == nil {
					ns.coresUsed = map[uint16]struct{}{}
				}
				ns.coresUsed[c] = struct{}{}
			}
			for _, d := range t.Devices {
				if ns.devUsed == nil {
					ns.devUsed = map[string]struct{}{}
				}
				for _, id := range d.DeviceIDs {
					ns.devUsed[id] = struct{}{}
				}
			}
		}
		if ns.ports != nil {
			addAllocPorts(ns.ports, a)
		}
	}
	if job != nil && a.JobID == job.ID && a.Namespace == job.Namespace {
		if ns.jobTG == nil {
			ns.jobTG = map[string]int{}
		}
		ns.jobTG[a.TaskGroup]++
		ns.jobTotal++
	}
}

// removeAlloc releases a live alloc stopped by this plan.
func (ns *nodeState) removeAlloc(a *api.Allocation, job *api.Job) {
	for i, x := range ns.allocs {
		if x.ID != a.ID {
			continue
		}
		ns.allocs = append(ns.allocs[:i:i], ns.allocs[i+1:]...)
		cpu, mem, disk := a.AllocatedResources.Comparable()
		ns.cpuUsed -= cpu
		ns.memUsed -= mem
		ns.diskUsed -= disk
		if r := a.AllocatedResources; r != nil {
			for _, t := range r.Tasks {
				for _, c := range t.Cpu.ReservedCores {
					delete(ns.coresUsed, c)
				}
				for _, d := range t.Devices {
					for _, id := range d.DeviceIDs {
						delete(ns.devUsed, id)
					}
				}
			}
		}
		if ns.ports != nil {
			ns.ports = nil // rebuilt on demand
		}
		if job != nil && a.JobID == job.ID && a.Namespace == job.Namespace {
			ns.jobTG[a.TaskGroup]--
			ns.jobTotal--
		}
		return
	}
}

// usedPorts returns the node's used host ports, building the set lazily.
func (ns *nodeState) usedPorts() map[int]struct{} {
	if ns.ports != nil {
		return ns.ports
	}
	ns.ports = map[int]struct{}{}
	if r := ns.node.ReservedResources; r != nil {
		for _, p := range parsePortSpec(r.ReservedHostPorts) {
			ns.ports[p] = struct{}{}
		}
	}
	for _, a := range ns.allocs {
		addAllocPorts(ns.ports, a)
	}
	return ns.ports
}

func addAllocPorts(m map[int]struct{}, a *api.Allocation) {
	r := a.AllocatedResources
	if r == nil {
		return
	}
	for _, p := range r.Shared.Ports {
		m[p.Value] = struct{}{}
	}
	addNetPorts(m, r.Shared.Networks)
	for _, t := range r.Tasks {
		addNetPorts(m, t.Networks)
	}
}

func addNetPorts(m map[int]struct{}, nets []*api.NetworkResource) {
	for _, n := range nets {
		for _, p := range n.ReservedPorts {
			m[p.Value] = struct{}{}
		}
		for _, p := range n.DynamicPorts {
			m[p.Value] = struct{}{}
		}
	}
}

// parsePortSpec parses "22,80,8000-8010"; malformed parts are ignored.
func parsePortSpec(spec string) []int {
	var out []int
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a || b-a > 65535 {
				continue
			}
		}
		for p := a; p <= b; p++ {
			out = append(out, p)
		}
	}
	return out
}

// computedClass returns the node's class key: ComputedClass when the node
// has one, else a hash of everything class-level constraints may read
// (datacenter, pool, class, non-unique attributes and meta, drivers).
func computedClass(n *api.Node) string {
	if n.ComputedClass != "" {
		return n.ComputedClass
	}
	var sum uint64
	h := fnv.New64a()
	entry := func(kind byte, k, v string) {
		h.Reset()
		h.Write([]byte{kind})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(v))
		sum += h.Sum64() // order independent: no sorting of map keys
	}
	entry('d', n.Datacenter, "")
	entry('p', n.NodePool, "")
	entry('c', n.NodeClass, "")
	for k, v := range n.Attributes {
		if !strings.HasPrefix(k, "unique.") {
			entry('a', k, v)
		}
	}
	for k, v := range n.Meta {
		if !strings.HasPrefix(k, "unique.") {
			entry('m', k, v)
		}
	}
	for k, d := range n.Drivers {
		if d != nil && d.Detected && d.Healthy {
			entry('r', k, "")
		}
	}
	return "v1:" + strconv.FormatUint(sum, 16)
}

// dcMatch reports whether dc matches any pattern (globs with *).
func dcMatch(patterns []string, dc string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if globMatch(p, dc) {
			return true
		}
	}
	return false
}

// globMatch matches s against a pattern where * matches any run.
func globMatch(p, s string) bool {
	if !strings.Contains(p, "*") {
		return p == s
	}
	parts := strings.Split(p, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return strings.HasSuffix(s, last)
}

func poolMatch(jobPool, nodePool string) bool {
	if jobPool == "" {
		jobPool = api.DefaultNodePool
	}
	if nodePool == "" {
		nodePool = api.DefaultNodePool
	}
	return jobPool == "all" || jobPool == nodePool
}

func hostIP(n *api.Node) string {
	if ip := n.Attributes["unique.network.ip-address"]; ip != "" {
		return ip
	}
	return "127.0.0.1"
}

// mhzPerCore is the node's CPU shares divided by its core count.
func (ns *nodeState) mhzPerCore() int64 {
	r := ns.node.NodeResources
	if r == nil || r.Cpu.TotalCpuCores == 0 {
		return 0
	}
	return r.Cpu.CpuShares / int64(r.Cpu.TotalCpuCores)
}

// freeCores returns up to n free reservable core IDs, lowest first.
func (ns *nodeState) freeCores(n int) []uint16 {
	r := ns.node.NodeResources
	if r == nil {
		return nil
	}
	cores := r.Cpu.ReservableCpuCores
	if len(cores) == 0 {
		for i := uint16(0); i < r.Cpu.TotalCpuCores; i++ {
			cores = append(cores, i)
		}
	}
	reserved := map[uint16]bool{}
	if rr := ns.node.ReservedResources; rr != nil {
		for _, c := range rr.Cpu.ReservableCpuCores {
			reserved[c] = true
		}
	}
	var out []uint16
	for _, c := range cores {
		if _, used := ns.coresUsed[c]; used || reserved[c] {
			continue
		}
		out = append(out, c)
		if len(out) == n {
			break
		}
	}
	return out
}
