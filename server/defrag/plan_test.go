package defrag

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

var now = time.Unix(1_700_000_000, 0)

// gpuNode is a ready node with gpus H100s, 64 cores of 1000 MHz and
// 256 GiB.
func gpuNode(id string, gpus int) *api.Node {
	var inst []*api.NodeDevice
	for i := 0; i < gpus; i++ {
		inst = append(inst, &api.NodeDevice{ID: fmt.Sprintf("%s-gpu%d", id, i), Healthy: true})
	}
	n := &api.Node{ID: id, Name: id, Datacenter: "dc1", Status: api.NodeStatusReady,
		NodeResources: &api.NodeResources{
			Cpu:    api.NodeCpuResources{CpuShares: 64000, TotalCpuCores: 64},
			Memory: api.NodeMemoryResources{MemoryMB: 262144},
		}}
	if gpus > 0 {
		n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: inst}}
	}
	return n
}

func job(id, typ string) *api.Job {
	return &api.Job{ID: id, Namespace: "default", Type: typ, Priority: 50, Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1}}}
}

var allocSeq int

// alloc places an alloc of j holding the given device instances of node n.
func alloc(j *api.Job, n *api.Node, devs ...int) *api.Allocation {
	allocSeq++
	var ids []string
	for _, d := range devs {
		ids = append(ids, fmt.Sprintf("%s-gpu%d", n.ID, d))
	}
	t := &api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 1000}, Memory: api.AllocatedMemoryResources{MemoryMB: 1024}}
	if len(ids) > 0 {
		t.Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: ids}}
	}
	return &api.Allocation{ID: fmt.Sprintf("a%03d", allocSeq), Namespace: "default", JobID: j.ID, Job: j, TaskGroup: "g",
		Name: fmt.Sprintf("%s.g[%d]", j.ID, allocSeq), NodeID: n.ID, DesiredStatus: api.AllocDesiredStatusRun,
		ClientStatus: api.AllocClientStatusRunning, CreateTime: now.Add(-time.Hour).UnixNano(),
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": t}}}
}

func pendingGPU(j *api.Job, count, gpus int) *Pending {
	return &Pending{Job: j, Group: "g", Count: count, Ask: capacity.Vector{CPU: 1000, MemoryMB: 1024},
		Devices: []DeviceAsk{{Name: "gpu", Count: gpus}}}
}

func moveSummary(p *Plan) []string {
	var out []string
	for _, m := range p.Moves {
		out = append(out, m.Alloc.ID+":"+m.From+"->"+m.To)
	}
	sort.Strings(out)
	return out
}

func TestFreesNodeForEightGPUJob(t *testing.T) {
	n1, n2, n3 := gpuNode("n1", 8), gpuNode("n2", 4), gpuNode("n3", 4)
	a, b := alloc(job("a", api.JobTypeBatch), n1, 0, 1, 2, 3), alloc(job("b", api.JobTypeService), n1, 4, 5, 6, 7)
	train := job("train", api.JobTypeBatch)
	p := Compute(&Input{Nodes: []*api.Node{n1, n2, n3}, Allocs: []*api.Allocation{a, b},
		Pending: []*Pending{pendingGPU(train, 1, 8)}, Now: now})
	if got := len(p.Moves); got != 2 {
		t.Fatalf("moves = %v, want 2", moveSummary(p))
	}
	tos := map[string]bool{}
	for _, m := range p.Moves {
		if m.From != "n1" || m.To == "n1" {
			t.Errorf("move %s: %s -> %s, want off n1", m.Alloc.ID, m.From, m.To)
		}
		tos[m.To] = true
		if m.Why != "frees n1 for train.g (8 GPU)" {
			t.Errorf("why = %q", m.Why)
		}
	}
	if len(tos) != 2 {
		t.Errorf("both moves go to %v, want one to each 4-GPU node", tos)
	}
	if got, want := p.Unblocks, []string{"train.g"}; !slices.Equal(got, want) {
		t.Errorf("unblocks = %v, want %v", got, want)
	}
	if got, want := p.Freed, []string{"n1"}; !slices.Equal(got, want) {
		t.Errorf("freed = %v, want %v", got, want)
	}
}

func TestNoPlanWithoutBenefit(t *testing.T) {
	n1, n2 := gpuNode("n1", 8), gpuNode("n2", 8)
	a, b := alloc(job("a", api.JobTypeBatch), n1, 0, 1, 2, 3), alloc(job("b", api.JobTypeBatch), n2, 0, 1, 2, 3)
	cases := []struct {
		name    string
		pending []*Pending
	}{
		{"nothing pending", nil},
		// 16 GPUs on one node: no node has that many.
		{"pending too big for any node", []*Pending{pendingGPU(job("huge", api.JobTypeBatch), 1, 16)}},
		// 4 GPUs fit as things are: nothing to move.
		{"pending fits already", []*Pending{pendingGPU(job("small", api.JobTypeBatch), 1, 4)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Compute(&Input{Nodes: []*api.Node{n1, n2}, Allocs: []*api.Allocation{a, b}, Pending: c.pending, Now: now})
			if len(p.Moves) != 0 || len(p.Unblocks) != 0 {
				t.Errorf("plan = %v unblocks %v, want none", moveSummary(p), p.Unblocks)
			}
		})
	}
}

func TestGangMovesWholeOrNotAtAll(t *testing.T) {
	n1, n2, n3, n4 := gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 4), gpuNode("n4", 4)
	g := job("ddp", api.JobTypeBatch)
	g.TaskGroups[0].Gang = &api.Gang{}
	m0, m1 := alloc(g, n1, 0, 1, 2, 3), alloc(g, n2, 0, 1, 2, 3)
	m0.Gang = &api.AllocGang{ID: "g", Size: 2, Rank: 0}
	m1.Gang = &api.AllocGang{ID: "g", Size: 2, Rank: 1}
	other := alloc(job("o", api.JobTypeBatch), n1, 4, 5, 6, 7)
	filler := alloc(job("f", api.JobTypeService), n2, 4, 5, 6, 7)
	train := job("train", api.JobTypeBatch)

	t.Run("whole gang moves", func(t *testing.T) {
		p := Compute(&Input{Nodes: []*api.Node{n1, n2, n3, n4}, Allocs: []*api.Allocation{m0, m1, other, filler},
			Pending: []*Pending{pendingGPU(train, 1, 8)}, Now: now})
		checkGangsWhole(t, p, []*api.Allocation{m0, m1, other, filler})
		if len(p.Unblocks) != 1 {
			t.Errorf("unblocks = %v, want train.g", p.Unblocks)
		}
	})
	t.Run("gang cannot move whole", func(t *testing.T) {
		// Without n4 only one 4-GPU member finds a destination: the gang
		// stays, and since every node holds a member, no node is freed.
		p := Compute(&Input{Nodes: []*api.Node{n1, n2, n3}, Allocs: []*api.Allocation{m0, m1, other, filler},
			Pending: []*Pending{pendingGPU(train, 1, 8)}, Now: now})
		for _, m := range p.Moves {
			if m.Alloc.Gang != nil {
				t.Errorf("gang member %s moved without its gang: %v", m.Alloc.ID, moveSummary(p))
			}
		}
		if len(p.Moves) != 0 {
			t.Errorf("moves = %v, want none (no node can be freed)", moveSummary(p))
		}
	})
}

func checkGangsWhole(t *testing.T, p *Plan, allocs []*api.Allocation) {
	t.Helper()
	moved := map[string]bool{}
	for _, m := range p.Moves {
		moved[m.Alloc.ID] = true
	}
	gangMoved := map[string]int{}
	gangSize := map[string]int{}
	for _, a := range allocs {
		if a.Gang == nil || a.TerminalStatus() {
			continue
		}
		k := a.JobID + "/" + a.Gang.ID
		gangSize[k]++
		if moved[a.ID] {
			gangMoved[k]++
		}
	}
	for k, n := range gangMoved {
		if n != gangSize[k] {
			t.Errorf("gang %s: %d of %d members moved", k, n, gangSize[k])
		}
	}
}

func TestRespectsMinRuntimeAndBudgets(t *testing.T) {
	n1, n2, n3 := gpuNode("n1", 8), gpuNode("n2", 4), gpuNode("n3", 4)
	train := job("train", api.JobTypeBatch)
	cases := []struct {
		name  string
		setup func(a, b *api.Allocation)
		bud   Budget
		moves int
	}{
		{"both movable", func(a, b *api.Allocation) {}, Budget{}, 2},
		{"young alloc under min_runtime", func(a, b *api.Allocation) {
			b.Job.MinRuntime = 2 * time.Hour // b has run 1h
		}, Budget{}, 0},
		{"group min_runtime over the job's", func(a, b *api.Allocation) {
			b.Job.MinRuntime = 30 * time.Minute
			b.Job.TaskGroups[0].MinRuntime = 2 * time.Hour
		}, Budget{}, 0},
		{"same job, max_disruption field 2", func(a, b *api.Allocation) {
			b.Job, b.JobID = a.Job, a.JobID
			a.Job.MaxDisruption = 2
		}, Budget{}, 2},
		{"min_runtime already served", func(a, b *api.Allocation) {
			b.Job.MinRuntime = 30 * time.Minute
		}, Budget{}, 2},
		{"same job, per-job budget 1", func(a, b *api.Allocation) {
			b.Job, b.JobID = a.Job, a.JobID
		}, Budget{}, 0},
		{"same job, max_disruption 2", func(a, b *api.Allocation) {
			b.Job, b.JobID = a.Job, a.JobID
			a.Job.Meta = map[string]string{MetaMaxDisruption: "2"}
		}, Budget{}, 2},
		{"queue budget 1", func(a, b *api.Allocation) {}, Budget{PerQueue: 1}, 0},
		{"system job", func(a, b *api.Allocation) { b.Job.Type = api.JobTypeSystem }, Budget{}, 0},
		{"statically ported", func(a, b *api.Allocation) {
			b.AllocatedResources.Shared.Networks = []*api.NetworkResource{{ReservedPorts: []api.Port{{Label: "http", Value: 8080}}}}
		}, Budget{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := alloc(job("a", api.JobTypeBatch), n1, 0, 1, 2, 3), alloc(job("b", api.JobTypeService), n1, 4, 5, 6, 7)
			c.setup(a, b)
			p := Compute(&Input{Nodes: []*api.Node{n1, n2, n3}, Allocs: []*api.Allocation{a, b},
				Pending: []*Pending{pendingGPU(train, 1, 8)}, Now: now, Budget: c.bud})
			if got := len(p.Moves); got != c.moves {
				t.Errorf("moves = %v, want %d", moveSummary(p), c.moves)
			}
			if c.moves == 0 && len(p.Unblocks) != 0 {
				t.Errorf("unblocks = %v with no moves", p.Unblocks)
			}
		})
	}
}

func TestPendingGangHelpedWholeOrNot(t *testing.T) {
	// Two 8-GPU nodes each half full: a gang of two 8-GPU members needs
	// both freed, and only one 4-GPU node can take a moved alloc.
	n1, n2, n3 := gpuNode("n1", 8), gpuNode("n2", 8), gpuNode("n3", 4)
	a, b := alloc(job("a", api.JobTypeBatch), n1, 0, 1, 2, 3), alloc(job("b", api.JobTypeBatch), n2, 0, 1, 2, 3)
	pg := pendingGPU(job("ddp", api.JobTypeBatch), 2, 8)
	pg.Gang = true
	p := Compute(&Input{Nodes: []*api.Node{n1, n2, n3}, Allocs: []*api.Allocation{a, b}, Pending: []*Pending{pg}, Now: now})
	if len(p.Moves) != 0 || len(p.Unblocks) != 0 {
		t.Errorf("plan = %v, want none: the gang cannot be placed whole", moveSummary(p))
	}
	n4 := gpuNode("n4", 4)
	p = Compute(&Input{Nodes: []*api.Node{n1, n2, n3, n4}, Allocs: []*api.Allocation{a, b}, Pending: []*Pending{pg}, Now: now})
	if len(p.Moves) != 2 || !slices.Equal(p.Unblocks, []string{"ddp.g"}) {
		t.Errorf("plan = %v unblocks %v, want 2 moves for ddp.g", moveSummary(p), p.Unblocks)
	}
}

// TestPlanProperties applies random clusters' plans and checks that
// every alloc is still placed exactly once, within its node's capacity,
// gangs moved whole, no alloc moved onto a freed node, budgets held.
func TestPlanProperties(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		var nodes []*api.Node
		for i := 0; i < 2+r.Intn(6); i++ {
			nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i), []int{2, 4, 8}[r.Intn(3)]))
		}
		var allocs []*api.Allocation
		var jobs []*api.Job
		for i := 0; i < 1+r.Intn(10); i++ {
			typ := []string{api.JobTypeBatch, api.JobTypeService, api.JobTypeSystem}[r.Intn(3)]
			j := job(fmt.Sprintf("j%d", i), typ)
			if r.Intn(3) == 0 {
				j.Meta = map[string]string{MetaMaxDisruption: fmt.Sprint(r.Intn(3))}
			}
			jobs = append(jobs, j)
			members := 1
			if r.Intn(4) == 0 {
				members = 2 + r.Intn(2)
			}
			want := []int{1, 2, 4}[r.Intn(3)]
			var gang []*api.Allocation
			for m := 0; m < members; m++ {
				n := nodes[r.Intn(len(nodes))]
				devs := freeOn(n, allocs, want)
				if devs == nil {
					continue
				}
				a := alloc(j, n, devs...)
				gang = append(gang, a)
				allocs = append(allocs, a)
			}
			if members > 1 {
				for k, a := range gang {
					a.Gang = &api.AllocGang{ID: "g", Size: len(gang), Rank: k}
				}
			}
		}
		var pend []*Pending
		for i := 0; i < 1+r.Intn(3); i++ {
			pe := pendingGPU(job(fmt.Sprintf("p%d", i), api.JobTypeBatch), 1+r.Intn(2), []int{2, 4, 8}[r.Intn(3)])
			pe.Gang = r.Intn(2) == 0
			pend = append(pend, pe)
		}
		in := &Input{Nodes: nodes, Allocs: allocs, Pending: pend, Now: now, Budget: Budget{PerQueue: r.Intn(4)}}
		p := Compute(in)
		checkApplied(t, seed, in, p)
		checkGangsWhole(t, p, allocs)
	}
}

// freeOn returns want free device indexes of n given allocs, or nil.
func freeOn(n *api.Node, allocs []*api.Allocation, want int) []int {
	used := map[string]bool{}
	for _, a := range allocs {
		if a.NodeID == n.ID {
			for _, t := range a.AllocatedResources.Tasks {
				for _, d := range t.Devices {
					for _, id := range d.DeviceIDs {
						used[id] = true
					}
				}
			}
		}
	}
	var got []int
	for i, inst := range n.NodeResources.Devices[0].Instances {
		if !used[inst.ID] {
			got = append(got, i)
			if len(got) == want {
				return got
			}
		}
	}
	return nil
}

// checkApplied replays the plan on fresh ledgers: every move's alloc
// leaves its node and fits on its destination, which is not a freed node;
// the number of placed allocs is unchanged; budgets hold.
func checkApplied(t *testing.T, seed int64, in *Input, p *Plan) {
	t.Helper()
	caps := map[string]*capacity.Node{}
	nodes := map[string]*api.Node{}
	for _, n := range in.Nodes {
		caps[n.ID], nodes[n.ID] = capacity.NewNode(n), n
	}
	where := map[string]string{}
	for _, a := range in.Allocs {
		v := capacity.AllocVector(a.AllocatedResources)
		caps[a.NodeID].Add(&v)
		where[a.ID] = a.NodeID
	}
	before := len(where)
	freed := map[string]bool{}
	for _, id := range p.Freed {
		freed[id] = true
	}
	perJob, perQueue := map[string]map[string]bool{}, map[string]int{}
	for _, m := range p.Moves {
		if where[m.Alloc.ID] != m.From {
			t.Fatalf("seed %d: %s moves from %s but is on %s", seed, m.Alloc.ID, m.From, where[m.Alloc.ID])
		}
		if freed[m.To] {
			t.Errorf("seed %d: %s moves onto freed node %s", seed, m.Alloc.ID, m.To)
		}
		if m.Alloc.Job.Type == api.JobTypeSystem {
			t.Errorf("seed %d: system alloc %s moved", seed, m.Alloc.ID)
		}
		v := capacity.AllocVector(m.Alloc.AllocatedResources)
		caps[m.From].Sub(&v)
		dst := caps[m.To]
		// The same amounts and device count on the destination.
		need := capacity.Vector{CPU: v.CPU, MemoryMB: v.MemoryMB}
		free := 0
		for _, inst := range nodes[m.To].NodeResources.Devices[0].Instances {
			if !dst.DeviceUsed(inst.ID) && len(need.Devices) < len(v.Devices) {
				need.Devices = append(need.Devices, inst.ID)
				free++
			}
		}
		if free < len(v.Devices) || dst.Fits(&need) != nil {
			t.Errorf("seed %d: %s does not fit on %s", seed, m.Alloc.ID, m.To)
		}
		dst.Add(&need)
		where[m.Alloc.ID] = m.To
		unit := m.Alloc.ID
		if m.Alloc.Gang != nil {
			unit = "gang"
		}
		if perJob[m.Alloc.JobID] == nil {
			perJob[m.Alloc.JobID] = map[string]bool{}
		}
		perJob[m.Alloc.JobID][unit] = true
		perQueue[api.JobQueue(m.Alloc.Job)]++
	}
	if len(where) != before {
		t.Errorf("seed %d: %d allocs placed after, %d before", seed, len(where), before)
	}
	for j, units := range perJob {
		b := 1
		for _, a := range in.Allocs {
			if a.JobID == j && a.Job.Meta[MetaMaxDisruption] != "" {
				fmt.Sscan(a.Job.Meta[MetaMaxDisruption], &b)
			}
		}
		if len(units) > b {
			t.Errorf("seed %d: job %s moved %d units, budget %d", seed, j, len(units), b)
		}
	}
	if b := in.Budget.PerQueue; b > 0 {
		for q, n := range perQueue {
			if n > b {
				t.Errorf("seed %d: queue %s moved %d, budget %d", seed, q, n, b)
			}
		}
	}
	for _, m := range p.Moves {
		if len(p.Unblocks) == 0 {
			t.Errorf("seed %d: move %s unblocks nothing", seed, m.Alloc.ID)
		}
	}
}
