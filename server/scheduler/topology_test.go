package scheduler

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// rackCluster builds 8-GPU nodes in racks of the given sizes (rack ""
// for nodes without the meta); busy[i] nodes of rack i have a GPU taken,
// so an 8-GPU member no longer fits there.
func rackCluster(sizes []int, busy []int, bare int) *memState {
	st := newMemState()
	k := 0
	squat := testJob("squat", api.JobTypeBatch, 0, 0, 0)
	squat.Namespace = api.DefaultNamespace
	for r, size := range sizes {
		for i := 0; i < size; i++ {
			n := gangGPUNode(fmt.Sprintf("r%dn%d", r, i), 8)
			n.Meta["topology.rack"] = fmt.Sprintf("rack%d", r)
			st.addNode(n)
			if i < busy[r] {
				st.upsertAlloc(&api.Allocation{ID: fmt.Sprintf("squat-%d", k), Namespace: api.DefaultNamespace, JobID: "squat", Job: squat,
					TaskGroup: "web", Name: "squat.web[0]", NodeID: n.ID, DesiredStatus: api.AllocDesiredStatusRun,
					ClientStatus: api.AllocClientStatusRunning, AllocatedResources: &api.AllocatedResources{
						Tasks: map[string]*api.AllocatedTaskResources{"t": {Devices: []*api.AllocatedDeviceResource{{
							Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{n.Name + "-GPU-0"}}}}}}})
				k++
			}
		}
	}
	for i := 0; i < bare; i++ {
		st.addNode(gangGPUNode(fmt.Sprintf("bare%d", i), 8))
	}
	return st
}

func racksUsed(st *memState, allocs []*api.Allocation) map[string]int {
	out := map[string]int{}
	for _, a := range allocs {
		n, _ := st.NodeByID(a.NodeID)
		out[n.Meta["topology.rack"]]++
	}
	return out
}

func topoJob(id string, count int, mode string) *api.Job {
	j := gangJob(id, count, 8, 0)
	j.TaskGroups[0].Gang.Topology = &api.Topology{Level: "rack", Mode: mode}
	return j
}

func TestGangTopologyBestFit(t *testing.T) {
	st := rackCluster([]int{4, 8, 2}, []int{0, 0, 0}, 3)
	cases := []struct {
		count int
		mode  string
		want  map[string]int // rack -> members; nil: nothing placed
	}{
		{2, api.TopologyRequired, map[string]int{"rack2": 2}},
		{3, api.TopologyRequired, map[string]int{"rack0": 3}},
		{6, api.TopologyPreferred, map[string]int{"rack1": 6}},
		{9, api.TopologyRequired, nil},
		{10, api.TopologyPreferred, map[string]int{"rack1": 0, "rack0": 0}}, // two racks, any split
	}
	for i, c := range cases {
		job := topoJob(fmt.Sprint("j", i), c.count, c.mode)
		st.upsertJob(job)
		res := schedule(t, st, job, i, Options{})
		got := placedOf(res.Plan, job.ID)
		if c.want == nil {
			if len(got) != 0 {
				t.Fatalf("case %d: %d placed, want none", i, len(got))
			}
			if m := res.Eval.FailedTGAllocs["train"]; m == nil || !strings.Contains(m.GangFailure, "no rack domain has room") {
				t.Fatalf("case %d: failure %+v", i, m)
			}
			continue
		}
		used := racksUsed(st, got)
		same := len(used) == len(c.want)
		for rack, n := range c.want {
			if m, ok := used[rack]; !ok || n > 0 && m != n {
				same = false
			}
		}
		if len(got) != c.count || !same {
			t.Fatalf("case %d (%d %s): racks %v, want %v", i, c.count, c.mode, used, c.want)
		}
	}
	// Preferred spills onto nodes without the level when racks are short.
	job := topoJob("spill", 16, api.TopologyPreferred)
	st.upsertJob(job)
	if got := placedOf(schedule(t, st, job, 10, Options{}).Plan, "spill"); len(got) != 16 {
		t.Fatalf("preferred spill: %d placed, want 16", len(got))
	}
}

// Random racks and busy nodes: a required gang lands in the fullest rack
// that still holds it (or nowhere), a preferred one in the fewest racks
// (or anywhere when the racks together are short).
func TestGangTopologyRandom(t *testing.T) {
	for seed := range 200 {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		nr := 1 + r.IntN(5)
		sizes, busy := make([]int, nr), make([]int, nr)
		free := make([]int, nr)
		total := 0
		for i := range sizes {
			sizes[i] = 1 + r.IntN(8)
			busy[i] = r.IntN(sizes[i] + 1)
			free[i] = sizes[i] - busy[i]
			total += free[i]
		}
		bare := r.IntN(3)
		st := rackCluster(sizes, busy, bare)
		count := 1 + r.IntN(10)
		mode := []string{api.TopologyRequired, api.TopologyPreferred}[r.IntN(2)]
		job := topoJob("t", count, mode)
		st.upsertJob(job)
		got := placedOf(schedule(t, st, job, seed, Options{}).Plan, "t")
		used := racksUsed(st, got)
		best := -1 // the smallest free count >= count
		for _, f := range free {
			if f >= count && (best < 0 || f < best) {
				best = f
			}
		}
		desc := fmt.Sprintf("seed %d: racks free %v, bare %d, gang %d %s: placed %v", seed, free, bare, count, mode, used)
		switch {
		case best >= 0:
			if len(got) != count || len(used) != 1 {
				t.Fatalf("%s: want one rack", desc)
			}
			for rack := range used {
				var i int
				fmt.Sscanf(rack, "rack%d", &i)
				if free[i] != best {
					t.Fatalf("%s: want a rack with %d free (best fit)", desc, best)
				}
			}
		case mode == api.TopologyRequired:
			if len(got) != 0 {
				t.Fatalf("%s: want nothing", desc)
			}
		case total >= count:
			sorted := append([]int(nil), free...)
			sort.Sort(sort.Reverse(sort.IntSlice(sorted)))
			need, sum := 0, 0
			for _, f := range sorted {
				if sum >= count {
					break
				}
				sum += f
				need++
			}
			if len(got) != count || len(used) != need || used[""] != 0 {
				t.Fatalf("%s: want %d racks, no bare nodes", desc, need)
			}
		case total+bare >= count:
			if len(got) != count {
				t.Fatalf("%s: want placed anywhere", desc)
			}
		default:
			if len(got) != 0 {
				t.Fatalf("%s: want nothing (too few nodes)", desc)
			}
		}
	}
}
