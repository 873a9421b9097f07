package state

import (
	"fmt"
	"sort"
	"time"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// usageKeyBy is the row key of k grouped by by (api.UsageByQueue,
// api.UsageByNamespace or api.UsageByJob: "namespace/job").
func usageKeyBy(by string, k UsageKey) (string, error) {
	switch by {
	case api.UsageByQueue:
		return k.Queue, nil
	case api.UsageByNamespace:
		return k.Namespace, nil
	case api.UsageByJob:
		return k.Namespace + "/" + k.JobID, nil
	}
	return "", api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid usage grouping %q: want %s, %s or %s",
		by, api.UsageByQueue, api.UsageByNamespace, api.UsageByJob))
}

type usageRowKey struct {
	key    string
	bucket int64
}

// Usage returns the ledger's rows grouped by by for the buckets that
// start in [BucketOf(from), to) (Unix seconds), sorted by bucket then key,
// with the allocs still running counted up to now (Unix ns) and not past
// to. Cost is left 0 (prices are the caller's).
func (r *reads) Usage(by string, from, to, now int64) ([]api.UsageRow, error) {
	if _, err := usageKeyBy(by, UsageKey{}); err != nil {
		return nil, err
	}
	from = BucketOf(from)
	acc := map[usageRowKey]*UsageAmounts{}
	put := func(k UsageKey, bucket int64, u UsageAmounts) {
		key, _ := usageKeyBy(by, k)
		rk := usageRowKey{key, bucket}
		a := acc[rk]
		if a == nil {
			a = &UsageAmounts{}
			acc[rk] = a
		}
		a.addAmounts(u)
	}
	txn := r.db.Txn(false) // one view of buckets and open intervals
	it, err := txn.LowerBound(TableUsage, "bucket", from)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TableUsage, err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		b := raw.(*UsageBucket)
		if b.Bucket >= to {
			break
		}
		put(b.UsageKey, b.Bucket, b.UsageAmounts)
	}
	open, err := usageOpen(txn)
	if err != nil {
		return nil, err
	}
	sec := int64(time.Second)
	for _, o := range open {
		end := min(now, to*sec)
		SplitUsage(o.Rate, max(o.Start, from*sec), end, func(bucket int64, u UsageAmounts) { put(o.UsageKey, bucket, u) })
	}
	rows := make([]api.UsageRow, 0, len(acc))
	for k, u := range acc {
		rows = append(rows, api.UsageRow{Key: k.key, Bucket: k.bucket, GPUSeconds: u.GPUSeconds,
			CPUCoreSeconds: u.CPUCoreSeconds, MemoryGiBSeconds: u.MemoryGiBSeconds})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Bucket != rows[j].Bucket {
			return rows[i].Bucket < rows[j].Bucket
		}
		return rows[i].Key < rows[j].Key
	})
	return rows, nil
}

// UsageTotals is each queue's cumulative usage (finished allocs since the
// ledger began, which retention does not drop) plus its running allocs
// up to now (Unix ns).
func (r *reads) UsageTotals(now int64) (map[string]UsageAmounts, error) {
	out := map[string]UsageAmounts{}
	txn := r.db.Txn(false) // one view: an alloc closing now is counted once
	it, err := txn.Get(TableUsageTotals, "id")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TableUsageTotals, err)
	}
	for raw := it.Next(); raw != nil; raw = it.Next() {
		t := raw.(*UsageTotal)
		out[t.Queue] = t.UsageAmounts.copy()
	}
	open, err := usageOpen(txn)
	if err != nil {
		return nil, err
	}
	for _, o := range open {
		if now <= o.Start {
			continue
		}
		u := out[o.Queue]
		u.add(o.Rate, float64(now-o.Start)/1e9)
		out[o.Queue] = u
	}
	return out, nil
}

func usageOpen(txn *memdb.Txn) ([]*UsageOpen, error) {
	it, err := txn.Get(TableUsageOpen, "id")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", TableUsageOpen, err)
	}
	var out []*UsageOpen
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*UsageOpen))
	}
	return out, nil
}
