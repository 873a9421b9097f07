package scheduler

import (
	"testing"

	"github.com/drover/drover/api"
)

// TestJobAntiAffinityDefaults: service groups spread their allocs over
// nodes (job anti-affinity), batch groups and groups asking for devices
// pack, and the group meta MetaJobAntiAffinity overrides either way.
func TestJobAntiAffinityDefaults(t *testing.T) {
	for _, c := range []struct {
		name, typ, meta string
		gpus            uint64
		wantNodes       int
	}{
		{"service", api.JobTypeService, "", 0, 2},
		{"batch", api.JobTypeBatch, "", 0, 1},
		{"service-gpu", api.JobTypeService, "", 1, 1},
		{"batch-opt-in", api.JobTypeBatch, "true", 0, 2},
		{"service-opt-out", api.JobTypeService, "false", 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := newMemState()
			for _, n := range []string{"a", "b"} {
				if c.gpus > 0 {
					st.addNode(nvswitchNode(n))
				} else {
					st.addNode(testNode(n, "dc1", 8000, 16384))
				}
			}
			job := testJob("j", c.typ, 2, 500, 256)
			if c.gpus > 0 {
				job.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: "nvidia/gpu", Count: c.gpus}}
			}
			if c.meta != "" {
				job.TaskGroups[0].Meta = map[string]string{MetaJobAntiAffinity: c.meta}
			}
			st.upsertJob(job)
			res, err := Schedule(st, testEval(job, 1), Options{Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			placed := 0
			for _, l := range res.Plan.NodeAllocation {
				placed += len(l)
			}
			if placed != 2 || len(res.Plan.NodeAllocation) != c.wantNodes {
				t.Fatalf("placed %d allocs on %d nodes, want 2 on %d", placed, len(res.Plan.NodeAllocation), c.wantNodes)
			}
		})
	}
}
