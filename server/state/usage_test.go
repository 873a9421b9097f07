package state

import (
	"math"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

var usageT0 = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)

const h100 = "nvidia/gpu/H100"

// usageNode has 4 cores of 1000 MHz.
func usageNode(id string) *api.Node {
	n := testNode(id)
	n.NodeResources.Cpu.TotalCpuCores = 4
	return n
}

// ledgerAlloc holds 2 H100s, 2000 MHz (2 cores on usageNode) and 2 GiB.
func ledgerAlloc(id, jobID, nodeID string) *api.Allocation {
	a := testAlloc(id, jobID, nodeID)
	a.AllocatedResources = &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
		"train": {Cpu: api.AllocatedCpuResources{CpuShares: 2000}, Memory: api.AllocatedMemoryResources{MemoryMB: 2048},
			Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"g0", "g1"}}}},
	}}
	return a
}

// clientUpdate is a client report of one task's state, stamped at stamp.
func clientUpdate(id, status string, started, finished, stamp time.Time) *api.Allocation {
	return &api.Allocation{ID: id, ClientStatus: status, ModifyTime: stamp.UnixNano(),
		TaskStates: map[string]*api.TaskState{"train": {State: "running", StartedAt: started, FinishedAt: finished}}}
}

func usageStore(t *testing.T, jobs ...*api.Job) *StateStore {
	t.Helper()
	s := NewStateStore()
	must(t, s.UpsertNode(1, usageNode("n1")))
	for i, j := range jobs {
		must(t, s.UpsertJob(uint64(2+i), j))
	}
	return s
}

func usageRows(t *testing.T, s *StateStore, by string, from, to time.Time, now time.Time) []api.UsageRow {
	t.Helper()
	rows, err := s.Usage(by, from.Unix(), to.Unix(), now.UnixNano())
	must(t, err)
	return rows
}

func hourOf(t time.Time) int64 { return t.Truncate(time.Hour).Unix() }

// row is the expected row for a 2-GPU alloc that held its resources for secs.
func row(key string, bucket, secs int64) api.UsageRow {
	s := float64(secs)
	return api.UsageRow{Key: key, Bucket: bucket, GPUSeconds: map[string]float64{h100: 2 * s},
		CPUCoreSeconds: 2 * s, MemoryGiBSeconds: 2 * s}
}

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

var rowCmp = cmp.Comparer(approx)

func TestSplitUsageAcrossHours(t *testing.T) {
	var got []api.UsageRow
	start, end := usageT0, usageT0.Add(105*time.Minute) // 10:30 to 12:15
	SplitUsage(UsageRate{GPUs: map[string]float64{h100: 2}, CPUCores: 2, MemoryGiB: 2}, start.UnixNano(), end.UnixNano(),
		func(b int64, u UsageAmounts) {
			got = append(got, api.UsageRow{Key: "k", Bucket: b, GPUSeconds: u.GPUSeconds, CPUCoreSeconds: u.CPUCoreSeconds,
				MemoryGiBSeconds: u.MemoryGiBSeconds})
		})
	h := hourOf(usageT0)
	want := []api.UsageRow{row("k", h, 1800), row("k", h+3600, 3600), row("k", h+7200, 900)}
	if diff := cmp.Diff(want, got, rowCmp); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	if BucketOf(-1) != -3600 || BucketOf(3599) != 0 || BucketOf(3600) != 3600 {
		t.Errorf("BucketOf: %d %d %d", BucketOf(-1), BucketOf(3599), BucketOf(3600))
	}
}

func TestUsageRunningCountedToNowThenStored(t *testing.T) {
	job := testJob("train")
	job.Queue = "team-a/train"
	s := usageStore(t, job)
	must(t, s.UpsertAllocs(10, []*api.Allocation{ledgerAlloc("a1", "train", "n1")}))
	h := hourOf(usageT0)
	from, to := usageT0.Add(-time.Hour), usageT0.Add(3*time.Hour)

	must(t, s.UpdateAllocsFromClient(11, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusRunning, usageT0, time.Time{}, usageT0)}))
	now := usageT0.Add(40 * time.Minute) // 11:10
	got := usageRows(t, s, api.UsageByQueue, from, to, now)
	want := []api.UsageRow{row("team-a/train", h, 1800), row("team-a/train", h+3600, 600)}
	if diff := cmp.Diff(want, got, rowCmp); diff != "" {
		t.Errorf("running, by queue (-want +got):\n%s", diff)
	}
	if n := len(mustList[UsageBucket](t, s, TableUsage)); n != 0 {
		t.Errorf("a running alloc is stored in the ledger: %d buckets", n)
	}
	// "to" caps the running interval.
	got = usageRows(t, s, api.UsageByJob, from, usageT0.Add(30*time.Minute), now)
	if diff := cmp.Diff([]api.UsageRow{row("default/train", h, 1800)}, got, rowCmp); diff != "" {
		t.Errorf("running, capped by to (-want +got):\n%s", diff)
	}

	// A restart moves the task's StartedAt; the alloc held its resources
	// all along, so the first start counts.
	restart := usageT0.Add(20 * time.Minute)
	must(t, s.UpdateAllocsFromClient(12, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusRunning, restart, time.Time{}, restart)}))
	end := usageT0.Add(50 * time.Minute) // 11:20
	must(t, s.UpdateAllocsFromClient(13, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusComplete, restart, end, end.Add(time.Second))}))
	// A late duplicate report does not count it twice.
	must(t, s.UpdateAllocsFromClient(14, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusComplete, restart, end, end.Add(2*time.Second))}))

	later := usageT0.Add(10 * time.Hour)
	want = []api.UsageRow{row("default", h, 1800), row("default", h+3600, 1200)}
	if diff := cmp.Diff(want, usageRows(t, s, api.UsageByNamespace, from, to, later), rowCmp); diff != "" {
		t.Errorf("finished, by namespace (-want +got):\n%s", diff)
	}
	if n := len(mustList[UsageOpen](t, s, TableUsageOpen)); n != 0 {
		t.Errorf("finished alloc still open: %d", n)
	}
	// Buckets that start before from are left out; from rounds down to its hour.
	want = []api.UsageRow{row("default/train", h+3600, 1200)}
	if diff := cmp.Diff(want, usageRows(t, s, api.UsageByJob, usageT0.Add(31*time.Minute), to, later), rowCmp); diff != "" {
		t.Errorf("from 11:01 (-want +got):\n%s", diff)
	}
	totals, err := s.UsageTotals(later.UnixNano())
	must(t, err)
	if g := totals["team-a/train"].GPUSeconds[h100]; !approx(g, 2*3000) {
		t.Errorf("total GPU seconds %v, want %v", g, 2*3000)
	}
}

func TestUsageLostAllocEndsAtServerStamp(t *testing.T) {
	s := usageStore(t, testJob("train"))
	must(t, s.UpsertAllocs(10, []*api.Allocation{ledgerAlloc("a1", "train", "n1")}))
	must(t, s.UpdateAllocsFromClient(11, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusRunning, usageT0, time.Time{}, usageT0)}))
	lost := usageT0.Add(15 * time.Minute)
	// As the heartbeat's node loss writes it: the last task states, no FinishedAt.
	must(t, s.UpdateAllocsFromClient(12, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusLost, usageT0, time.Time{}, lost)}))
	got := usageRows(t, s, api.UsageByQueue, usageT0.Add(-time.Hour), usageT0.Add(time.Hour), usageT0.Add(5*time.Hour))
	if diff := cmp.Diff([]api.UsageRow{row(api.DefaultQueue, hourOf(usageT0), 900)}, got, rowCmp); diff != "" {
		t.Errorf("lost (-want +got):\n%s", diff)
	}
}

func TestUsageDeletedOpenAllocIsClosed(t *testing.T) {
	s := usageStore(t, testJob("train"))
	must(t, s.UpsertAllocs(10, []*api.Allocation{ledgerAlloc("a1", "train", "n1")}))
	must(t, s.UpdateAllocsFromClient(11, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusRunning, usageT0, time.Time{}, usageT0)}))
	stop := ledgerAlloc("a1", "train", "n1")
	stop.DesiredStatus = api.AllocDesiredStatusStop
	stop.ModifyTime = usageT0.Add(10 * time.Minute).UnixNano()
	must(t, s.UpsertAllocs(12, []*api.Allocation{stop}))
	must(t, s.DeleteEvals(13, nil, []string{"a1"}))
	got := usageRows(t, s, api.UsageByJob, usageT0.Add(-time.Hour), usageT0.Add(time.Hour), usageT0.Add(5*time.Hour))
	if diff := cmp.Diff([]api.UsageRow{row("default/train", hourOf(usageT0), 600)}, got, rowCmp); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}

func TestUsageRetention(t *testing.T) {
	s := usageStore(t, testJob("old"), testJob("train"))
	must(t, s.SetSchedulerConfig(5, &api.SchedulerConfiguration{UsageRetentionHours: 2}, false, 0))
	must(t, s.UpsertAllocs(10, []*api.Allocation{ledgerAlloc("a0", "old", "n1"), ledgerAlloc("a1", "train", "n1")}))
	early := usageT0.Add(-10 * time.Hour)
	must(t, s.UpdateAllocsFromClient(11, []*api.Allocation{clientUpdate("a0", api.AllocClientStatusComplete, early, early.Add(time.Minute), early.Add(time.Minute))}))
	if n := len(mustList[UsageBucket](t, s, TableUsage)); n != 1 {
		t.Fatalf("old job: %d buckets, want 1", n)
	}
	// 10:30 to 15:30: the buckets of 13:00, 14:00 and 15:00 are kept; the
	// old job's bucket goes.
	end := usageT0.Add(5 * time.Hour)
	must(t, s.UpdateAllocsFromClient(12, []*api.Allocation{clientUpdate("a1", api.AllocClientStatusComplete, usageT0, end, end)}))
	h := hourOf(usageT0)
	got := usageRows(t, s, api.UsageByJob, early.Add(-time.Hour), end.Add(time.Hour), end)
	want := []api.UsageRow{row("default/train", h+3*3600, 3600), row("default/train", h+4*3600, 3600), row("default/train", h+5*3600, 1800)}
	if diff := cmp.Diff(want, got, rowCmp); diff != "" {
		t.Errorf("after retention (-want +got):\n%s", diff)
	}
	totals, err := s.UsageTotals(end.UnixNano())
	must(t, err)
	if g := totals[api.DefaultQueue].GPUSeconds[h100]; !approx(g, 2*60+2*9000) {
		t.Errorf("totals keep what retention dropped: %v", g)
	}
}

func TestUsageRateOf(t *testing.T) {
	a := ledgerAlloc("a1", "j", "n1")
	a.AllocatedResources.Tasks["side"] = &api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 3000, ReservedCores: []uint16{0, 1, 2}}}
	got := UsageRateOf(a, usageNode("n1"))
	want := UsageRate{GPUs: map[string]float64{h100: 2}, CPUCores: 5, MemoryGiB: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rate (-want +got):\n%s", diff)
	}
	if _, err := s0().Usage("tenant", 0, 1, 1); err == nil {
		t.Error("bad grouping accepted")
	}
}

func s0() *StateStore { return NewStateStore() }

func mustList[T any](t *testing.T, s *StateStore, table string) []*T {
	t.Helper()
	out, err := list[T](&s.reads, nil, nil, table, "id")
	must(t, err)
	return out
}
