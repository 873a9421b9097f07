package scheduler

import (
	"github.com/drover/drover/api"
)

// placement is one alloc to place.
type placement struct {
	tg      *api.TaskGroup
	index   int
	prev    *api.Allocation // the alloc this one replaces, if any
	resched bool            // a reschedule of a failed alloc (tracker, penalty)
	delay   int64           // reschedule delay in ns
	node    *nodeState      // fixed node (system jobs)
	stopped bool            // prev was stopped by this plan for this placement
	deploy  string
	canary  bool // a canary of the deployment (old allocs keep running)
	// fresh > 0: the placement stands for that many new allocs of the
	// group, made one by one at idx's lowest free indexes as they are
	// placed (placeFresh), so a count far above what fits costs what fits.
	fresh int
	idx   *indexPool
}

// buildAlloc makes the alloc of placement p on candidate c: its resources
// (reserved cores near its devices, devices, ports), name, links and
// deployment status.
func (pl *placer) buildAlloc(tc *tgCtx, p *placement, c *cand) *api.Allocation {
	env, job := pl.env, pl.env.job
	n := c.ns.node
	now := env.opts.Now.UnixNano()
	ns := job.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	ar := &api.AllocatedResources{Tasks: make(map[string]*api.AllocatedTaskResources, len(tc.tasks))}
	var cores []uint16
	if tc.cores > 0 {
		cores = c.ns.cap.FreeCoresPreferring(tc.cores, nearCores(n, c.picks))
	}
	for _, t := range tc.tasks {
		cpu := api.AllocatedCpuResources{CpuShares: t.cpu}
		if t.cores > 0 {
			cpu.ReservedCores, cores = cores[:t.cores:t.cores], cores[t.cores:]
			cpu.CpuShares = int64(t.cores) * c.ns.mhzPerCore()
		}
		ar.Tasks[t.task.Name] = &api.AllocatedTaskResources{
			Cpu:    cpu,
			Memory: api.AllocatedMemoryResources{MemoryMB: t.mem, MemoryMaxMB: t.max},
		}
		if t.task.Lifecycle != nil {
			if ar.TaskLifecycles == nil {
				ar.TaskLifecycles = map[string]*api.TaskLifecycle{}
			}
			ar.TaskLifecycles[t.task.Name] = t.task.Lifecycle
		}
	}
	ar.Shared.DiskMB = tc.disk
	for _, pk := range c.picks {
		tr := ar.Tasks[pk.ask.task]
		tr.Devices = append(tr.Devices, &api.AllocatedDeviceResource{
			Vendor: pk.group.Vendor, Type: pk.group.Type, Name: pk.group.Name, DeviceIDs: pk.ids, Share: pk.share,
		})
	}
	if len(tc.ports) > 0 {
		pl.assignPorts(tc, c.ns, ar)
	}
	a := &api.Allocation{
		ID: env.newID(), Namespace: ns, EvalID: env.eval.ID, Name: api.AllocName(job.ID, p.tg.Name, p.index),
		NodeID: n.ID, NodeName: n.Name, JobID: job.ID, Job: job, TaskGroup: p.tg.Name,
		AllocatedResources: ar, DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusPending,
		DeploymentID: p.deploy, CreateTime: now, ModifyTime: now,
	}
	if p.canary {
		a.DeploymentStatus = &api.AllocDeploymentStatus{Canary: true}
		if st := pl.out.plan.Deployment.TaskGroups[p.tg.Name]; st != nil {
			st.PlacedCanaries = append(st.PlacedCanaries, a.ID)
		}
	}
	if p.prev != nil {
		a.PreviousAllocation = p.prev.ID
		if p.resched {
			var evs []*api.RescheduleEvent
			if p.prev.RescheduleTracker != nil {
				evs = append(evs, p.prev.RescheduleTracker.Events...)
			}
			evs = append(evs, &api.RescheduleEvent{
				RescheduleTime: now, PrevAllocID: p.prev.ID, PrevNodeID: p.prev.NodeID, Delay: durationNS(p.delay),
			})
			a.RescheduleTracker = &api.RescheduleTracker{Events: evs}
		}
	}
	return a
}

// assignPorts gives reserved ports their value and dynamic ports a free
// value from the node's dynamic range.
func (pl *placer) assignPorts(tc *tgCtx, ns *nodeState, ar *api.AllocatedResources) {
	taken := map[int]bool{} // ports given within this alloc
	busy := func(p int) bool { return taken[p] || ns.cap.PortBusy(p) }
	ip := hostIP(ns.node)
	groupNets := make([]*api.NetworkResource, len(tc.tg.Networks))
	for i, n := range tc.tg.Networks {
		groupNets[i] = &api.NetworkResource{Mode: n.Mode, IP: ip, MBits: n.MBits, DNS: n.DNS, Hostname: n.Hostname}
	}
	for _, pa := range tc.ports {
		if pa.group && pa.netIdx >= len(groupNets) {
			// The gang port's own network (gangPortAsk).
			groupNets = append(groupNets, &api.NetworkResource{Mode: "host", IP: ip})
		}
	}
	taskNets := map[string][]*api.NetworkResource{}
	for _, t := range tc.tasks {
		if t.task.Resources == nil {
			continue
		}
		for _, n := range t.task.Resources.Networks {
			taskNets[t.task.Name] = append(taskNets[t.task.Name], &api.NetworkResource{Mode: n.Mode, IP: ip, MBits: n.MBits})
		}
	}
	lo := ns.cap.MinDynamicPort
	span := ns.cap.MaxDynamicPort - lo + 1
	for _, pa := range tc.ports {
		p := pa.port
		dynamic := p.Value == 0
		if dynamic {
			start := pl.env.rng.IntN(span)
			for i := 0; i < span; i++ {
				v := lo + (start+i)%span
				if !busy(v) {
					p.Value = v
					break
				}
			}
		}
		taken[p.Value] = true
		var net *api.NetworkResource
		if pa.group {
			net = groupNets[pa.netIdx]
			ar.Shared.Ports = append(ar.Shared.Ports, api.AllocatedPort{Label: p.Label, Value: p.Value, To: p.To, HostIP: ip})
		} else {
			net = taskNets[pa.task][pa.netIdx]
		}
		if dynamic {
			net.DynamicPorts = append(net.DynamicPorts, p)
		} else {
			net.ReservedPorts = append(net.ReservedPorts, p)
		}
	}
	ar.Shared.Networks = groupNets
	for task, nets := range taskNets {
		ar.Tasks[task].Networks = nets
	}
}

// linkPrev sets NextAllocation on the replaced alloc's copy in the plan
// (adding a stop for it when it is not already there).
func (pl *placer) linkPrev(prev, next *api.Allocation) {
	for _, c := range pl.out.plan.NodeUpdate[prev.NodeID] {
		if c.ID == prev.ID {
			c.NextAllocation = next.ID
			return
		}
	}
	if prev.ClientStatus == api.AllocClientStatusUnknown {
		return // it may still run on its disconnected node: see disconnect.go
	}
	desc, status := "alloc was rescheduled because it failed", ""
	if prev.ClientStatus == api.AllocClientStatusLost {
		desc, status = "alloc is lost since its node is down", api.AllocClientStatusLost
	}
	c := pl.stop(prev, desc, status)
	c.NextAllocation = next.ID
}
