package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// benchCluster is 5,000 nodes of 4 cores x 3,500 MHz, 32,000 MB memory,
// 100 GiB disk, half in dc1 and half in dc2.
func benchCluster(b *testing.B) *memState {
	b.Helper()
	st := newMemState()
	for i := 0; i < 5000; i++ {
		dc := "dc1"
		if i%2 == 1 {
			dc = "dc2"
		}
		n := testNode(fmt.Sprintf("%d", i), dc, 14000, 32000)
		n.NodeResources.Cpu.TotalCpuCores = 4
		n.Attributes["cpu.numcores"] = "4"
		st.addNode(n)
	}
	return st
}

func benchSchedule(b *testing.B, typ string, count int) {
	st := benchCluster(b)
	job := testJob("bench", typ, count, 500, 256)
	st.upsertJob(job)
	benchPasses(b, st, job, count)
}

// benchPasses schedules job on st b.N times (every pass from the same
// state), fails when a pass places fewer than count allocs, and reports
// placements/s and the nodes the last pass used. It returns the last
// pass's result.
func benchPasses(b *testing.B, st *memState, job *api.Job, count int) *Result {
	var res *Result
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if res, err = Schedule(st, testEval(job, i), Options{Now: testNow}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if placed := placedCount(res.Plan); placed != count {
		b.Fatalf("placed %d of %d", placed, count)
	}
	b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "placements/s")
	b.ReportMetric(float64(len(res.Plan.NodeAllocation)), "nodes")
	return res
}

// BenchmarkService1000 places a 1,000-alloc service job on 5,000 nodes.
func BenchmarkService1000(b *testing.B) { benchSchedule(b, api.JobTypeService, 1000) }

// BenchmarkBatch10000 places a 10,000-alloc batch job on 5,000 nodes.
func BenchmarkBatch10000(b *testing.B) { benchSchedule(b, api.JobTypeBatch, 10000) }

// BenchmarkSystem5000 places a system job on every one of 5,000 nodes.
func BenchmarkSystem5000(b *testing.B) { benchSchedule(b, api.JobTypeSystem, 5000) }

// BenchmarkSpread1000 places a 1,000-alloc service job spread over the two
// datacenters (spread and affinity score every feasible node).
func BenchmarkSpread1000(b *testing.B) {
	st := benchCluster(b)
	job := testJob("bench", api.JobTypeService, 1000, 500, 256)
	job.Spreads = []*api.Spread{{Attribute: "${node.datacenter}", Weight: 100}}
	st.upsertJob(job)
	benchPasses(b, st, job, 1000)
}

// BenchmarkGangPlace64On5000 places a 64-member gang (8 GPUs each) on
// 5,000 8-GPU nodes and reports the per-pass latency percentiles (50
// passes per iteration, each with its own eval so the node order
// differs).
func BenchmarkGangPlace64On5000(b *testing.B) { benchGang(b, nil) }

// BenchmarkGangPlace64On5000Racks is the same gang packed by rack
// (topology preferred; racks of 40 nodes, so it spans two).
func BenchmarkGangPlace64On5000Racks(b *testing.B) {
	benchGang(b, &api.Topology{Level: "rack", Mode: api.TopologyPreferred})
}

func benchGang(b *testing.B, topo *api.Topology) {
	st := newMemState()
	for i := 0; i < 5000; i++ {
		n := gangGPUNode(fmt.Sprintf("%d", i), 8)
		n.Meta["topology.rack"] = fmt.Sprintf("rack%d", i/40)
		st.addNode(n)
	}
	job := gangJob("bench", 64, 8, 0)
	job.TaskGroups[0].Gang.Topology = topo
	st.upsertJob(job)
	const passes = 50
	var lat []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := 0; k < passes; k++ {
			start := time.Now()
			res, err := Schedule(st, testEval(job, i*passes+k), Options{Now: testNow})
			lat = append(lat, time.Since(start))
			if err != nil {
				b.Fatal(err)
			}
			if n := placedCount(res.Plan); n != 64 {
				b.Fatalf("placed %d of 64", n)
			}
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// reportPercentiles reports the p50 and p99 of lat in milliseconds.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}
