package scheduler

import (
	"fmt"
	"math"
	"testing"

	"github.com/drover/drover/api"
)

// versionedMem is memState as a VersionedState: its allocs' version is
// the state index, which every write moves on.
type versionedMem struct{ *memState }

func (v versionedMem) NodeAllocsVersion(string) (any, error) { return v.index, nil }

// scarceCluster is twenty small nodes of two GPUs and one big node whose
// eight GPUs, CPU and memory are the only room for the workload's big
// shape; the frequent shape asks two GPUs, which every node holds.
func scarceCluster() (*memState, []WorkloadShape) {
	st := newMemState()
	flat := func(i, j int) int { return 2 }
	one := func(int) int { return 0 }
	for i := range 20 {
		n := gpuNode(fmt.Sprintf("small%02d", i), 81920, "8.0", flat, one)
		n.NodeResources.Cpu.CpuShares, n.NodeResources.Memory.MemoryMB = 32000, 65536
		n.NodeResources.Devices[0].Instances = n.NodeResources.Devices[0].Instances[:2]
		st.addNode(n)
	}
	big := gpuNode("big", 81920, "8.0", flat, one)
	big.NodeResources.Cpu.CpuShares, big.NodeResources.Memory.MemoryMB = 128000, 786432
	st.addNode(big)
	shapes := []WorkloadShape{
		{GPUs: 2, Milli: 1000, CPU: 4000, MemoryMB: 8192, Weight: 0.9},
		{GPUs: 8, Milli: 1000, CPU: 120000, MemoryMB: 737280, Weight: 0.1},
	}
	return st, shapes
}

// A one-GPU ask on a cluster whose only room for a rare big shape is one
// node: by frequency alone the big node's idle GPUs look least
// fragmented by it (a small node's last two GPUs are the frequent
// shape's room), so it lands there and the big shape has nowhere left;
// weighted by scarcity, the small ask goes to a small node. With a usage
// cache the weights come from the cache's entries and must agree.
func TestScarcityKeepsRareShapesRoom(t *testing.T) {
	for _, tt := range []struct {
		name     string
		exponent float64
		cache    bool
		wantBig  bool
	}{
		{"frequency only", 0, false, true},
		{"scarcity", 2, false, false},
		{"scarcity with usage cache", 2, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func(a float64) { ScarcityExponent = a }(ScarcityExponent)
			ScarcityExponent = tt.exponent
			st, shapes := scarceCluster()
			job := gpuJob("small", 1)
			st.upsertJob(job)
			opts := Options{Now: testNow, Workload: shapes}
			var view State = st
			if tt.cache {
				opts.Usage, view = NewUsageCache(), versionedMem{st}
			}
			for pass := range 2 { // the second pass reads the cache's entries
				res, err := Schedule(view, testEval(job, pass), opts)
				if err != nil {
					t.Fatal(err)
				}
				node := ""
				for _, l := range res.Plan.NodeAllocation {
					for _, a := range l {
						node = a.NodeName
					}
				}
				if node == "" {
					t.Fatalf("pass %d placed nothing", pass)
				}
				if (node == "big") != tt.wantBig {
					t.Errorf("pass %d: the one-GPU ask went to %s, want the big node %v", pass, node, tt.wantBig)
				}
			}
		})
	}
}

// The weights a pass computes from a usage cache's entries are the ones
// it computes reading every node itself, on a cluster partly used by
// whole and shared GPU asks, and the rarer a shape's room the more its
// weight grows.
func TestScarcityWeightsCachedAsRead(t *testing.T) {
	st, shapes := scarceCluster()
	shapes = append(shapes, WorkloadShape{GPUs: 1, Milli: 500, CPU: 1000, MemoryMB: 1024, Weight: 0.1})
	for i := range 12 {
		var job *api.Job
		if i%3 == 0 {
			job = shareJob(fmt.Sprintf("half%d", i), 1, &api.DeviceShare{Fraction: 0.5})
		} else {
			job = gpuJob(fmt.Sprintf("whole%d", i), 1)
		}
		if placeOne(t, st, job, i) == nil {
			t.Fatalf("job %d not placed", i)
		}
	}
	job := gpuJob("probe", 1)
	st.upsertJob(job)
	weigh := func(opts Options, view State) []WorkloadShape {
		p := newPass(view, testEval(job, 99), opts, job)
		if err := p.loadNodes(); err != nil {
			t.Fatal(err)
		}
		w, _ := p.led.scarcity(shapes)
		return w
	}
	read := weigh(Options{Now: testNow}, st)
	cache := NewUsageCache()
	for range 2 {
		cached := weigh(Options{Now: testNow, Usage: cache}, versionedMem{st})
		for i := range read {
			if math.Abs(read[i].Weight-cached[i].Weight) > 1e-12 {
				t.Fatalf("shape %d: weight %v from the cache, %v read", i, cached[i].Weight, read[i].Weight)
			}
		}
	}
	var sum float64
	for _, s := range read {
		sum += s.Weight
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("weights sum to %v, want 1", sum)
	}
	// The big shape (room on one node) gains on the frequent one (room
	// on every node).
	if before, after := shapes[1].Weight/shapes[0].Weight, read[1].Weight/read[0].Weight; after <= before {
		t.Errorf("big over frequent: %v after weighting, %v before", after, before)
	}
}

// A one-GPU ask next to a workload whose shape needs more CPU per GPU
// than a small node has: the big node's idle GPUs stay usable after it
// and the small node's do not, so fragmentation alone sends it to the big
// node, the only one a bigger ask could use whole; the fit term sends it
// to the small node, which it leaves the least free.
func TestFitTermKeepsBigNodesFree(t *testing.T) {
	for _, tt := range []struct {
		weight float64
		want   string
	}{{0, "big"}, {0.1, "small"}} {
		t.Run(fmt.Sprint(tt.weight), func(t *testing.T) {
			defer func(w, a float64) { FitWeight, ScarcityExponent = w, a }(FitWeight, ScarcityExponent)
			FitWeight, ScarcityExponent = tt.weight, 0
			st := newMemState()
			flat := func(i, j int) int { return 2 }
			one := func(int) int { return 0 }
			small := gpuNode("small", 81920, "8.0", flat, one)
			small.NodeResources.Cpu.CpuShares, small.NodeResources.Memory.MemoryMB = 32000, 65536
			big := gpuNode("big", 81920, "8.0", flat, one)
			big.NodeResources.Cpu.CpuShares, big.NodeResources.Memory.MemoryMB = 128000, 786432
			st.addNode(small)
			st.addNode(big)
			job := gpuJob("one", 1)
			st.upsertJob(job)
			shapes := []WorkloadShape{{GPUs: 1, Milli: 1000, CPU: 8000, MemoryMB: 8192, Weight: 1}}
			res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, Workload: shapes})
			if err != nil {
				t.Fatal(err)
			}
			node := ""
			for _, l := range res.Plan.NodeAllocation {
				for _, a := range l {
					node = a.NodeName
				}
			}
			if node != tt.want {
				t.Fatalf("fit weight %v: the one-GPU ask went to %q, want %q", tt.weight, node, tt.want)
			}
		})
	}
}
