package state

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// benchUUID is a random-looking alloc or node ID (UUID form) for i, so the
// radix trees have the shape real IDs give them.
func benchUUID(kind, i int) string {
	h := uint64(i)*0x9e3779b97f4a7c15 + uint64(kind)*0xbf58476d1ce4e5b9
	h ^= h >> 31
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(h), uint16(h>>32), uint16(h>>48)&0xfff, i&0xfff, h&0xffffffffffff^uint64(i))
}

// benchClusterStore is a store of 100,000 allocs of 10 jobs on 1,000
// nodes (the whole-path benchmark's shape), built once per process, with
// the next free index and every alloc, ordered by node.
var benchClusterStore = sync.OnceValues(func() (*StateStore, []*api.Allocation) {
	s := NewStateStore()
	idx := uint64(1)
	var all []*api.Allocation
	for j := range 10 {
		job := testJob(fmt.Sprintf("bench-%d", j))
		if err := s.UpsertJob(idx, job); err != nil {
			panic(err)
		}
		idx++
		var allocs []*api.Allocation
		for i := range 10000 {
			a := testAlloc(benchUUID(1, j*10000+i), job.ID, benchUUID(2, i%1000))
			a.EvalID = benchUUID(3, j)
			a.Job = job
			allocs = append(allocs, a)
		}
		if err := s.UpsertAllocs(idx, allocs); err != nil {
			panic(err)
		}
		idx++
		all = append(all, allocs...)
	}
	slices.SortStableFunc(all, func(a, b *api.Allocation) int { return strings.Compare(a.NodeID, b.NodeID) })
	return s, all
})

// BenchmarkClientUpdates1024: one Raft entry's worth of client status
// updates (1,024 allocs of ~10 nodes, as the server group-commits them)
// into benchClusterStore: "running" (status alone, as the node simulator
// reports) and "started" (with the task's StartedAt, as a real client
// reports it: the usage ledger opens an interval per alloc).
func BenchmarkClientUpdates1024(b *testing.B) {
	for _, started := range []bool{false, true} {
		name := "running"
		if started {
			name = "started"
		}
		b.Run(name, func(b *testing.B) {
			s, all := benchClusterStore()
			var updates []*api.Allocation
			for _, a := range all {
				u := &api.Allocation{ID: a.ID, NodeID: a.NodeID, ClientStatus: api.AllocClientStatusRunning,
					ClientDescription: "running", ModifyTime: 1}
				if started {
					u.TaskStates = map[string]*api.TaskState{"web": {State: api.TaskStateRunning, StartedAt: time.Unix(1000, 0)}}
				}
				updates = append(updates, u)
			}
			idx := s.LatestIndex() + 1
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := (i * 1024) % (len(updates) - 1024)
				if err := s.UpdateAllocsFromClient(idx, updates[off:off+1024]); err != nil {
					b.Fatal(err)
				}
				idx++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1024, "ns/alloc")
		})
	}
}

// BenchmarkPlanTxn: placing 10,000 new allocs into benchClusterStore in
// one transaction, or in several (ns/alloc either way); they are deleted
// again, untimed, after each round.
func BenchmarkPlanTxn(b *testing.B) {
	for _, per := range []int{10000, 2500, 1000} {
		b.Run(fmt.Sprintf("per=%d", per), func(b *testing.B) {
			s, _ := benchClusterStore()
			job, err := s.JobByID(nil, "default", "bench-0")
			if err != nil || job == nil {
				b.Fatal(err)
			}
			idx := s.LatestIndex() + 1
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				allocs := make([]*api.Allocation, 10000)
				for k := range allocs {
					a := testAlloc(benchUUID(7+i*3+per, k), job.ID, benchUUID(2, k%1000))
					a.EvalID = benchUUID(3, i)
					allocs[k] = a
				}
				b.StartTimer()
				for off := 0; off < len(allocs); off += per {
					if err := s.UpsertAllocs(idx, allocs[off:off+per]); err != nil {
						b.Fatal(err)
					}
					idx++
				}
				b.StopTimer()
				ids := make([]string, len(allocs))
				for k, a := range allocs {
					ids[k] = a.ID
				}
				if err := s.DeleteEvals(idx, nil, ids); err != nil {
					b.Fatal(err)
				}
				idx++
				runtime.GC()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/alloc")
		})
	}
}
