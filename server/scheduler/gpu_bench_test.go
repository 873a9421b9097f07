package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/drover/drover/api"
)

// GPU placement quality: fragmentation of whole 8-GPU nodes under churn,
// and how often multi-GPU allocs get a fully NVLinked set (or one CPU
// socket). The figures come from Schedule on a memState, one batch job
// of one alloc per ask, each plan committed before the next ask.

// nvswitchNode is a DGX H100/A100-like node (agent/fingerprint/nvidia
// shapes): 8 GPUs all NVLinked through NVSwitches, GPUs 0-3 on NUMA node
// 0 (CPU socket 0) and 4-7 on NUMA node 1.
func nvswitchNode(name string) *api.Node {
	return gpuNode(name, 81920, "9.0", func(i, j int) int { return 0 }, func(i int) int { return i / 4 })
}

// quadNode has two NVLink quads, {0,2,4,6} and {1,3,5,7} (interleaved
// with the IDs, as on boards whose bus order alternates the two NVLink
// domains); other pairs go over the PCIe host bridge (same NUMA node,
// GPUs 0-3 and 4-7) or the system interconnect.
func quadNode(name string) *api.Node {
	numa := func(i int) int { return i / 4 }
	return gpuNode(name, 81920, "9.0", func(i, j int) int {
		switch {
		case i%2 == j%2:
			return 0
		case numa(i) == numa(j):
			return 2
		}
		return 3
	}, numa)
}

// gpuPacker is what the churn driver places asks with: the scheduler or
// an oracle.
type gpuPacker interface {
	place(k int) bool // place an ask of k GPUs; false when it fits nowhere
	depart(i int)     // remove the i-th live alloc
	live() int        // live allocs
	free() []int      // free GPUs per node
}

// schedPacker places through Schedule on a memState.
type schedPacker struct {
	tb     testing.TB
	st     *memState
	nodes  map[string]*api.Node
	allocs []*api.Allocation
	used   map[string]int // GPUs used per node
	seq    int
}

func newSchedPacker(tb testing.TB, n int, shape func(string) *api.Node) *schedPacker {
	p := &schedPacker{tb: tb, st: newMemState(), nodes: map[string]*api.Node{}, used: map[string]int{}}
	for i := 0; i < n; i++ {
		node := shape(fmt.Sprintf("%d", i))
		p.st.addNode(node)
		p.nodes[node.ID] = node
	}
	return p
}

// placeAlloc schedules a one-alloc batch job asking k GPUs and commits
// the plan; it returns the alloc (nil when unplaced).
func (p *schedPacker) placeAlloc(k int) *api.Allocation {
	p.seq++
	job := gpuJob(fmt.Sprintf("g%05d", p.seq), uint64(k))
	p.st.upsertJob(job)
	res, err := Schedule(p.st, testEval(job, p.seq), Options{Now: testNow})
	if err != nil {
		p.tb.Fatal(err)
	}
	p.st.apply(res.Plan)
	for _, l := range res.Plan.NodeAllocation {
		for _, a := range l {
			p.allocs = append(p.allocs, a)
			p.used[a.NodeID] += len(allocGPUs(a))
			return a
		}
	}
	return nil
}

func (p *schedPacker) place(k int) bool { return p.placeAlloc(k) != nil }
func (p *schedPacker) live() int        { return len(p.allocs) }

func (p *schedPacker) depart(i int) {
	c := p.allocs[i].Copy()
	p.used[c.NodeID] -= len(allocGPUs(c))
	c.ClientStatus = api.AllocClientStatusComplete
	p.st.upsertAlloc(c)
	p.allocs[i] = p.allocs[len(p.allocs)-1]
	p.allocs = p.allocs[:len(p.allocs)-1]
}

func (p *schedPacker) free() []int {
	out := make([]int, 0, len(p.st.nodes))
	for _, n := range p.st.nodes {
		out = append(out, 8-p.used[n.ID])
	}
	return out
}

func allocGPUs(a *api.Allocation) []string {
	var ids []string
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			ids = append(ids, d.DeviceIDs...)
		}
	}
	return ids
}

// bestFitPacker is the oracle: an ask goes to the node with the fewest
// free GPUs that holds it (the first such node on ties).
type bestFitPacker struct {
	freeN  []int
	allocs [][2]int // node, size
}

func newBestFitPacker(n int) *bestFitPacker {
	p := &bestFitPacker{freeN: make([]int, n)}
	for i := range p.freeN {
		p.freeN[i] = 8
	}
	return p
}

func (p *bestFitPacker) place(k int) bool {
	best := -1
	for i, f := range p.freeN {
		if f >= k && (best < 0 || f < p.freeN[best]) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	p.freeN[best] -= k
	p.allocs = append(p.allocs, [2]int{best, k})
	return true
}

func (p *bestFitPacker) depart(i int) {
	p.freeN[p.allocs[i][0]] += p.allocs[i][1]
	p.allocs[i] = p.allocs[len(p.allocs)-1]
	p.allocs = p.allocs[:len(p.allocs)-1]
}
func (p *bestFitPacker) live() int   { return len(p.allocs) }
func (p *bestFitPacker) free() []int { return p.freeN }

// churnStream fills the cluster of nodes x 8 GPUs to pct% GPU usage with
// asks of 1, 2, 4 or 8 GPUs (uniform, seeded), then churn times removes
// a random live alloc and refills to pct%. An ask that fits nowhere is
// dropped (counted in the result) and ends that fill. After every
// sampleEvery churn steps (and at the end) it calls sample.
func churnStream(p gpuPacker, nodes, pct, churn int, seed uint64, sampleEvery int, sample func()) (failed int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	target := nodes * 8 * pct / 100
	used := func() int {
		u := 0
		for _, f := range p.free() {
			u += 8 - f
		}
		return u
	}
	sizes := []int{1, 2, 4, 8}
	fill := func() {
		for used() < target {
			if !p.place(sizes[r.IntN(len(sizes))]) {
				failed++
				return
			}
		}
	}
	fill()
	for i := 1; i <= churn && p.live() > 0; i++ {
		p.depart(r.IntN(p.live()))
		fill()
		if sample != nil && (i%sampleEvery == 0 || i == churn) {
			sample()
		}
	}
	return failed
}

// fragRun runs churnStream on p and returns the mean of wholeFreePct
// over its samples, the final wholeFreePct and the asks dropped.
func fragRun(p gpuPacker, nodes, churn int, seed uint64) (mean, final float64, failed int) {
	var sum float64
	n := 0
	failed = churnStream(p, nodes, 70, churn, seed, 100, func() {
		final = wholeFreePct(p.free())
		sum += final
		n++
	})
	return sum / float64(max(n, 1)), final, failed
}

// wholeFreePct is whole free nodes as a percentage of the ideal, where
// the ideal is floor(free GPUs / 8): the most 8-GPU nodes the free GPUs
// could make up if they were perfectly packed. 100 when the ideal is 0.
func wholeFreePct(free []int) float64 {
	whole, sum := 0, 0
	for _, f := range free {
		sum += f
		if f == 8 {
			whole++
		}
	}
	if sum/8 == 0 {
		return 100
	}
	return 100 * float64(whole) / float64(sum/8)
}

// BenchmarkGPUFragmentation: 500 nodes x 8 GPUs (NVSwitch, two sockets),
// a seeded stream of 1/2/4/8-GPU asks to 70% GPU usage, then 2,000
// random departures each followed by refills to 70%. "whole-free-%" is
// whole free nodes as a percentage of floor(free GPUs / 8) (see
// wholeFreePct; target >= 97), averaged over samples after every 100
// departures (20 samples: one snapshot swings by several points with the
// stream); "final-whole-free-%" is the last sample. The "oracle-" figures
// are a best-fit packer's (fewest free GPUs first) on the same stream.
func BenchmarkGPUFragmentation(b *testing.B) {
	var mean, final float64
	var failed int
	for i := 0; i < b.N; i++ {
		mean, final, failed = fragRun(newSchedPacker(b, 500, nvswitchNode), 500, 2000, 1)
	}
	b.StopTimer()
	omean, ofinal, _ := fragRun(newBestFitPacker(500), 500, 2000, 1)
	b.ReportMetric(mean, "whole-free-%")
	b.ReportMetric(final, "final-whole-free-%")
	b.ReportMetric(omean, "oracle-whole-free-%")
	b.ReportMetric(ofinal, "oracle-final-whole-free-%")
	b.ReportMetric(float64(failed), "unplaced")
}

// nvlinkStats counts multi-GPU allocs with every pair of their GPUs
// NVLinked, and 4-GPU allocs on one NUMA node (CPU socket).
type nvlinkStats struct{ multi, linked, quads, oneSocket int }

func (s *nvlinkStats) add(n *api.Node, ids []string) {
	if len(ids) < 2 {
		return
	}
	byID := map[string]*api.NodeDevice{}
	for _, d := range n.NodeResources.Devices[0].Instances {
		byID[d.ID] = d
	}
	s.multi++
	linked := true
	numas := map[int]bool{}
	for i, a := range ids {
		numas[numaOf(byID[a])] = true
		for _, b := range ids[i+1:] {
			if linkLevel(byID[a], byID[b]) != 0 {
				linked = false
			}
		}
	}
	if linked {
		s.linked++
	}
	if len(ids) == 4 {
		s.quads++
		if len(numas) == 1 {
			s.oneSocket++
		}
	}
}

func pctOf(a, b int) float64 {
	if b == 0 {
		return 100
	}
	return 100 * float64(a) / float64(b)
}

// nvlinkRun places asks from next on nodes x shape nodes: while GPU usage
// is below hi% it places, else it removes a random live alloc (steps
// places and removals in all; 0: no removals, stop at hi% or at the
// first ask that fits nowhere). It returns the stats of every placed
// alloc.
func nvlinkRun(tb testing.TB, shape func(string) *api.Node, nodes, hi, steps int, next func(*rand.Rand) int) nvlinkStats {
	p := newSchedPacker(tb, nodes, shape)
	r := rand.New(rand.NewPCG(3, 4))
	var st nvlinkStats
	used := 0
	for i := 0; i < steps || (steps == 0 && used < nodes*8*hi/100); i++ {
		if used >= nodes*8*hi/100 {
			if steps == 0 {
				break
			}
			j := r.IntN(p.live())
			used -= len(allocGPUs(p.allocs[j]))
			p.depart(j)
			continue
		}
		k := next(r)
		a := p.placeAlloc(k)
		if a == nil {
			if steps == 0 {
				break // filled up
			}
			continue
		}
		used += k
		st.add(p.nodes[a.NodeID], allocGPUs(a))
	}
	return st
}

// seq214 cycles through asks of 2, 1 and 4 GPUs.
func seq214() func(*rand.Rand) int {
	i := 0
	return func(*rand.Rand) int { i++; return []int{2, 1, 4}[(i-1)%3] }
}

func random124(r *rand.Rand) int { return []int{1, 2, 4}[r.IntN(3)] }

// BenchmarkGPUNVLinkShare reports the share of multi-GPU allocs whose
// GPUs are all NVLinked on quad nodes ("nvlinked-%", target 100 where an
// island-aware packer achieves it) for the 2,1,4 sequence until 8 nodes
// are full ("seq214-") and for a random 1/2/4 stream with churn at 90%
// GPU usage on 16 nodes ("random-"), and the share of 4-GPU allocs
// within one CPU socket on 16 NVSwitch nodes with the same stream
// ("one-socket-%"). The "small-" figures are the random stream on 4
// nodes at 85%, where a pick must make do with fewer choices.
func BenchmarkGPUNVLinkShare(b *testing.B) {
	var seq, rnd, sock, rnd4, sock4 nvlinkStats
	for i := 0; i < b.N; i++ {
		seq = nvlinkRun(b, quadNode, 8, 100, 0, seq214())
		rnd = nvlinkRun(b, quadNode, 16, 90, 2000, random124)
		sock = nvlinkRun(b, nvswitchNode, 16, 90, 2000, random124)
		rnd4 = nvlinkRun(b, quadNode, 4, 85, 2000, random124)
		sock4 = nvlinkRun(b, nvswitchNode, 4, 85, 2000, random124)
	}
	b.ReportMetric(pctOf(seq.linked, seq.multi), "seq214-nvlinked-%")
	b.ReportMetric(pctOf(rnd.linked, rnd.multi), "random-nvlinked-%")
	b.ReportMetric(pctOf(sock.oneSocket, sock.quads), "one-socket-%")
	b.ReportMetric(pctOf(rnd4.linked, rnd4.multi), "small-nvlinked-%")
	b.ReportMetric(pctOf(sock4.oneSocket, sock4.quads), "small-one-socket-%")
}

// TestGPUFragmentationBestFit guards what BenchmarkGPUFragmentation
// measures on a smaller cluster (300 nodes, 1,000 departures, two seeds):
// the scheduler keeps at least as many whole free nodes as the best-fit
// oracle, on average over the samples, and drops no ask. (With a fixed
// 32-node sample it kept 90.6% and 92.0% of the ideal where best-fit
// keeps 91.7% and 94.2%.)
func TestGPUFragmentationBestFit(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		mean, _, failed := fragRun(newSchedPacker(t, 300, nvswitchNode), 300, 1000, seed)
		omean, _, _ := fragRun(newBestFitPacker(300), 300, 1000, seed)
		if failed > 0 {
			t.Fatalf("seed %d: %d asks unplaced at 70%% usage", seed, failed)
		}
		if mean < omean {
			t.Errorf("seed %d: whole free nodes %.1f%% of ideal, best-fit oracle %.1f%%", seed, mean, omean)
		}
	}
}

// TestGPUNVLinkShare guards BenchmarkGPUNVLinkShare where an island-aware
// packer gets every alloc its best interconnect: the 2,1,4 sequence on 8
// quad nodes until full, and the random 1/2/4 stream with churn on 16
// nodes at 80% (quad nodes: every multi-GPU alloc NVLinked; NVSwitch
// nodes: every 4-GPU alloc within one socket). Before island-aware picks
// these were 94%, 99.7% and 80%.
func TestGPUNVLinkShare(t *testing.T) {
	if s := nvlinkRun(t, quadNode, 8, 100, 0, seq214()); s.linked != s.multi || s.multi < 18 {
		t.Errorf("2,1,4 sequence: %d of %d multi-GPU allocs NVLinked, want all", s.linked, s.multi)
	}
	if s := nvlinkRun(t, quadNode, 16, 80, 2000, random124); s.linked != s.multi {
		t.Errorf("random stream: %d of %d multi-GPU allocs NVLinked, want all", s.linked, s.multi)
	}
	if s := nvlinkRun(t, nvswitchNode, 16, 80, 2000, random124); s.oneSocket != s.quads {
		t.Errorf("random stream: %d of %d 4-GPU allocs within one socket, want all", s.oneSocket, s.quads)
	}
}

// TestGPUBatchPacksNodes: 1,000 single-GPU batch allocs on 200 8-GPU
// nodes fill the minimum, 125 nodes (job anti-affinity and a 32-node
// sample used to spread them over 153).
func TestGPUBatchPacksNodes(t *testing.T) {
	st := newMemState()
	for i := 0; i < 200; i++ {
		st.addNode(nvswitchNode(fmt.Sprintf("%d", i)))
	}
	job := gpuJob("batch", 1)
	job.TaskGroups[0].Count = 1000
	st.upsertJob(job)
	res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, l := range res.Plan.NodeAllocation {
		placed += len(l)
	}
	if placed != 1000 || len(res.Plan.NodeAllocation) != 125 {
		t.Fatalf("placed %d allocs on %d nodes, want 1000 on 125", placed, len(res.Plan.NodeAllocation))
	}
}

// BenchmarkGPUBatch1000 places a 1,000-alloc batch job of one GPU each on
// 1,000 8-GPU nodes (the cost of device node choice: the per-pass index
// loads every GPU node once), reporting placements/s and nodes used.
func BenchmarkGPUBatch1000(b *testing.B) {
	st := newMemState()
	for i := 0; i < 1000; i++ {
		st.addNode(nvswitchNode(fmt.Sprintf("%d", i)))
	}
	job := gpuJob("batch", 1)
	job.TaskGroups[0].Count = 1000
	st.upsertJob(job)
	benchPasses(b, st, job, 1000)
}
