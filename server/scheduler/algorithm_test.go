package scheduler

import (
	"errors"
	"testing"

	"github.com/drover/drover/api"
)

// Binpack puts the alloc on the busier node, spread on the emptier one;
// the fit score is reported under "binpack" either way (as Nomad does).
func TestAlgorithmBinpackVersusSpread(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("busy", "dc1", 4000, 8192))
	st.addNode(testNode("idle", "dc1", 4000, 8192))
	other := testJob("other", api.JobTypeService, 0, 100, 64)
	st.upsertJob(other)
	st.upsertAlloc(&api.Allocation{
		ID: "squat", Namespace: api.DefaultNamespace, JobID: "other", Job: other, TaskGroup: "web",
		Name: api.AllocName("other", "web", 0), NodeID: "node-busy", DesiredStatus: api.AllocDesiredStatusRun,
		ClientStatus: api.AllocClientStatusRunning,
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			"server": {Cpu: api.AllocatedCpuResources{CpuShares: 2000}, Memory: api.AllocatedMemoryResources{MemoryMB: 4096}}}},
	})
	job := testJob("web", api.JobTypeService, 1, 500, 256)
	st.upsertJob(job)
	for _, c := range []struct{ algo, want string }{
		{"", "node-busy"}, {AlgorithmBinpack, "node-busy"}, {AlgorithmSpread, "node-idle"},
	} {
		res, err := Schedule(st, testEval(job, 1), Options{Now: testNow, SampleLimit: -1, Algorithm: c.algo})
		if err != nil {
			t.Fatal(err)
		}
		var got *api.Allocation
		for _, list := range res.Plan.NodeAllocation {
			got = list[0]
		}
		if got == nil || got.NodeID != c.want {
			t.Fatalf("algorithm %q: placed %+v, want on %s", c.algo, got, c.want)
		}
		sc := got.Metrics.ScoreMetaData
		if len(sc) != 2 || sc[0].NodeID != c.want || binpack(sc[0]) <= binpack(sc[1]) {
			t.Fatalf("algorithm %q: scores %+v %+v, want %s first with the higher fit score", c.algo, sc[0], sc[1], c.want)
		}
	}
	if _, err := Schedule(st, testEval(job, 2), Options{Now: testNow, Algorithm: "tetris"}); !errors.Is(err, ErrBadOptions) {
		t.Fatalf("unknown algorithm: err = %v, want ErrBadOptions", err)
	}
}

// The two fit scores mirror each other: an empty node scores 0 for
// binpack and 1 for spread, a full one the opposite.
func TestFitScores(t *testing.T) {
	cases := []struct{ cpu, mem, bin, spr float64 }{{0, 0, 0, 1}, {1000, 1000, 1, 0}}
	for _, c := range cases {
		b := binPackScore(int64(c.cpu), 1000, int64(c.mem), 1000)
		s := spreadFitScore(int64(c.cpu), 1000, int64(c.mem), 1000)
		if b != c.bin || s != c.spr {
			t.Errorf("used %v/%v: binpack %v spread %v, want %v %v", c.cpu, c.mem, b, s, c.bin, c.spr)
		}
	}
	if b, s := binPackScore(500, 1000, 500, 1000), spreadFitScore(500, 1000, 500, 1000); b <= 0 || b >= 1 || s <= 0 || s >= 1 {
		t.Errorf("half used: binpack %v spread %v, want both inside (0,1)", b, s)
	}
}

// binpack is a score meta's binpack component.
func binpack(m *api.NodeScoreMeta) float64 {
	v, _ := m.Scores.Get("binpack")
	return v
}
