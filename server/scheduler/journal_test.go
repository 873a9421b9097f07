package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// passState is everything rollback promises to restore.
type passState struct {
	nodes   map[string]nodeSnap
	stopped map[string]bool
	groups  map[string]groupSnap
}

type nodeSnap struct {
	cap      *capacity.Node
	allocs   []string
	jobTG    map[string]int
	jobTotal int
}

type groupSnap struct {
	skip   []bool
	start  int
	failed bool
	props  []map[string]int
	spread []map[string]int
}

func snapPass(s *pass) passState {
	ps := passState{nodes: map[string]nodeSnap{}, stopped: maps.Clone(s.led.stopped), groups: map[string]groupSnap{}}
	for _, ns := range s.led.nodes {
		var ids []string
		for _, a := range ns.allocs {
			ids = append(ids, a.ID)
		}
		var jobTG map[string]int // nil and empty count the same
		if len(ns.jobTG) > 0 {
			jobTG = maps.Clone(ns.jobTG)
		}
		ps.nodes[ns.node.ID] = nodeSnap{cap: ns.cap.Clone(), allocs: ids, jobTG: jobTG, jobTotal: ns.jobTotal}
	}
	for name, tc := range s.rk.groups {
		g := groupSnap{skip: slices.Clone(tc.skip), start: tc.start, failed: tc.failed}
		for _, p := range tc.props {
			g.props = append(g.props, maps.Clone(p.counts))
		}
		for _, sp := range tc.spreads {
			g.spread = append(g.spread, maps.Clone(sp.counts))
		}
		ps.groups[name] = g
	}
	return ps
}

// diffCluster builds a pass over a random cluster: nodes with small
// dynamic port ranges, cores and GPUs, live allocs of a low-priority job,
// and a job of two groups asking for ports, cores, devices, a spread and
// a distinct_property, so placements touch every part of node state.
func journalPass(t *testing.T, r *rand.Rand) *pass {
	t.Helper()
	st := newMemState()
	for i := range 3 + r.IntN(6) {
		n := testNode(fmt.Sprint(i), []string{"dc1", "dc2"}[i%2], int64(1000+r.IntN(4)*1000), int64(1024+r.IntN(4)*1024))
		n.NodeResources.Cpu.TotalCpuCores = 4
		n.NodeResources.MinDynamicPort, n.NodeResources.MaxDynamicPort = 20000, 20000+r.IntN(8)
		n.Attributes["rack"] = fmt.Sprint(r.IntN(3))
		if r.IntN(2) == 0 {
			n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
				Instances: []*api.NodeDevice{{ID: n.ID + "-g0", Healthy: true}, {ID: n.ID + "-g1", Healthy: true}}}}
		}
		st.addNode(n)
	}
	low := testJob("low", api.JobTypeService, 0, 100, 64)
	low.Priority = 10
	st.upsertJob(low)
	for i := range r.IntN(10) {
		n := st.nodes[r.IntN(len(st.nodes))]
		st.upsertAlloc(&api.Allocation{
			ID: fmt.Sprintf("low-%d", i), Namespace: api.DefaultNamespace, JobID: "low", Job: low, TaskGroup: "web",
			Name: api.AllocName("low", "web", i), NodeID: n.ID, DesiredStatus: api.AllocDesiredStatusRun,
			ClientStatus: api.AllocClientStatusRunning,
			AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
				"server": {Cpu: api.AllocatedCpuResources{CpuShares: int64(100 * r.IntN(5))},
					Memory: api.AllocatedMemoryResources{MemoryMB: 128}}},
				Shared: api.AllocatedSharedResources{Ports: []api.AllocatedPort{{Label: "p", Value: 20000 + r.IntN(4)}}}},
		})
	}
	job := testJob("j", api.JobTypeService, 4, 300, 256)
	job.Priority = 60
	job.Spreads = []*api.Spread{{Attribute: "${node.datacenter}", Weight: 50}}
	web := job.TaskGroups[0]
	web.Networks = []*api.NetworkResource{{ReservedPorts: []api.Port{{Label: "s", Value: 20001}}, DynamicPorts: []api.Port{{Label: "d"}}}}
	gpu := &api.TaskGroup{Name: "gpu", Count: 3, EphemeralDisk: &api.EphemeralDisk{SizeMB: 10},
		Constraints: []*api.Constraint{{LTarget: "${attr.rack}", Operand: api.ConstraintDistinctProperty, RTarget: "2"}},
		Tasks: []*api.Task{{Name: "t", Driver: "raw_exec", Resources: &api.Resources{Cores: 1, MemoryMB: 64,
			Devices: []*api.RequestedDevice{{Name: "gpu", Count: 1}}}}}}
	job.TaskGroups = append(job.TaskGroups, gpu)
	st.upsertJob(job)
	eval := testEval(job, 1)
	s := newPass(st, eval, Options{Now: testNow, Preemption: &PreemptionConfig{ServiceSchedulerEnabled: true}}, job)
	if err := s.loadNodes(); err != nil {
		t.Fatal(err)
	}
	for _, tg := range job.TaskGroups {
		s.rk.group(tg)
	}
	for _, ns := range s.led.nodes {
		s.led.load(ns) // rollback restores usage; loading is not undone (it is not a change)
	}
	return s
}

// Placing N allocs and rolling back leaves node usage exactly as before.
func TestCheckpointRollbackPlacements(t *testing.T) {
	s := journalPass(t, rand.New(rand.NewPCG(1, 2)))
	before := snapPass(s)
	cp := s.led.checkpoint()
	placed := 0
	for i := range 6 {
		if s.pl.placeKeep(&placement{tg: s.env.job.TaskGroups[i%2], index: i}) {
			placed++
		}
	}
	if placed == 0 {
		t.Fatal("nothing placed: the test places nothing to undo")
	}
	if reflect.DeepEqual(before, snapPass(s)) {
		t.Fatal("placements changed no node state")
	}
	s.led.rollback(cp)
	if after := snapPass(s); !reflect.DeepEqual(before, after) {
		t.Fatalf("after rollback of %d placements:\nbefore %+v\nafter  %+v", placed, before, after)
	}
	if len(s.led.undo) != 0 || s.led.undoDepth != 0 {
		t.Fatalf("journal left open: %d entries, depth %d", len(s.led.undo), s.led.undoDepth)
	}
}

// Random sequences of placements (with preemption), stops, nested
// checkpoints, releases and rollbacks: every rollback restores the state
// of its checkpoint, releases keep changes for the enclosing checkpoint.
func TestCheckpointRollbackRandomSequences(t *testing.T) {
	changed := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 99))
		s := journalPass(t, r)
		type open struct {
			cp   checkpoint
			snap passState
		}
		var stack []open
		for step := range 40 {
			switch op := r.IntN(10); {
			case op < 4:
				s.pl.placeKeep(&placement{tg: s.env.job.TaskGroups[r.IntN(2)], index: step})
			case op < 6:
				ns := s.led.nodes[r.IntN(len(s.led.nodes))]
				if len(ns.allocs) > 0 {
					s.pl.stop(ns.allocs[r.IntN(len(ns.allocs))], "test stop", "")
				}
			case op < 8:
				stack = append(stack, open{s.led.checkpoint(), snapPass(s)})
			case op == 8 && len(stack) > 0:
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if !reflect.DeepEqual(top.snap, snapPass(s)) {
					changed++
				}
				s.led.rollback(top.cp)
				if got := snapPass(s); !reflect.DeepEqual(top.snap, got) {
					t.Fatalf("seed %d step %d: rollback did not restore:\nwant %+v\ngot  %+v", seed, step, top.snap, got)
				}
			case op == 9 && len(stack) > 0:
				s.led.release(stack[len(stack)-1].cp)
				stack = stack[:len(stack)-1]
			}
		}
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			s.led.rollback(top.cp)
			if got := snapPass(s); !reflect.DeepEqual(top.snap, got) {
				t.Fatalf("seed %d: final rollback did not restore:\nwant %+v\ngot  %+v", seed, top.snap, got)
			}
		}
		if len(s.led.undo) != 0 || s.led.undoDepth != 0 {
			t.Fatalf("seed %d: journal left open: %d entries, depth %d", seed, len(s.led.undo), s.led.undoDepth)
		}
	}
	if changed < 100 {
		t.Fatalf("only %d rollbacks undid anything: the generator is too weak", changed)
	}
}

// Checkpoints must be closed innermost first.
func TestCheckpointOrder(t *testing.T) {
	s := journalPass(t, rand.New(rand.NewPCG(3, 4)))
	outer := s.led.checkpoint()
	s.led.checkpoint()
	defer func() {
		if recover() == nil {
			t.Fatal("closing the outer checkpoint first did not panic")
		}
	}()
	s.led.rollback(outer)
}
