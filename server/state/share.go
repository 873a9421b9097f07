package state

import "github.com/drover/drover/api"

// Sharing. A stored alloc is immutable (every write stores a new copy), so
// allocs may point at one copy of the parts they have equal: their node's
// ID and name, the node IDs of their score metadata, a plan's resources,
// a batch's statuses. Decoding gives every alloc its own copies: ~0.7 KB
// of the ~3.4 KB of heap a stored alloc took, ~700 MB at 1,000,000 allocs,
// all of which every collection marks. Values never change; only which copy is held does.

// nodeName is a registered node's ID and name, the copies allocs share.
type nodeName struct{ id, name string }

// nodeNames maps node IDs to the stored node's strings. Only write
// transactions and restores use it, which memdb serializes (one writer);
// a transaction that aborts after changing it leaves an entry more or
// less, which costs sharing only, never a value.
type nodeNames map[string]nodeName

func (nn nodeNames) add(n *api.Node) { nn[n.ID] = nodeName{id: n.ID, name: n.Name} }

// sharer is one transaction's (or restore's) memory of what the last
// alloc held.
type sharer struct {
	nodes  nodeNames
	res    *api.AllocatedResources // the last plain one of several tasks
	single map[resKey]*api.AllocatedResources
	eval   string
	desc   string
}

// alloc points a's strings and resources at equal copies already held.
func (sh *sharer) alloc(a *api.Allocation) {
	if n, ok := sh.nodes[a.NodeID]; ok {
		a.NodeID = n.id
		if a.NodeName == n.name {
			a.NodeName = n.name
		}
	}
	if m := a.Metrics; m != nil {
		for _, sm := range m.ScoreMetaData {
			if sm == nil {
				continue
			}
			if n, ok := sh.nodes[sm.NodeID]; ok {
				sm.NodeID = n.id
			}
		}
	}
	if a.Namespace == api.DefaultNamespace {
		a.Namespace = api.DefaultNamespace
	}
	if j := a.Job; j != nil {
		if a.JobID == j.ID {
			a.JobID = j.ID
		}
		if a.Namespace == j.Namespace {
			a.Namespace = j.Namespace
		}
		for _, tg := range j.TaskGroups {
			if tg != nil && a.TaskGroup == tg.Name {
				a.TaskGroup = tg.Name
				break
			}
		}
	}
	shareLast(&a.EvalID, &sh.eval)
	a.DesiredStatus = status(a.DesiredStatus)
	sh.client(a)
	if r := a.AllocatedResources; plainResources(r) {
		if len(r.Tasks) != 1 {
			if sh.res != nil && sameResources(sh.res, r) {
				a.AllocatedResources = sh.res
			} else {
				sh.res = r
			}
			return
		}
		// One task, the common case: any earlier equal one (a restore
		// reads allocs in ID order, every job's mixed with the others').
		var k resKey
		for name, t := range r.Tasks {
			k = resKey{task: name, cpu: t.Cpu.CpuShares, mem: t.Memory, disk: r.Shared.DiskMB}
		}
		if have, ok := sh.single[k]; ok {
			a.AllocatedResources = have
			return
		}
		if sh.single == nil {
			sh.single = map[resKey]*api.AllocatedResources{}
		}
		sh.single[k] = r
	}
}

// resKey is the whole of a plain one-task resources value.
type resKey struct {
	task      string
	cpu, disk int64
	mem       api.AllocatedMemoryResources
}

// client shares a's client status and description.
func (sh *sharer) client(a *api.Allocation) {
	a.ClientStatus = status(a.ClientStatus)
	shareLast(&a.ClientDescription, &sh.desc)
}

// allocStatuses are the desired and client statuses (no two equal).
var allocStatuses = [...]string{api.AllocDesiredStatusRun, api.AllocDesiredStatusStop, api.AllocDesiredStatusEvict,
	api.AllocClientStatusPending, api.AllocClientStatusRunning, api.AllocClientStatusComplete,
	api.AllocClientStatusFailed, api.AllocClientStatusLost, api.AllocClientStatusUnknown}

// status returns the package's copy of a known status.
func status(s string) string {
	for _, k := range allocStatuses {
		if k == s {
			return k
		}
	}
	return s
}

// shareLast points *s at *last when equal, else makes it the new last.
func shareLast(s, last *string) {
	if *s == *last {
		*s = *last
	} else {
		*last = *s
	}
}

// plainResources reports whether r has only CPU, memory and disk: no
// ports, networks, devices, cores or lifecycles, the parts that differ
// between allocs of a group.
func plainResources(r *api.AllocatedResources) bool {
	if r == nil || r.Tasks == nil || len(r.TaskLifecycles) > 0 || len(r.Shared.Networks) > 0 || len(r.Shared.Ports) > 0 {
		return false
	}
	for _, t := range r.Tasks {
		if t == nil || len(t.Networks) > 0 || len(t.Devices) > 0 || len(t.Cpu.ReservedCores) > 0 {
			return false
		}
	}
	return true
}

// sameResources compares two plain resources.
func sameResources(a, b *api.AllocatedResources) bool {
	if a.Shared.DiskMB != b.Shared.DiskMB || len(a.Tasks) != len(b.Tasks) {
		return false
	}
	for name, ta := range a.Tasks {
		tb := b.Tasks[name]
		if tb == nil || ta.Cpu.CpuShares != tb.Cpu.CpuShares || ta.Memory != tb.Memory {
			return false
		}
	}
	return true
}
