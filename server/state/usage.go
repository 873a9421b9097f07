package state

import (
	"fmt"
	"time"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// The usage ledger: what each job's allocs consumed (GPU-seconds per GPU
// model, CPU-core-seconds, memory GiB-seconds) in hourly buckets, per
// namespace, job and queue. It is written by the alloc writes of the FSM
// only, from times carried in the Raft entries (the tasks' StartedAt and
// FinishedAt, and the alloc's ModifyTime that the server stamps on client
// updates and lost marks): never from the wall clock, so every server
// builds the same ledger from the same log.
//
// An alloc is counted once, when the client finishes it (complete, failed
// or lost) or when it is deleted unfinished: from the first start seen
// (kept in TableUsageOpen while it runs, so restarts, which move the
// tasks' StartedAt, do not shorten it) to its end. An alloc still running
// is not stored: readers add its open interval up to their "now".
const (
	// TableUsage holds *UsageBucket by (namespace, job, queue, bucket).
	TableUsage = "usage"
	// TableUsageOpen holds *UsageOpen by alloc ID: the running allocs.
	TableUsageOpen = "usage_open"
	// TableUsageTotals holds *UsageTotal by queue: cumulative usage that
	// retention never drops (the Prometheus gauges).
	TableUsageTotals = "usage_totals"
)

// UsageBucketSeconds is the length of a ledger bucket.
const UsageBucketSeconds = 3600

// UsageAmounts is consumption over some time.
type UsageAmounts struct {
	GPUSeconds       map[string]float64 `json:"GPUSeconds,omitempty"` // by GPU model
	CPUCoreSeconds   float64            `json:"CPUCoreSeconds"`
	MemoryGiBSeconds float64            `json:"MemoryGiBSeconds"`
}

// add adds rate held for secs seconds.
func (u *UsageAmounts) add(r UsageRate, secs float64) {
	for m, n := range r.GPUs {
		if u.GPUSeconds == nil {
			u.GPUSeconds = map[string]float64{}
		}
		u.GPUSeconds[m] += n * secs
	}
	u.CPUCoreSeconds += r.CPUCores * secs
	u.MemoryGiBSeconds += r.MemoryGiB * secs
}

// addAmounts adds o.
func (u *UsageAmounts) addAmounts(o UsageAmounts) {
	for m, s := range o.GPUSeconds {
		if u.GPUSeconds == nil {
			u.GPUSeconds = map[string]float64{}
		}
		u.GPUSeconds[m] += s
	}
	u.CPUCoreSeconds += o.CPUCoreSeconds
	u.MemoryGiBSeconds += o.MemoryGiBSeconds
}

func (u UsageAmounts) copy() UsageAmounts {
	c := u
	if u.GPUSeconds != nil {
		c.GPUSeconds = make(map[string]float64, len(u.GPUSeconds))
		for k, v := range u.GPUSeconds {
			c.GPUSeconds[k] = v
		}
	}
	return c
}

// UsageRate is what an alloc holds while it runs.
type UsageRate struct {
	GPUs      map[string]float64 `json:"GPUs,omitempty"` // by model "vendor/type/name"; a share as its fraction
	CPUCores  float64            `json:"CPUCores"`
	MemoryGiB float64            `json:"MemoryGiB"`
}

// UsageKey says whose usage it is.
type UsageKey struct {
	Namespace string `json:"Namespace"`
	JobID     string `json:"JobID"`
	Queue     string `json:"Queue"`
}

// UsageBucket is one key's usage in one hour (Bucket: its start, Unix s).
type UsageBucket struct {
	UsageKey
	Bucket int64 `json:"Bucket"`
	UsageAmounts
}

// UsageOpen is a running alloc: counted from Start (Unix ns) on.
type UsageOpen struct {
	AllocID string `json:"AllocID"`
	UsageKey
	Start int64     `json:"Start"`
	Rate  UsageRate `json:"Rate"`
}

// UsageTotal is a queue's cumulative finished usage.
type UsageTotal struct {
	Queue string `json:"Queue"`
	UsageAmounts
}

func usageTables() map[string]*memdb.TableSchema {
	return map[string]*memdb.TableSchema{
		TableUsage: {Name: TableUsage, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				str("Namespace"), str("JobID"), str("Queue"), &memdb.IntFieldIndex{Field: "Bucket"}}}},
			"bucket": {Name: "bucket", Indexer: &memdb.IntFieldIndex{Field: "Bucket"}},
		}},
		TableUsageOpen: {Name: TableUsageOpen, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("AllocID")},
		}},
		TableUsageTotals: {Name: TableUsageTotals, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("Queue")},
		}},
	}
}

// usageFinished reports whether the client is done with the alloc.
func usageFinished(a *api.Allocation) bool { return a != nil && a.ClientTerminalStatus() }

// allocStarted is the earliest StartedAt of the alloc's tasks (Unix ns;
// 0 when no task started).
func allocStarted(a *api.Allocation) int64 {
	var s int64
	for _, ts := range a.TaskStates {
		if ts == nil || ts.StartedAt.IsZero() {
			continue
		}
		if n := ts.StartedAt.UnixNano(); s == 0 || n < s {
			s = n
		}
	}
	return s
}

// allocEnded is when a finished alloc stopped holding its resources (Unix
// ns): the latest FinishedAt when every started task has one, else (lost,
// or killed without a report) the alloc's ModifyTime, the server's stamp
// of the update that finished it; never before start.
func allocEnded(a *api.Allocation, start int64) int64 {
	var end int64
	all := true
	for _, ts := range a.TaskStates {
		if ts == nil || ts.StartedAt.IsZero() {
			continue
		}
		if ts.FinishedAt.IsZero() {
			all = false
			continue
		}
		end = max(end, ts.FinishedAt.UnixNano())
	}
	if (!all || end == 0) && a.ModifyTime != 0 {
		end = a.ModifyTime
	}
	return max(end, start)
}

// UsageRateOf is what alloc a holds on node n (nil when unknown): GPUs by
// model from its device grants of type "gpu" (a share as its fraction:
// GPU-seconds x fraction), CPU cores (its reserved
// cores, else its MHz over the node's MHz per core, 1000 MHz per core
// without a node) and memory.
func UsageRateOf(a *api.Allocation, n *api.Node) UsageRate {
	var r UsageRate
	if a.AllocatedResources == nil {
		return r
	}
	perCore := 1000.0
	if n != nil && n.NodeResources != nil && n.NodeResources.Cpu.TotalCpuCores > 0 && n.NodeResources.Cpu.CpuShares > 0 {
		perCore = float64(n.NodeResources.Cpu.CpuShares) / float64(n.NodeResources.Cpu.TotalCpuCores)
	}
	for _, t := range a.AllocatedResources.Tasks {
		if t == nil {
			continue
		}
		if len(t.Cpu.ReservedCores) > 0 {
			r.CPUCores += float64(len(t.Cpu.ReservedCores))
		} else {
			r.CPUCores += float64(t.Cpu.CpuShares) / perCore
		}
		r.MemoryGiB += float64(t.Memory.MemoryMB) / 1024
		for _, d := range t.Devices {
			if d == nil || d.Type != "gpu" || len(d.DeviceIDs) == 0 {
				continue
			}
			if r.GPUs == nil {
				r.GPUs = map[string]float64{}
			}
			m := d.Vendor + "/" + d.Type + "/" + d.Name
			r.GPUs[m] = api.RoundGPUs(r.GPUs[m] + d.GPUs())
		}
	}
	return r
}

// usageKeyOf is the alloc's namespace, job and queue (the job's queue, or
// api.DefaultQueue).
func usageKeyOf(a *api.Allocation) UsageKey {
	return UsageKey{Namespace: a.Namespace, JobID: a.JobID, Queue: api.JobQueue(a.Job)}
}

// trackUsage follows an alloc write (old: the stored version before, nil
// for a new alloc): it opens the alloc's interval when a task first runs
// and closes it into the ledger when the client finishes the alloc.
func (t *Txn) trackUsage(old, a *api.Allocation) error {
	start := allocStarted(a)
	if start == 0 && !usageFinished(a) {
		return nil // not running yet: the common pending write costs no read
	}
	open, err := t.usageOpen(a.ID)
	if err != nil {
		return err
	}
	if !usageFinished(a) {
		if open != nil && open.Start <= start {
			return nil
		}
		if open == nil && usageFinished(old) {
			return nil // already counted; a late report does not count it twice
		}
		n, err := txnFirst[api.Node](t, TableNodes, "id", a.NodeID)
		if err != nil {
			return err
		}
		o := &UsageOpen{AllocID: a.ID, UsageKey: usageKeyOf(a), Start: start, Rate: UsageRateOf(a, n)}
		t.wroteUsageOpen(a.ID, o)
		return t.insert(TableUsageOpen, o)
	}
	if open == nil && (old != nil && usageFinished(old) || start == 0) {
		return nil // counted before, or never ran
	}
	return t.closeUsage(a, open, start, allocEnded(a, start))
}

// usageOpen returns the alloc's open row as the transaction has it: as
// allocByID reads allocs, from the rows it wrote, else from the state
// before it (a read through the write transaction made each row written
// after it copy its whole path again).
func (t *Txn) usageOpen(allocID string) (*UsageOpen, error) {
	if o, ok := t.usageOpenW[allocID]; ok {
		return o, nil
	}
	raw, err := t.baseTxn().First(TableUsageOpen, "id", allocID)
	if err != nil || raw == nil {
		return nil, err
	}
	return raw.(*UsageOpen), nil
}

// wroteUsageOpen notes the alloc's open row written (nil: deleted).
func (t *Txn) wroteUsageOpen(allocID string, o *UsageOpen) {
	if t.usageOpenW == nil {
		t.usageOpenW = map[string]*UsageOpen{}
	}
	t.usageOpenW[allocID] = o
}

// untrackUsage closes the interval of an alloc deleted while open, at its
// last ModifyTime.
func (t *Txn) untrackUsage(a *api.Allocation) error {
	open, err := t.usageOpen(a.ID)
	if err != nil || open == nil {
		return err
	}
	return t.closeUsage(a, open, open.Start, max(a.ModifyTime, open.Start))
}

// closeUsage adds [start, end) of alloc a (rate and key from open when
// set) to the ledger, drops the open row and garbage-collects buckets
// older than the retention before end.
func (t *Txn) closeUsage(a *api.Allocation, open *UsageOpen, start, end int64) error {
	key, rate := usageKeyOf(a), UsageRate{}
	if open != nil {
		key, rate, start = open.UsageKey, open.Rate, min(start, open.Start)
		t.wroteUsageOpen(open.AllocID, nil)
		if err := t.delete(TableUsageOpen, open); err != nil {
			return err
		}
	} else {
		n, err := txnFirst[api.Node](t, TableNodes, "id", a.NodeID)
		if err != nil {
			return err
		}
		rate = UsageRateOf(a, n)
	}
	if end <= start {
		return nil
	}
	cutoff, err := t.usageCutoff(end)
	if err != nil {
		return err
	}
	var total UsageAmounts
	var werr error
	SplitUsage(rate, max(start, cutoff*int64(time.Second)), end, func(bucket int64, u UsageAmounts) {
		if werr == nil {
			werr = t.addUsage(key, bucket, u)
		}
		total.addAmounts(u)
	})
	if werr != nil {
		return werr
	}
	if err := t.addTotal(key.Queue, total); err != nil {
		return err
	}
	return t.gcUsage(cutoff)
}

// usageCutoff is the first bucket kept at time end (Unix ns): the
// retention of the scheduler configuration before end's bucket.
func (t *Txn) usageCutoff(end int64) (int64, error) {
	conf, err := txnFirst[api.SchedulerConfiguration](t, TableSchedulerConfig, "id")
	if err != nil {
		return 0, err
	}
	hours := int64(api.DefaultUsageRetentionHours)
	if conf != nil && conf.UsageRetentionHours > 0 {
		hours = int64(conf.UsageRetentionHours)
	}
	return BucketOf(end/int64(time.Second)) - hours*UsageBucketSeconds, nil
}

// BucketOf is the start of the bucket holding Unix second s.
func BucketOf(s int64) int64 {
	b := s - s%UsageBucketSeconds
	if s < 0 && s%UsageBucketSeconds != 0 {
		b -= UsageBucketSeconds
	}
	return b
}

// SplitUsage calls fn for each hourly bucket that [start, end) (Unix ns)
// overlaps, with what rate held for the overlap.
func SplitUsage(rate UsageRate, start, end int64, fn func(bucket int64, u UsageAmounts)) {
	const hour = UsageBucketSeconds * int64(time.Second)
	for s := start; s < end; {
		b := BucketOf(s / int64(time.Second))
		e := min(end, (b+UsageBucketSeconds)*int64(time.Second))
		if e <= s { // s before the epoch rounds oddly; step a bucket
			e = min(end, s+hour)
		}
		var u UsageAmounts
		u.add(rate, float64(e-s)/1e9)
		fn(b, u)
		s = e
	}
}

func (t *Txn) addUsage(k UsageKey, bucket int64, u UsageAmounts) error {
	old, err := txnFirst[UsageBucket](t, TableUsage, "id", k.Namespace, k.JobID, k.Queue, bucket)
	if err != nil {
		return err
	}
	n := &UsageBucket{UsageKey: k, Bucket: bucket}
	if old != nil {
		n.UsageAmounts = old.UsageAmounts.copy()
	}
	n.addAmounts(u)
	return t.insert(TableUsage, n)
}

func (t *Txn) addTotal(queue string, u UsageAmounts) error {
	old, err := txnFirst[UsageTotal](t, TableUsageTotals, "id", queue)
	if err != nil {
		return err
	}
	n := &UsageTotal{Queue: queue}
	if old != nil {
		n.UsageAmounts = old.UsageAmounts.copy()
	}
	n.addAmounts(u)
	return t.insert(TableUsageTotals, n)
}

// gcUsage drops the buckets before cutoff (Unix s).
func (t *Txn) gcUsage(cutoff int64) error {
	it, err := t.txn.LowerBound(TableUsage, "bucket", int64(-1<<62))
	if err != nil {
		return fmt.Errorf("read %s: %w", TableUsage, err)
	}
	var drop []*UsageBucket
	for raw := it.Next(); raw != nil; raw = it.Next() {
		b := raw.(*UsageBucket)
		if b.Bucket >= cutoff {
			break
		}
		drop = append(drop, b)
	}
	for _, b := range drop {
		if err := t.delete(TableUsage, b); err != nil {
			return err
		}
	}
	return nil
}

// UsageBucket restores a ledger bucket.
func (r *Restore) UsageBucket(b *UsageBucket) error { return r.put(TableUsage, b) }

// UsageOpen restores a running alloc's open interval.
func (r *Restore) UsageOpen(o *UsageOpen) error { return r.put(TableUsageOpen, o) }

// UsageTotal restores a queue's cumulative usage.
func (r *Restore) UsageTotal(u *UsageTotal) error { return r.put(TableUsageTotals, u) }
