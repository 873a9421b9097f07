package fsm

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/raft"
)

// TestPredecode: a plan entry decoded ahead (the leader's path) leaves the
// same state as one decoded in Apply (a follower's), is taken once, and
// one released without being applied leaves nothing behind.
func TestPredecode(t *testing.T) {
	j := job("web")
	reg, err := Encode(JobRegisterType, JobRegisterRequest{Job: j.Copy()})
	if err != nil {
		t.Fatal(err)
	}
	req := ApplyPlanResultsRequest{Job: j}
	for k := range 50 {
		req.AllocsPlaced = append(req.AllocsPlaced, alloc(fmt.Sprintf("alloc-%02d", k), "web", fmt.Sprintf("node-%d", k%7)))
	}
	plan, err := Encode(ApplyPlanResultsType, req)
	if err != nil {
		t.Fatal(err)
	}
	leader, follower := New(Config{}), New(Config{})
	for _, f := range []*FSM{leader, follower} {
		if r := f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: reg}); r != uint64(1) {
			t.Fatalf("register: %v", r)
		}
	}
	release := leader.Predecode(plan)
	if r := leader.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: plan}); r != uint64(2) {
		t.Fatalf("leader apply: %v", r)
	}
	if n := len(leader.pre.m); n != 0 {
		t.Errorf("Apply left the predecoded entry (%d) instead of taking it", n)
	}
	release()
	// The follower's copy of the entry is other memory: it decodes it.
	if r := follower.Apply(&raft.Log{Index: 2, Type: raft.LogCommand, Data: bytes.Clone(plan)}); r != uint64(2) {
		t.Fatalf("follower apply: %v", r)
	}
	if diff := cmp.Diff(tables(t, follower.State()), tables(t, leader.State())); diff != "" {
		t.Errorf("predecoded apply differs from a decoded one (-follower +leader):\n%s", diff)
	}
	if _, ok := leader.takePredecoded(plan); ok {
		t.Error("a predecoded entry was there to take twice")
	}

	// Released before Raft applied it (leadership lost): nothing stays,
	// and a later apply of the slice decodes it.
	other, err := Encode(ApplyPlanResultsType, ApplyPlanResultsRequest{Job: j})
	if err != nil {
		t.Fatal(err)
	}
	leader.Predecode(other)()
	if n := len(leader.pre.m); n != 0 {
		t.Errorf("%d predecoded entries left after release", n)
	}
	// Other commands are not predecoded.
	leader.Predecode(reg)()
	if n := len(leader.pre.m); n != 0 {
		t.Errorf("%d entries left after predecoding a job register", n)
	}
}
