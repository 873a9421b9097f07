package state

import (
	"fmt"
	"testing"

	"github.com/drover/drover/api"
)

func benchAllocs(job *api.Job, n, nodes int) []*api.Allocation {
	out := make([]*api.Allocation, n)
	for i := range out {
		a := testAlloc(fmt.Sprintf("alloc-%06d", i), job.ID, fmt.Sprintf("node-%05d", i%nodes))
		a.Job = job
		out[i] = a
	}
	return out
}

// BenchmarkUpsertAllocs10k measures one write of 10,000 allocations (a
// plan's worth) into a store that already holds a job.
func BenchmarkUpsertAllocs10k(b *testing.B) {
	job := testJob("web")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := NewStateStore()
		if err := s.UpsertJob(1, job.Copy()); err != nil {
			b.Fatal(err)
		}
		allocs := benchAllocs(job, 10000, 5000)
		b.StartTimer()
		if err := s.UpsertAllocs(2, allocs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/alloc")
}

// BenchmarkSnapshotAllocsByNode measures a scheduler-style read: take a
// snapshot and list one node's allocations, with 5,000 nodes and 100,000
// allocations stored.
func BenchmarkSnapshotAllocsByNode(b *testing.B) {
	s := NewStateStore()
	for i := 0; i < 5000; i++ {
		if err := s.UpsertNode(uint64(i+1), testNode(fmt.Sprintf("node-%05d", i))); err != nil {
			b.Fatal(err)
		}
	}
	job := testJob("web")
	if err := s.UpsertJob(6000, job); err != nil {
		b.Fatal(err)
	}
	if err := s.UpsertAllocs(6001, benchAllocs(job, 100000, 5000)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap, err := s.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		as, err := snap.AllocsByNode(nil, fmt.Sprintf("node-%05d", i%5000))
		if err != nil || len(as) != 20 {
			b.Fatalf("got %d allocs, %v", len(as), err)
		}
	}
}
