package scheduler

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover/drover/api"
)

// memState is a small in-memory State for tests (scheduler unit tests may
// fake state; the real one is server/state's snapshot).
type memState struct {
	index   uint64
	jobs    map[string]*api.Job
	nodes   []*api.Node
	allocs  map[string]*api.Allocation
	byJob   map[string][]*api.Allocation
	byNode  map[string][]*api.Allocation
	deploys map[string]*api.Deployment
	evals   map[string]*api.Evaluation // blocked evals (reservations)
	queues  map[string]*api.Queue      // applied queues ("default" is implicit)
}

func newMemState() *memState {
	return &memState{index: 1, jobs: map[string]*api.Job{}, allocs: map[string]*api.Allocation{},
		byJob: map[string][]*api.Allocation{}, byNode: map[string][]*api.Allocation{}, deploys: map[string]*api.Deployment{},
		evals: map[string]*api.Evaluation{}, queues: map[string]*api.Queue{}}
}

func (m *memState) Index() uint64 { return m.index }
func (m *memState) JobByID(ns, id string) (*api.Job, error) {
	return m.jobs[ns+"/"+id], nil
}
func (m *memState) Nodes() ([]*api.Node, error) { return m.nodes, nil }
func (m *memState) NodeByID(id string) (*api.Node, error) {
	for _, n := range m.nodes {
		if n.ID == id {
			return n, nil
		}
	}
	return nil, nil
}
func (m *memState) AllocsByJob(ns, id string) ([]*api.Allocation, error) {
	return append([]*api.Allocation(nil), m.byJob[ns+"/"+id]...), nil
}
func (m *memState) AllocsByNode(id string) ([]*api.Allocation, error) { return m.byNode[id], nil }
func (m *memState) AllocByID(id string) (*api.Allocation, error)      { return m.allocs[id], nil }
func (m *memState) LatestDeploymentByJobID(ns, id string) (*api.Deployment, error) {
	return m.deploys[ns+"/"+id], nil
}

// Reservations returns the reservations of blocked evals (the newest per
// job), as server/state does.
func (m *memState) Reservations() ([]*api.Reservation, error) {
	newest := map[string]*api.Evaluation{}
	for _, e := range m.evals {
		k := e.Namespace + "/" + e.JobID
		if e.Status != api.EvalStatusBlocked || e.Reservation == nil || m.jobs[k] == nil || m.jobs[k].Stop {
			continue
		}
		if cur := newest[k]; cur == nil || e.CreateIndex > cur.CreateIndex {
			newest[k] = e
		}
	}
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*api.Reservation
	for _, k := range keys {
		out = append(out, newest[k].Reservation)
	}
	return out, nil
}

// Queues returns the applied queues and the implicit "default", by name.
func (m *memState) Queues() ([]*api.Queue, error) {
	out := []*api.Queue{}
	if m.queues[api.DefaultQueue] == nil {
		out = append(out, &api.Queue{Name: api.DefaultQueue})
	}
	for _, q := range m.queues {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// QueueUsage sums the non-terminal allocs per queue (a scan: the fake's
// way; server/state keeps it incrementally).
func (m *memState) QueueUsage() (map[string]*api.QueueResources, error) {
	out := map[string]*api.QueueResources{}
	for _, a := range m.allocs {
		if a.TerminalStatus() {
			continue
		}
		j := a.Job
		if j == nil {
			j = m.jobs[a.Namespace+"/"+a.JobID]
		}
		q := api.JobQueue(j)
		if out[q] == nil {
			out[q] = &api.QueueResources{}
		}
		out[q].Add(a.QueueUsage(), 1)
	}
	return out, nil
}

// upsertQueue stores a queue (no tree checks).
func (m *memState) upsertQueue(q *api.Queue) { m.index++; m.queues[q.Name] = q }

// upsertEval stores an eval (blocked ones carry reservations).
func (m *memState) upsertEval(e *api.Evaluation) {
	m.index++
	if old := m.evals[e.ID]; old != nil {
		e.CreateIndex = old.CreateIndex
	} else {
		e.CreateIndex = m.index
	}
	e.ModifyIndex = m.index
	m.evals[e.ID] = e
}

func (m *memState) addNode(n *api.Node) { m.nodes = append(m.nodes, n); m.index++ }

func (m *memState) upsertJob(j *api.Job) {
	if j.Namespace == "" {
		j.Namespace = api.DefaultNamespace
	}
	m.index++
	if old := m.jobs[j.Namespace+"/"+j.ID]; old != nil {
		j.Version = old.Version + 1
		j.CreateIndex = old.CreateIndex
	} else {
		j.CreateIndex = m.index
	}
	j.ModifyIndex, j.JobModifyIndex = m.index, m.index
	m.jobs[j.Namespace+"/"+j.ID] = j
}

// upsertAlloc inserts or replaces an alloc (by ID).
func (m *memState) upsertAlloc(a *api.Allocation) {
	m.index++
	if old := m.allocs[a.ID]; old != nil {
		a.CreateIndex = old.CreateIndex
		replace := func(list []*api.Allocation) []*api.Allocation {
			for i, x := range list {
				if x.ID == a.ID {
					list[i] = a
				}
			}
			return list
		}
		m.byJob[a.Namespace+"/"+a.JobID] = replace(m.byJob[a.Namespace+"/"+a.JobID])
		m.byNode[a.NodeID] = replace(m.byNode[a.NodeID])
	} else {
		a.CreateIndex = m.index
		m.byJob[a.Namespace+"/"+a.JobID] = append(m.byJob[a.Namespace+"/"+a.JobID], a)
		m.byNode[a.NodeID] = append(m.byNode[a.NodeID], a)
	}
	a.ModifyIndex = m.index
	m.allocs[a.ID] = a
}

// apply commits a plan as the applier would (no re-check).
func (m *memState) apply(p *api.Plan) {
	for _, node := range sortedNodeKeys(p.NodeUpdate) {
		for _, a := range p.NodeUpdate[node] {
			m.upsertAlloc(a)
		}
	}
	for _, node := range sortedNodeKeys(p.NodePreemptions) {
		for _, a := range p.NodePreemptions[node] {
			m.upsertAlloc(a)
		}
	}
	for _, node := range sortedNodeKeys(p.NodeAllocation) {
		for _, a := range p.NodeAllocation[node] {
			m.upsertAlloc(a)
		}
	}
	if d := p.Deployment; d != nil {
		m.deploys[d.Namespace+"/"+d.JobID] = d
	}
	for _, u := range p.DeploymentUpdates {
		for k, d := range m.deploys {
			if d.ID == u.DeploymentID {
				c := *d
				c.Status, c.StatusDescription = u.Status, u.StatusDescription
				m.deploys[k] = &c
			}
		}
	}
}

func sortedNodeKeys(m map[string][]*api.Allocation) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// liveAllocs returns the job's non-terminal allocs sorted by name.
func (m *memState) liveAllocs(ns, job string) []*api.Allocation {
	var out []*api.Allocation
	for _, a := range m.byJob[ns+"/"+job] {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// testNode builds a ready node with exec/raw_exec drivers.
func testNode(name, dc string, cpu, memMB int64) *api.Node {
	return &api.Node{
		ID: "node-" + name, Name: name, Datacenter: dc, NodePool: api.DefaultNodePool,
		Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingEligible,
		Attributes: map[string]string{"kernel.name": "linux", "unique.network.ip-address": "10.0.0." + name},
		Meta:       map[string]string{},
		NodeResources: &api.NodeResources{
			Cpu: api.NodeCpuResources{CpuShares: cpu}, Memory: api.NodeMemoryResources{MemoryMB: memMB},
			Disk: api.NodeDiskResources{DiskMB: 100 * 1024},
		},
		Drivers: map[string]*api.DriverInfo{
			"exec":     {Detected: true, Healthy: true},
			"raw_exec": {Detected: true, Healthy: true},
		},
	}
}

// testJob builds a job with one group of count tasks.
func testJob(id, typ string, count int, cpu, memMB int) *api.Job {
	return &api.Job{
		ID: id, Name: id, Namespace: api.DefaultNamespace, Type: typ, Priority: 50,
		Datacenters: []string{"dc1", "dc2"},
		TaskGroups: []*api.TaskGroup{{
			Name: "web", Count: count, EphemeralDisk: &api.EphemeralDisk{SizeMB: 100},
			Tasks: []*api.Task{{Name: "server", Driver: "raw_exec", Resources: &api.Resources{CPU: cpu, MemoryMB: memMB}}},
		}},
	}
}

func testEval(job *api.Job, n int) *api.Evaluation {
	return &api.Evaluation{
		ID: fmt.Sprintf("eval-%04d-%s", n, job.ID), Namespace: job.Namespace, Priority: job.Priority,
		Type: job.Type, TriggeredBy: api.EvalTriggerJobRegister, JobID: job.ID, Status: api.EvalStatusPending,
	}
}

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
