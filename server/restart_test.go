package server

import (
	"context"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func TestRestartKeepsState(t *testing.T) {
	dir := t.TempDir()
	cfg := func() *Config {
		return &Config{DataDir: dir, BootstrapExpect: 1, BindAddr: "127.0.0.1", NumSchedulers: 1, Logger: testLogger()}
	}
	s1, err := New(cfg())
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, s1)
	registerNode(t, s1, testNode("n1", 4000, 8192))
	registerJob(t, s1, testJob("web", 2, 500, 256))
	before := waitLive(t, s1, "web", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s1.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	s2, err := New(cfg())
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { _ = s2.Shutdown(context.Background()) })
	waitLeader(t, s2)
	job, err := s2.State().JobByID(nil, api.DefaultNamespace, "web")
	if err != nil || job == nil {
		t.Fatalf("job after restart = %v, %v", job, err)
	}
	after := waitLive(t, s2, "web", 2)
	ids := map[string]bool{}
	for _, a := range before {
		ids[a.ID] = true
	}
	for _, a := range after {
		if !ids[a.ID] {
			t.Fatalf("alloc %s after restart was not there before", a.ID)
		}
	}
	if n, _ := s2.State().NodeByID(nil, "n1"); n == nil || n.SecretID != "secret-n1" {
		t.Fatalf("node after restart = %+v", n)
	}
}

func TestPlanJobAndStopAlloc(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("n1", 4000, 8192))
	registerJob(t, s, testJob("web", 1, 500, 256))
	live := waitLive(t, s, "web", 1)

	resp, err := s.Jobs().PlanJob(ctx, &api.JobPlanRequest{Job: testJob("web", 3, 500, 256), Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Diff == nil || resp.Diff.Type != api.DiffTypeEdited {
		t.Fatalf("plan diff = %+v", resp.Diff)
	}
	if resp.Annotations == nil || resp.Annotations.DesiredTGUpdates["web"] == nil || resp.Annotations.DesiredTGUpdates["web"].Place != 2 {
		t.Fatalf("plan annotations = %+v", resp.Annotations)
	}
	if got, _ := liveAllocs(s, nil, "web"); len(got) != 1 {
		t.Fatalf("plan committed something: %d live allocs", len(got))
	}
	huge, err := s.Jobs().PlanJob(ctx, &api.JobPlanRequest{Job: testJob("huge", 1, 100000, 256)})
	if err != nil {
		t.Fatal(err)
	}
	if len(huge.FailedTGAllocs) == 0 {
		t.Fatalf("plan of an unplaceable job has no FailedTGAllocs: %+v", huge)
	}

	stop, err := s.Allocs().StopAlloc(ctx, live[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	waitEvalStatus(t, s, stop.EvalID, api.EvalStatusComplete)
	repl := waitLive(t, s, "web", 1)
	if repl[0].ID == live[0].ID {
		t.Fatal("stopped alloc was not replaced")
	}
	old, _ := s.State().AllocByID(nil, live[0].ID)
	if old.DesiredStatus != api.AllocDesiredStatusStop {
		t.Fatalf("stopped alloc desired %q", old.DesiredStatus)
	}
}

// Blocked evals survive a restart: the new leader restores them into the
// tracker and a node joining wakes them.
func TestRestartRestoresBlockedEvals(t *testing.T) {
	dir := t.TempDir()
	cfg := func() *Config {
		return &Config{DataDir: dir, BootstrapExpect: 1, BindAddr: "127.0.0.1", NumSchedulers: 1, Logger: testLogger()}
	}
	s1, err := New(cfg())
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, s1)
	resp := registerJob(t, s1, testJob("web", 1, 500, 256))
	e := waitEvalStatus(t, s1, resp.EvalID, api.EvalStatusComplete)
	if e.BlockedEval == "" {
		t.Fatal("no blocked eval without nodes")
	}
	waitEvalStatus(t, s1, e.BlockedEval, api.EvalStatusBlocked)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := New(cfg())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s2.Shutdown(context.Background()) })
	waitLeader(t, s2)
	// Ready: the stored evals were handed to the broker and the tracker.
	if n := s2.blocked.Stats().TotalBlocked; n != 1 {
		t.Fatalf("%d blocked evals restored, want 1", n)
	}
	registerNode(t, s2, testNode("n1", 4000, 8192))
	waitLive(t, s2, "web", 1)
}
