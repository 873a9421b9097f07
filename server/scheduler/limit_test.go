package scheduler

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// smallCluster is three nodes that hold four 500 MHz allocs each.
func smallCluster() *memState {
	st := newMemState()
	for i := 0; i < 3; i++ {
		st.addNode(testNode(fmt.Sprintf("%d", i), "dc1", 2000, 4096))
	}
	return st
}

// allocated is the bytes f allocates (TotalAlloc counts every
// allocation, whatever the GC freed since).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeCountCostsWhatFits: a group whose count is far above what the
// cluster holds (the server's bound raised to allow it) places what fits
// and counts the rest as coalesced failures, allocating about as much as
// a group one alloc larger than what fits: nothing is built per missing
// alloc.
func TestHugeCountCostsWhatFits(t *testing.T) {
	const fits = 12
	run := func(t *testing.T, count int) (*Result, uint64) {
		st := smallCluster()
		job := testJob("big", api.JobTypeBatch, count, 500, 256)
		st.upsertJob(job)
		var res *Result
		var err error
		n := allocated(func() {
			res, err = Schedule(st, testEval(job, 1), Options{Now: testNow, MaxGroupCount: count})
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, n
	}
	_, base := run(t, fits+1)
	for _, count := range []int{1_000_000, 2_000_000_000} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			res, got := run(t, count)
			if n := placedCount(res.Plan); n != fits {
				t.Fatalf("placed %d, want the %d that fit", n, fits)
			}
			m := res.Eval.FailedTGAllocs["web"]
			if m == nil || m.CoalescedFailures != count-fits-1 || res.Eval.QueuedAllocations["web"] != count-fits {
				t.Fatalf("failed %+v queued %v, want %d coalesced failures and %d queued", m, res.Eval.QueuedAllocations, count-fits-1, count-fits)
			}
			if res.Blocked == nil {
				t.Error("no blocked eval: the rest should wait for capacity")
			}
			t.Logf("count %d allocated %d bytes (count %d: %d)", count, got, fits+1, base)
			if limit := 2*base + 1<<20; got > limit {
				t.Errorf("count %d allocated %d bytes, want at most %d (count %d allocated %d)", count, got, limit, fits+1, base)
			}
		})
	}
}

// TestGroupOverLimitLeftAlone: a stored group above Options.MaxGroupCount
// (a job from before the bound) is neither placed nor cut down: its
// running allocs stay, it fails with a count-limit reason naming the
// group, its count and the bound, no blocked eval is made for it, and the
// job's other groups are scheduled as usual. A count at the bound is
// placed.
func TestGroupOverLimitLeftAlone(t *testing.T) {
	for _, c := range []struct {
		name         string
		count, limit int
		wantLimit    int
	}{
		{"default bound", 2_000_000_000, 0, DefaultMaxGroupCount},
		{"set bound", 4, 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := smallCluster()
			job := testJob("big", api.JobTypeService, c.count, 500, 256)
			job.TaskGroups = append(job.TaskGroups, &api.TaskGroup{Name: "side", Count: 2, EphemeralDisk: &api.EphemeralDisk{SizeMB: 100},
				Tasks: []*api.Task{{Name: "t", Driver: "raw_exec", Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}})
			st.upsertJob(job)
			running := &api.Allocation{ID: "run-0", Namespace: job.Namespace, JobID: job.ID, Job: job, TaskGroup: "web",
				Name: api.AllocName(job.ID, "web", 0), NodeID: "node-0", DesiredStatus: api.AllocDesiredStatusRun,
				ClientStatus: api.AllocClientStatusRunning}
			st.upsertAlloc(running)
			var res *Result
			var err error
			n := allocated(func() {
				res, err = Schedule(st, testEval(job, 1), Options{Now: testNow, MaxGroupCount: c.limit})
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Plan.NodeUpdate) != 0 {
				t.Errorf("stops %v, want none: the running alloc stays", res.Plan.NodeUpdate)
			}
			for _, a := range placedOf(res.Plan, job.ID) {
				if a.TaskGroup != "side" {
					t.Errorf("placed %s of group %s, want only group side's", a.Name, a.TaskGroup)
				}
			}
			if got := placedCount(res.Plan); got != 2 {
				t.Errorf("placed %d, want group side's 2", got)
			}
			m := res.Eval.FailedTGAllocs["web"]
			want := fmt.Sprintf(`group "web" count %d is above the server's limit of %d`, c.count, c.wantLimit)
			if m == nil || len(m.Reasons) != 1 || m.Reasons[0].Kind != api.PendingCountLimit || !strings.Contains(m.Reasons[0].Message, want) {
				t.Fatalf("web's failure %+v, want one %s reason saying %q", m, api.PendingCountLimit, want)
			}
			if res.Blocked != nil || res.Eval.QueuedAllocations["web"] != 0 {
				t.Errorf("blocked eval %v, queued %v: want none for a group refused by its count", res.Blocked, res.Eval.QueuedAllocations)
			}
			if n > 1<<20 {
				t.Errorf("allocated %d bytes, want under 1 MiB", n)
			}
		})
	}
	t.Run("at the bound", func(t *testing.T) {
		st := smallCluster()
		job := testJob("big", api.JobTypeService, 3, 500, 256)
		st.upsertJob(job)
		res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, MaxGroupCount: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := placedCount(res.Plan); got != 3 || len(res.Eval.FailedTGAllocs) != 0 {
			t.Errorf("placed %d, failed %v; want 3 placed", got, res.Eval.FailedTGAllocs)
		}
	})
}

// TestGangOverLimitRefusedWhole: a gang (or all_at_once job) is placed
// whole or not at all, so a group above the bound keeps every group of
// it from being placed, each with a reason naming the group at fault.
func TestGangOverLimitRefusedWhole(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*api.Job)
	}{
		{"job gang", func(j *api.Job) { j.Gang = &api.Gang{} }},
		{"all_at_once", func(j *api.Job) { j.AllAtOnce = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := smallCluster()
			job := testJob("train", api.JobTypeBatch, 6, 100, 64)
			job.TaskGroups = append(job.TaskGroups, &api.TaskGroup{Name: "launcher", Count: 1, EphemeralDisk: &api.EphemeralDisk{SizeMB: 100},
				Tasks: []*api.Task{{Name: "t", Driver: "raw_exec", Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}})
			c.set(job)
			st.upsertJob(job)
			res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, MaxGroupCount: 5})
			if err != nil {
				t.Fatal(err)
			}
			if n := placedCount(res.Plan); n != 0 {
				t.Errorf("placed %d, want none of the gang", n)
			}
			for _, g := range []string{"web", "launcher"} {
				m := res.Eval.FailedTGAllocs[g]
				if m == nil || len(m.Reasons) != 1 || m.Reasons[0].Kind != api.PendingCountLimit ||
					!strings.Contains(m.Reasons[0].Message, `group "web" count 6 is above the server's limit of 5`) {
					t.Errorf("group %s failure %+v, want a count-limit reason naming group web", g, m)
				}
			}
			if res.Blocked != nil {
				t.Errorf("blocked eval %+v, want none", res.Blocked)
			}
		})
	}
}

// cancelOnLoad is a state that cancels the pass's context the first time
// the scheduler reads a node's allocs, which it does when it first looks
// at a node for a placement: the context ends inside the placement loop.
type cancelOnLoad struct {
	*memState
	cancel func()
	loads  int
}

func (c *cancelOnLoad) AllocsByNode(id string) ([]*api.Allocation, error) {
	c.loads++
	if c.loads == 1 {
		c.cancel()
	}
	return c.memState.AllocsByNode(id)
}

// TestScheduleContextCancelled: a context that ends while allocs are
// being placed stops the pass before its next placement, with the
// context's error and no result; one that ended before does not start it.
func TestScheduleContextCancelled(t *testing.T) {
	jobs := map[string]func() *api.Job{
		"service":  func() *api.Job { return testJob("j", api.JobTypeService, 200, 500, 256) },
		"batch":    func() *api.Job { return testJob("j", api.JobTypeBatch, 200, 500, 256) },
		"system":   func() *api.Job { return testJob("j", api.JobTypeSystem, 1, 500, 256) },
		"gang":     func() *api.Job { return gangJob("j", 200, 0, 0) },
		"sysbatch": func() *api.Job { return testJob("j", api.JobTypeSysBatch, 1, 500, 256) },
	}
	for name, mk := range jobs {
		t.Run(name, func(t *testing.T) {
			st := newMemState()
			for i := 0; i < 200; i++ {
				st.addNode(testNode(fmt.Sprintf("%03d", i), "dc1", 4000, 8192))
			}
			job := mk()
			job.Datacenters = []string{"dc1"}
			st.upsertJob(job)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			view := &cancelOnLoad{memState: st, cancel: cancel}
			res, err := ScheduleContext(ctx, view, testEval(job, 1), Options{Now: testNow})
			if !errors.Is(err, context.Canceled) || res != nil {
				t.Fatalf("got result %v, err %v; want context.Canceled and no result", res != nil, err)
			}
			// One placement looks at a sample of nodes (at most 2 for
			// batch, log2(200) for service, one for system); the other
			// 199 placements would have looked at many more.
			if view.loads > 10 {
				t.Errorf("%d nodes read after the context ended, want the pass to stop at the next placement", view.loads)
			}
		})
	}
	t.Run("ended before", func(t *testing.T) {
		st := smallCluster()
		job := testJob("j", api.JobTypeService, 3, 500, 256)
		st.upsertJob(job)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		view := &cancelOnLoad{memState: st, cancel: func() {}}
		if _, err := ScheduleContext(ctx, view, testEval(job, 1), Options{Now: testNow}); !errors.Is(err, context.Canceled) || view.loads != 0 {
			t.Errorf("err %v after %d node reads, want context.Canceled before any", err, view.loads)
		}
	})
}
