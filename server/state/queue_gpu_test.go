package state

import (
	"testing"

	"github.com/drover/drover/api"
)

// TestQueueStatusGPUUse: a queue's status adds up its subtree's live
// allocs' GPU use (GPUs times utilization) and counts those with idle
// GPUs; stopped allocs and other queues count nothing.
func TestQueueStatusGPUUse(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertQueues(1, []*api.Queue{{Name: "team"}, {Name: "team/nb", Parent: "team"}, {Name: "other"}}))
	nb, other := testJob("nb"), testJob("o")
	nb.Queue, other.Queue = "team/nb", "other"
	must(t, s.UpsertJob(2, nb))
	must(t, s.UpsertJob(3, other))
	mk := func(id string, j *api.Job, gpus int, util float64, idle bool, desired string) *api.Allocation {
		a := testAlloc(id, j.ID, "n1")
		a.Job, a.DesiredStatus = j, desired
		a.GPUUsage = &api.GPUUsage{GPUs: gpus, UtilPercent: util}
		if idle {
			a.GPUUsage.IdleSince = 1
		}
		return a
	}
	must(t, s.UpsertAllocs(4, []*api.Allocation{
		mk("a1", nb, 4, 50, false, api.AllocDesiredStatusRun),
		mk("a2", nb, 2, 0, true, api.AllocDesiredStatusRun),
		mk("a3", nb, 8, 100, false, api.AllocDesiredStatusStop),
		mk("a4", other, 1, 100, false, api.AllocDesiredStatusRun),
	}))
	for name, want := range map[string][2]float64{"team": {2, 1}, "team/nb": {2, 1}, "other": {1, 0}} {
		st, err := s.QueueStatus(nil, name)
		must(t, err)
		if st.GPUsUsed != want[0] || st.GPUIdleAllocs != int(want[1]) {
			t.Errorf("%s: %v GPUs used, %d idle allocs; want %v, %v", name, st.GPUsUsed, st.GPUIdleAllocs, want[0], want[1])
		}
	}
}
