package fairshare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/drover/drover/api"
)

func gpus(n int) *api.QueueResources { return &api.QueueResources{GPUs: float64(n)} }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestWeightsSplitUnboundedDemand(t *testing.T) {
	in := Input{
		Queues:   []*api.Queue{{Name: "a", Weight: 1}, {Name: "b", Weight: 2}, {Name: "c", Weight: 3}},
		Capacity: api.QueueResources{GPUs: 512, CPU: 1e6, MemoryMB: 1e7},
		Demand:   map[string]*api.QueueResources{"a": gpus(1000), "b": gpus(1000), "c": gpus(1000)},
	}
	s := Compute(Config{}, in)
	for q, want := range map[string]float64{"a": 512.0 / 6, "b": 1024.0 / 6, "c": 256} {
		got := s.nodes[q].share[dimGPU]
		if !near(got, want, 1e-6) {
			t.Errorf("%s: share %v GPUs, want %v", q, got, want)
		}
	}
}

func TestGuaranteeThenPriorityThenWeight(t *testing.T) {
	in := Input{
		Queues: []*api.Queue{
			{Name: "prod", Priority: 10, Guaranteed: gpus(8)},
			{Name: "dev", Guaranteed: gpus(16), Weight: 1},
			{Name: "research", Weight: 3},
		},
		Capacity: api.QueueResources{GPUs: 64},
		Demand:   map[string]*api.QueueResources{"prod": gpus(20), "dev": gpus(100), "research": gpus(100)},
	}
	s := Compute(Config{}, in)
	// prod: 8 guaranteed + 12 more first (priority); dev 16 guaranteed;
	// the 28 left: dev 7, research 21 (1:3).
	for q, want := range map[string]float64{"prod": 20, "dev": 23, "research": 21} {
		if got := s.Share(q).GPUs; got != want {
			t.Errorf("%s: share %v GPUs, want %v", q, got, want)
		}
	}
}

func TestDominantResourceFairness(t *testing.T) {
	// a asks GPU-heavy tasks, b CPU-heavy: DRF equalizes dominant shares.
	in := Input{
		Queues:   []*api.Queue{{Name: "a"}, {Name: "b"}},
		Capacity: api.QueueResources{GPUs: 10, CPU: 100},
		Demand: map[string]*api.QueueResources{
			"a": {GPUs: 100, CPU: 100},  // 1 GPU : 1 CPU
			"b": {GPUs: 100, CPU: 2000}, // 1 GPU : 20 CPU
		},
	}
	s := Compute(Config{}, in)
	_, fa := s.Level("a")
	_, fb := s.Level("b")
	if !near(fa, fb, 1e-9) {
		t.Errorf("dominant shares a=%v b=%v, want equal", fa, fb)
	}
	if !near(s.nodes["b"].share[dimCPU]+s.nodes["a"].share[dimCPU], 100, 1e-6) {
		t.Errorf("CPU not used up: %v", s.nodes["a"].share[dimCPU]+s.nodes["b"].share[dimCPU])
	}
}

func TestHierarchyAndLimits(t *testing.T) {
	in := Input{
		Queues: []*api.Queue{
			{Name: "team-a", Weight: 1, Limit: gpus(20)},
			{Name: "team-a/train", Parent: "team-a", Weight: 3},
			{Name: "team-a/infer", Parent: "team-a", Weight: 1},
			{Name: "team-b", Weight: 1},
		},
		Capacity: api.QueueResources{GPUs: 64},
		Demand: map[string]*api.QueueResources{
			"team-a/train": gpus(100), "team-a/infer": gpus(100), "team-b": gpus(30),
		},
	}
	s := Compute(Config{}, in)
	// team-a capped at 20 (15:5); team-b gets its 30; 14 stay idle (nobody
	// else may take them).
	for q, want := range map[string]float64{"team-a": 20, "team-a/train": 15, "team-a/infer": 5, "team-b": 30} {
		if got := s.Share(q).GPUs; got != want {
			t.Errorf("%s: share %v GPUs, want %v", q, got, want)
		}
	}
}

func TestBorrowIdleCapacity(t *testing.T) {
	in := Input{
		Queues:   []*api.Queue{{Name: "a", Guaranteed: gpus(32)}, {Name: "b", Guaranteed: gpus(32)}},
		Capacity: api.QueueResources{GPUs: 64},
		Demand:   map[string]*api.QueueResources{"a": gpus(64)},
	}
	s := Compute(Config{}, in)
	if got := s.Share("a").GPUs; got != 64 {
		t.Errorf("a borrows: share %v, want 64", got)
	}
	in.Demand["b"] = gpus(8)
	s = Compute(Config{}, in)
	if a, b := s.Share("a").GPUs, s.Share("b").GPUs; a != 56 || b != 8 {
		t.Errorf("b wants 8: shares a=%v b=%v, want 56 8", a, b)
	}
}

func TestHistoryCorrectsAndEntryPenalty(t *testing.T) {
	in := Input{
		Queues:   []*api.Queue{{Name: "a"}, {Name: "b"}},
		Capacity: api.QueueResources{GPUs: 100},
		Demand:   map[string]*api.QueueResources{"a": gpus(1000), "b": gpus(1000)},
		History:  &History{Level: map[string]float64{"a": 0.8, "b": 0.2}},
	}
	s := Compute(Config{}, in)
	a, b := s.nodes["a"].share[dimGPU], s.nodes["b"].share[dimGPU]
	if !(a < 50 && b > 50 && a > 40) {
		t.Errorf("a used more: shares a=%v b=%v, want a a little below 50", a, b)
	}
	// b is new (no history) while a ran everything: the default entry
	// penalty gives b no credit of its own (weight 1), only a's use
	// lowers a (to 0.75): b gets 1/1.75.
	in.History = &History{Level: map[string]float64{"a": 1}}
	s = Compute(Config{}, in)
	if b := s.nodes["b"].share[dimGPU]; !near(b, 100/1.75, 1e-6) {
		t.Errorf("new queue b: share %v, want %v", b, 100/1.75)
	}
	s = Compute(Config{EntryPenalty: -1}, in)
	if b := s.nodes["b"].share[dimGPU]; !near(b, 100*1.25/2, 1e-6) {
		t.Errorf("no entry penalty: share %v, want %v (idle credit)", b, 100*1.25/2)
	}
	s = Compute(Config{EntryPenalty: 2}, in)
	if b := s.nodes["b"].share[dimGPU]; !near(b, 50, 1e-6) {
		t.Errorf("entry penalty 2: share %v, want 50", b)
	}
}

func TestHistoryAdvanceDecays(t *testing.T) {
	cfg := Config{HalfLife: 10 * 60e9}
	var h *History
	t0 := testTime(0)
	h = h.Advance(cfg, t0, map[string]float64{"a": 1})
	h = h.Advance(cfg, testTime(10*60), map[string]float64{})
	if !near(h.Level["a"], 0.5, 1e-9) {
		t.Errorf("after one half-life idle: %v, want 0.5", h.Level["a"])
	}
	h = h.Advance(cfg, testTime(20*60), map[string]float64{"a": 1})
	if !near(h.Level["a"], 0.75, 1e-9) {
		t.Errorf("after one half-life at 1: %v, want 0.75", h.Level["a"])
	}
}

// randomInput builds a random tree (up to 3 levels), feasible nested
// guarantees, some limits (at or above the guarantee) and random demands
// over GPUs of two models, CPU and memory.
func randomInput(r *rand.Rand) Input {
	capy := api.QueueResources{GPUs: 64, GPUsByModel: map[string]float64{"nvidia/gpu/H100": 32, "nvidia/gpu/A100": 32},
		CPU: 100000, MemoryMB: 400000}
	in := Input{Capacity: capy, Demand: map[string]*api.QueueResources{}, Allocated: map[string]*api.QueueResources{}}
	var mk func(parent string, budget api.QueueResources, depth int)
	mk = func(parent string, budget api.QueueResources, depth int) {
		n := 1 + r.IntN(4)
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("q%d", i)
			if parent != "" {
				name = parent + "/" + name
			}
			q := &api.Queue{Name: name, Parent: parent, Weight: 1 + r.IntN(5)}
			if r.IntN(4) == 0 {
				q.Priority = r.IntN(3)
			}
			g := api.QueueResources{GPUs: float64(r.IntN(int(budget.GPUs)/n + 1)), CPU: r.Int64N(budget.CPU/int64(n) + 1),
				MemoryMB: r.Int64N(budget.MemoryMB/int64(n) + 1)}
			if r.IntN(3) > 0 {
				q.Guaranteed = &g
			} else {
				g = api.QueueResources{}
			}
			if r.IntN(3) == 0 {
				q.Limit = &api.QueueResources{GPUs: g.GPUs + float64(r.IntN(40)), CPU: g.CPU + r.Int64N(80000) + 1,
					MemoryMB: g.MemoryMB + r.Int64N(300000) + 1}
			}
			in.Queues = append(in.Queues, q)
			leaf := depth >= 2 || r.IntN(2) == 0
			if !leaf {
				mk(name, g, depth+1)
			}
			if leaf || r.IntN(3) == 0 {
				h, a := float64(r.IntN(40)), float64(r.IntN(40))
				if r.IntN(4) == 0 {
					h, a = 0, 0
				}
				in.Demand[name] = &api.QueueResources{GPUs: h + a, GPUsByModel: map[string]float64{"nvidia/gpu/H100": h, "nvidia/gpu/A100": a},
					CPU: r.Int64N(60000), MemoryMB: r.Int64N(250000)}
			}
		}
	}
	mk("", capy, 0)
	return in
}

// TestPropertyInvariants checks the invariants of the package doc over
// random trees and demands.
func TestPropertyInvariants(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 14))
		in := randomInput(r)
		if r.IntN(2) == 0 {
			in.History = &History{Level: map[string]float64{}}
			for _, q := range in.Queues {
				in.History.Level[q.Name] = r.Float64() * 0.5
			}
		}
		s := Compute(Config{}, in)
		sp := s.sp
		tol := func(d int) float64 { return 1e-6 * max(1, sp.cap[d]) }
		total := sp.zero()
		for _, name := range s.names {
			n := s.nodes[name]
			if n.parent.name == "" {
				total = total.add(n.share)
			}
			for d := range n.share {
				if n.share[d] > n.demand[d]+tol(d) {
					t.Fatalf("seed %d: %s dim %d: share %v above demand %v", seed, name, d, n.share[d], n.demand[d])
				}
				if g := min(n.guar[d], n.demand[d]); n.share[d] < g-tol(d) {
					t.Fatalf("seed %d: %s dim %d: share %v below min(guarantee, demand) %v", seed, name, d, n.share[d], g)
				}
			}
		}
		for d := range total {
			if total[d] > sp.cap[d]+tol(d) {
				t.Fatalf("seed %d: dim %d: shares %v exceed capacity %v", seed, d, total[d], sp.cap[d])
			}
		}
		// Work conservation: a queue wanting more is stopped by a full
		// resource it wants, or a full limit of itself or an ancestor.
		for _, n := range allLeaves(s) {
			var want []int
			for d := range n.share {
				if n.demand[d]-n.share[d] > tol(d) {
					want = append(want, d)
				}
			}
			if len(want) == 0 {
				continue
			}
			stopped := false
			for _, d := range want {
				if sp.cap[d]-total[d] <= tol(d) {
					stopped = true
				}
				for p := n; p != nil && p.name != ""; p = p.parent {
					if p.limit != nil && p.limit[d] <= sp.cap[d] && p.limit[d]-p.share[d] <= tol(d) {
						stopped = true
					}
				}
			}
			if !stopped {
				t.Fatalf("seed %d: %s wants more of dims %v with capacity idle (share %v, demand %v, used %v)",
					seed, n.name, want, n.share, n.demand, total)
			}
		}
		// Deterministic.
		again := Compute(Config{}, in)
		for _, name := range s.names {
			if fmt.Sprint(s.nodes[name].share) != fmt.Sprint(again.nodes[name].share) {
				t.Fatalf("seed %d: %s: shares differ between runs", seed, name)
			}
		}
	}
}

func allLeaves(s *Shares) []*qnode {
	var out []*qnode
	var walk func(n *qnode)
	walk = func(n *qnode) {
		if len(n.children) == 0 {
			out = append(out, n)
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	for _, name := range s.names {
		if n := s.nodes[name]; n.parent.name == "" {
			walk(n)
		}
	}
	return out
}

// TestPropertyWeightsUnbounded: siblings with unbounded demand and no
// guarantees or history get shares in proportion to their weights.
func TestPropertyWeightsUnbounded(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 15))
		in := Input{Capacity: api.QueueResources{GPUs: 64 * 8, CPU: 1e6, MemoryMB: 1e7}, Demand: map[string]*api.QueueResources{}}
		n := 2 + r.IntN(6)
		wsum := 0
		for i := 0; i < n; i++ {
			q := &api.Queue{Name: fmt.Sprintf("q%d", i), Weight: 1 + r.IntN(9)}
			wsum += q.Weight
			in.Queues = append(in.Queues, q)
			in.Demand[q.Name] = &api.QueueResources{GPUs: 10000, CPU: r.Int64N(1000), MemoryMB: r.Int64N(1000)}
		}
		s := Compute(Config{}, in)
		for _, q := range in.Queues {
			want := 512 * float64(q.Weight) / float64(wsum)
			if got := s.nodes[q.Name].share[dimGPU]; math.Abs(got-want) > 0.01*want {
				t.Fatalf("seed %d: %s (weight %d): %v GPUs, want %v", seed, q.Name, q.Weight, got, want)
			}
		}
	}
}

func TestQueueWithOwnJobsAndChildren(t *testing.T) {
	in := Input{
		Queues:   []*api.Queue{{Name: "team", Weight: 1}, {Name: "team/x", Weight: 3}, {Name: "other"}},
		Capacity: api.QueueResources{GPUs: 64},
		Demand: map[string]*api.QueueResources{
			"team": gpus(100), "team/x": gpus(100), "other": gpus(100),
		},
		Allocated: map[string]*api.QueueResources{"team": gpus(10), "team/x": gpus(20)},
	}
	s := Compute(Config{}, in)
	// team and other split 32:32; inside team its own jobs (weight 1) and
	// team/x (weight 3) split 8:24.
	for q, want := range map[string]float64{"team": 32, "team/x": 24, "other": 32} {
		if got := s.Share(q).GPUs; got != want {
			t.Errorf("%s: share %v GPUs, want %v", q, got, want)
		}
	}
	alloc, fair := s.Level("team")
	if !near(alloc, 10.0/64, 1e-9) || !near(fair, 8.0/64, 1e-9) {
		t.Errorf("team's own jobs: level %v of %v, want 10/64 of 8/64", alloc, fair)
	}
	if d := s.Deficit("team/x"); !near(d, 4.0/64, 1e-9) {
		t.Errorf("team/x deficit %v, want 4/64", d)
	}
}
