package server

import (
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
)

func gpuJob(id string, count int, share *api.DeviceShare) *api.Job {
	j := testJob(id, count, 500, 256)
	j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1, Share: share}}
	return j
}

// The workers learn the expected GPU workload from what is submitted, and
// a new leader rebuilds it from the live jobs in state.
func TestWorkloadFollowsSubmissions(t *testing.T) {
	s := newTestServer(t)
	registerJob(t, s, gpuJob("quarter", 3, &api.DeviceShare{Fraction: 0.25}))
	registerJob(t, s, gpuJob("whole", 1, nil))
	waitIdle(t, s)

	want := map[[2]int]float64{{1, 250}: 0.75, {1, 1000}: 0.25}
	check := func(what string, shapes []scheduler.WorkloadShape) {
		t.Helper()
		if len(shapes) != len(want) {
			t.Fatalf("%s: shapes = %+v, want %v", what, shapes, want)
		}
		for _, sh := range shapes {
			w, ok := want[[2]int{sh.GPUs, sh.Milli}]
			if !ok || sh.Weight < w-0.01 || sh.Weight > w+0.01 {
				t.Fatalf("%s: shape %+v, want weights %v", what, sh, want)
			}
		}
	}
	check("after submissions", s.workload.Shapes())

	// A stopped job's asks are not expected any more.
	registerJob(t, s, gpuJob("stopped", 5, &api.DeviceShare{Fraction: 0.5}))
	waitIdle(t, s)
	if _, err := s.Jobs().DeregisterJob(t.Context(), api.DefaultNamespace, "stopped", false); err != nil {
		t.Fatalf("stop: %v", err)
	}
	w := scheduler.NewWorkload(0)
	if err := seedWorkload(w, s.State()); err != nil {
		t.Fatalf("seed: %v", err)
	}
	check("seeded from state", w.Shapes())
}
