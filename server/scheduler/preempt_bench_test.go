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
					job = cpuGangJob(fmt.Sprintf("low%d", slot/8), 20, 8, 0, 3500)
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

// BenchmarkReserveGang64 schedules a 64-member gang (priority 50) on
// 5,000 nodes full of priority 50 batch work: nothing is preempted, the
// gang waits and the pass reserves 64 nodes for it.
func BenchmarkReserveGang64(b *testing.B) {
	st := benchCluster(b)
	for i, n := range st.nodes {
		j := testJob(fmt.Sprintf("b%d", i), api.JobTypeBatch, 1, 12000, 1024)
		st.upsertJob(j)
		st.upsertAlloc(runningAlloc(j, 0, n.ID, 12000, testNow.Add(-time.Hour)))
	}
	gang := cpuGangJob("gang", 50, 64, 0, 8000)
	st.upsertJob(gang)
	var reserved int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Schedule(st, testEval(gang, i), Options{Now: testNow})
		if err != nil {
			b.Fatal(err)
		}
		if res.Blocked == nil || res.Blocked.Reservation == nil {
			b.Fatal("no reservation")
		}
		reserved = len(res.Blocked.Reservation.Nodes)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/pass")
	b.ReportMetric(float64(reserved), "nodes-reserved")
}
