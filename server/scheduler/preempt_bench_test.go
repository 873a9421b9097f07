package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// preemptCluster is benchCluster with every node full of priority 20
// work: four 3,500 MHz allocs per node, of lone jobs or, with gangs, of
// 8-member gangs spread over 8 nodes.
func preemptCluster(b *testing.B, gangs bool) *memState {
	st := benchCluster(b)
	var job *api.Job
	for i, n := range st.nodes {
		for k := 0; k < 4; k++ {
			slot := i*4 + k
			if !gangs || slot%8 == 0 {
				if gangs {
					job = gangJob(fmt.Sprintf("low%d", slot/8), 20, 8, 0, 3500)
				} else {
					job = testJob(fmt.Sprintf("low%d", slot), api.JobTypeBatch, 1, 3500, 256)
					job.Priority = 20
				}
				st.upsertJob(job)
			}
			node := n
			if gangs { // member r of gang g on node (g*8+r)/4 spread: stride the nodes
				node = st.nodes[(slot/8*8+slot%8*611)%len(st.nodes)]
			}
			a := runningAlloc(job, slot%8, node.ID, 3500, testNow.Add(-time.Hour))
			a.ID = fmt.Sprintf("low-%d", slot)
			if gangs {
				a.Gang = &api.AllocGang{ID: "web", Size: 8, Rank: slot % 8}
			}
			st.upsertAlloc(a)
		}
	}
	return st
}

func benchPreempt(b *testing.B, gangs bool) {
	st := preemptCluster(b, gangs)
	job := testJob("high", api.JobTypeService, 100, 3500, 256)
	job.Priority = 90
	st.upsertJob(job)
	var evicted int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Schedule(st, testEval(job, i), Options{Now: testNow})
		if err != nil {
			b.Fatal(err)
		}
		if n := placedCount(res.Plan); n != 100 {
			b.Fatalf("placed %d of 100", n)
		}
		evicted = 0
		for _, l := range res.Plan.NodePreemptions {
			evicted += len(l)
		}
	}
	b.StopTimer()
	b.ReportMetric(100*float64(b.N)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(evicted)/100, "evictions/placement")
}

// BenchmarkPreempt100 places 100 allocs of a priority 90 job on 5,000
// nodes full of priority 20 lone allocs: every placement preempts.
func BenchmarkPreempt100(b *testing.B) { benchPreempt(b, false) }

// BenchmarkPreemptGangs100 is BenchmarkPreempt100 with the victims in
// 8-member gangs spread over 8 nodes each: a victim gang goes whole.
func BenchmarkPreemptGangs100(b *testing.B) { benchPreempt(b, true) }
