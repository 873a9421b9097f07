package fsm

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

// TestApplyIsDeterministic: two FSMs fed the same log hold equal state,
// which is what keeps Raft replicas identical.
func TestApplyIsDeterministic(t *testing.T) {
	a, b := tables(t, populated(t).State()), tables(t, populated(t).State())
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("replicas diverge (-a +b):\n%s", diff)
	}
}

// BenchmarkApplyPlan1000 measures decoding and applying one plan of 1,000
// placements (the job sent once, allocs without it) on 5,000 nodes.
func BenchmarkApplyPlan1000(b *testing.B) {
	j := job("web")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := New(Config{})
		reg, _ := Encode(JobRegisterType, JobRegisterRequest{Job: j.Copy()})
		f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: reg})
		req := ApplyPlanResultsRequest{Job: j}
		for k := 0; k < 1000; k++ {
			req.AllocsPlaced = append(req.AllocsPlaced, alloc(fmt.Sprintf("alloc-%d-%04d", i, k), "web",
				fmt.Sprintf("node-%04d", k%5000)))
		}
		data, err := Encode(ApplyPlanResultsType, req)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if resp := f.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: data}); resp != uint64(2) {
			b.Fatalf("apply: %v", resp)
		}
	}
}

// BenchmarkEncodePlan1000 measures building the Raft entry of a plan of
// 1,000 placements (what the plan applier does before each commit).
func BenchmarkEncodePlan1000(b *testing.B) {
	req := ApplyPlanResultsRequest{Job: job("web")}
	for k := 0; k < 1000; k++ {
		req.AllocsPlaced = append(req.AllocsPlaced, alloc(fmt.Sprintf("alloc-%04d", k), "web", fmt.Sprintf("node-%04d", k)))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(ApplyPlanResultsType, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePlan1000 measures splitting a 1,000-placement plan entry
// into type and body (every server does it for every entry).
func BenchmarkDecodePlan1000(b *testing.B) {
	req := ApplyPlanResultsRequest{Job: job("web")}
	for k := 0; k < 1000; k++ {
		req.AllocsPlaced = append(req.AllocsPlaced, alloc(fmt.Sprintf("alloc-%04d", k), "web", fmt.Sprintf("node-%04d", k)))
	}
	data, err := Encode(ApplyPlanResultsType, req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
