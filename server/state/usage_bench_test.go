package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// usageBenchStore holds jobs × hours of finished usage (one 2-GPU alloc per
// job running each hour) and running allocs open.
func usageBenchStore(b *testing.B, jobs, hours, running int) *StateStore {
	b.Helper()
	s := NewStateStore()
	if err := s.UpsertNode(1, usageNode("n1")); err != nil {
		b.Fatal(err)
	}
	idx := uint64(2)
	for j := 0; j < jobs; j++ {
		job := testJob(fmt.Sprintf("j%03d", j))
		job.Queue = fmt.Sprintf("team-%d", j%8)
		if err := s.UpsertJob(idx, job); err != nil {
			b.Fatal(err)
		}
		idx++
		id := fmt.Sprintf("a%03d", j)
		if err := s.UpsertAllocs(idx, []*api.Allocation{ledgerAlloc(id, job.ID, "n1")}); err != nil {
			b.Fatal(err)
		}
		idx++
		end := usageT0.Add(time.Duration(hours) * time.Hour)
		if j < running {
			end = time.Time{}
		}
		st := api.AllocClientStatusComplete
		if end.IsZero() {
			st = api.AllocClientStatusRunning
		}
		if err := s.UpdateAllocsFromClient(idx, []*api.Allocation{clientUpdate(id, st, usageT0, end, end)}); err != nil {
			b.Fatal(err)
		}
		idx++
	}
	return s
}

// BenchmarkUsageClose measures the ledger's share of applying the client
// update that finishes an alloc: closing a 90-minute interval (2 buckets,
// its open row, its queue's total, the retention check) in a ledger of
// 200 jobs × 24 hours.
func BenchmarkUsageClose(b *testing.B) {
	s := usageBenchStore(b, 200, 24, 0)
	a := ledgerAlloc("x", "j000", "n1")
	a.Job = testJob("j000")
	rate := UsageRateOf(a, usageNode("n1"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := usageT0.Add(time.Duration(i%1000) * time.Minute).UnixNano()
		open := &UsageOpen{AllocID: "x", UsageKey: usageKeyOf(a), Start: start, Rate: rate}
		err := s.Write(uint64(10000+i), func(t *Txn) error {
			if err := t.insert(TableUsageOpen, open); err != nil {
				return err
			}
			return t.closeUsage(a, open, start, start+int64(90*time.Minute))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUsageQuery24h measures GET /v1/usage's read over a ledger of
// 200 jobs × 24 hours (4,800 buckets) with 50 allocs running, by queue.
func BenchmarkUsageQuery24h(b *testing.B) {
	s := usageBenchStore(b, 200, 24, 50)
	from, to, now := usageT0.Unix(), usageT0.Add(24*time.Hour).Unix(), usageT0.Add(24*time.Hour).UnixNano()
	b.ReportAllocs()
	b.ResetTimer()
	var rows int
	for i := 0; i < b.N; i++ {
		r, err := s.Usage(api.UsageByQueue, from, to, now)
		if err != nil {
			b.Fatal(err)
		}
		rows = len(r)
	}
	b.ReportMetric(float64(rows), "rows")
}

// BenchmarkClientUpdateBaseline is the rest of such an entry for scale:
// a client update of a running alloc (the ledger only looks its open row
// up) in the same store.
func BenchmarkClientUpdateBaseline(b *testing.B) {
	s := usageBenchStore(b, 200, 24, 200)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u := clientUpdate("a007", api.AllocClientStatusRunning, usageT0, time.Time{}, usageT0.Add(time.Duration(i)))
		if err := s.UpdateAllocsFromClient(uint64(10000+i), []*api.Allocation{u}); err != nil {
			b.Fatal(err)
		}
	}
}
