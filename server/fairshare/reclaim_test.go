package fairshare

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/drover/drover/api"
)

type simAlloc struct {
	id    int
	queue string
	gpus  int
}

// TestPropertyReclaimNeverLoops runs random workloads (queues with random
// weights and guarantees, unbounded demand of 1-8 GPU jobs, everything
// first held by arbitrary queues) through repeated rounds in which every
// queue below its share tries to place its next job, reclaiming from
// queues above theirs through Tally.Reclaim. Every reclaim must lower Φ,
// no queue may reclaim from a queue that reclaimed from it, no victim
// queue may drop below its share, and the rounds must converge (a round
// with no reclaim).
func TestPropertyReclaimNeverLoops(t *testing.T) {
	total := 0
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 16))
		const capGPUs = 64
		n := 2 + r.IntN(4)
		in := Input{Capacity: api.QueueResources{GPUs: capGPUs}, Demand: map[string]*api.QueueResources{},
			Allocated: map[string]*api.QueueResources{}}
		var names []string
		guar := capGPUs / 2
		for i := 0; i < n; i++ {
			q := &api.Queue{Name: fmt.Sprintf("q%d", i), Weight: 1 + r.IntN(4)}
			if g := r.IntN(guar/n + 1); g > 0 {
				q.Guaranteed = gpus(g)
			}
			in.Queues = append(in.Queues, q)
			names = append(names, q.Name)
			in.Demand[q.Name] = gpus(1000)
		}
		// Fill the cluster with arbitrary queues' jobs.
		var live []simAlloc
		free, id := capGPUs, 0
		held := map[string]int{}
		for free > 0 {
			k := min(1+r.IntN(8), free)
			q := names[r.IntN(min(2, n))] // skewed: the first two hold most
			live = append(live, simAlloc{id: id, queue: q, gpus: k})
			id++
			free -= k
			held[q] += k
		}
		for q, k := range held {
			in.Allocated[q] = gpus(k)
		}
		s := Compute(Config{}, in)
		tally := s.Tally()
		reclaimed := map[[2]string]bool{} // (from, to)
		quiet := false
		for round := 0; round < 200 && !quiet; round++ {
			quiet = true
			for _, q := range names {
				if !tally.Below(q) {
					continue
				}
				ask := 1 + r.IntN(8)
				if ask <= free {
					live = append(live, simAlloc{id: id, queue: q, gpus: ask})
					id++
					free -= ask
					tally.Add(q, gpus(ask))
					continue
				}
				// Victims: allocs of queues above their share, smallest first.
				var cands []int
				for i, a := range live {
					if a.queue != q && tally.Above(a.queue) {
						cands = append(cands, i)
					}
				}
				sort.SliceStable(cands, func(i, j int) bool { return live[cands[i]].gpus < live[cands[j]].gpus })
				victims := map[string]*api.QueueResources{}
				var chosen []int
				got := free
				for _, i := range cands {
					if got >= ask {
						break
					}
					a := live[i]
					prev := 0
					if v := victims[a.queue]; v != nil {
						prev = int(v.GPUs)
					}
					victims[a.queue] = gpus(prev + a.gpus)
					chosen = append(chosen, i)
					got += a.gpus
				}
				if got < ask || !tally.Reclaim(q, gpus(ask), victims) {
					continue
				}
				before := tally.phi(tally.alloc)
				for from, v := range victims {
					tally.Sub(from, v)
					if reclaimed[[2]string{q, from}] {
						t.Fatalf("seed %d: %s reclaims from %s, which reclaimed from it before", seed, q, from)
					}
					reclaimed[[2]string{from, q}] = true
					if tally.Below(from) {
						t.Fatalf("seed %d: victim queue %s dropped below its share", seed, from)
					}
				}
				tally.Add(q, gpus(ask))
				if after := tally.phi(tally.alloc); after >= before {
					t.Fatalf("seed %d: reclaim by %s: Φ %v -> %v, want a decrease", seed, q, before, after)
				}
				sort.Sort(sort.Reverse(sort.IntSlice(chosen)))
				for _, i := range chosen {
					free += live[i].gpus
					live = append(live[:i], live[i+1:]...)
				}
				free -= ask
				live = append(live, simAlloc{id: id, queue: q, gpus: ask})
				id++
				quiet = false
				total++
			}
		}
		if !quiet {
			t.Fatalf("seed %d: reclaims did not converge in 200 rounds", seed)
		}
	}
	if total < 200 {
		t.Errorf("only %d reclaims over all seeds: the workload does not exercise reclaim", total)
	}
	t.Logf("%d reclaims", total)
}
