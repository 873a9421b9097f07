package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// fakeRegion is another region's API as spill-over uses it: a dry-run
// plan and a registration, answered by a real in-memory server of that
// region (its scheduler, nodes and queues) or, with plan set, canned.
type fakeRegion struct {
	srv  *Server
	plan *api.JobPlanResponse

	mu         sync.Mutex
	registered []*api.Job
}

func (f *fakeRegion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(err error) { api.WriteError(w, api.AsError(err)) }
	reply := func(v any) { w.Header().Set("Content-Type", "application/json"); _ = json.NewEncoder(w).Encode(v) }
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/plan"):
		var req api.JobPlanRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(err)
			return
		}
		if f.plan != nil {
			reply(f.plan)
			return
		}
		resp, err := f.srv.Jobs().PlanJob(r.Context(), &req)
		if err != nil {
			fail(err)
			return
		}
		reply(resp)
	case r.Method == http.MethodPut && r.URL.Path == "/v1/jobs":
		var req api.JobRegisterRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(err)
			return
		}
		f.mu.Lock()
		f.registered = append(f.registered, req.Job)
		f.mu.Unlock()
		if f.srv == nil {
			reply(&api.JobRegisterResponse{})
			return
		}
		resp, err := f.srv.Jobs().RegisterJob(r.Context(), &req)
		if err != nil {
			fail(err)
			return
		}
		reply(resp)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeRegion) jobs() []*api.Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.registered)
}

// fakeRegions is server.Regions over fakeRegions (down: known but not
// answering).
type fakeRegions struct {
	home string
	urls map[string]string
	down map[string]bool
}

func newFakeRegions(t testing.TB, home string, regions map[string]*fakeRegion) *fakeRegions {
	fr := &fakeRegions{home: home, urls: map[string]string{}, down: map[string]bool{}}
	for name, r := range regions {
		ts := httptest.NewServer(r)
		t.Cleanup(ts.Close)
		fr.urls[name] = ts.URL
	}
	return fr
}

func (f *fakeRegions) Known() []string {
	return slices.Sorted(maps.Keys(f.urls))
}

func (f *fakeRegions) Client(region, _ string) (*api.Client, error) {
	u, ok := f.urls[region]
	switch {
	case !ok:
		return nil, api.Errorf(api.ErrUnknownRegion, "unknown region "+region)
	case f.down[region]:
		return nil, api.Errorf(api.ErrRegionUnavailable, "region "+region+" has no live server")
	}
	return api.NewClient(u), nil
}

var _ Regions = (*fakeRegions)(nil)

// spillGangJob is a gang of n members of gpus GPUs each that may spill
// to regions after 5 minutes.
func spillGangJob(id string, n, gpus int, regions ...string) *api.Job {
	j := defragGPUJob(id, gpus)
	j.TaskGroups[0].Count = n
	j.Gang = &api.Gang{Min: n}
	j.Placement = &api.Placement{Regions: regions, Mode: api.PlacementSpill, SpillAfter: 5 * time.Minute}
	return j
}

func waitBlocked(t *testing.T, s *Server, jobID string) {
	t.Helper()
	waitIdle(t, s)
	evals, err := s.State().EvalsByJob(nil, api.DefaultNamespace, jobID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evals, func(e *api.Evaluation) bool { return e.Status == api.EvalStatusBlocked }) {
		t.Fatalf("job %s has no blocked eval", jobID)
	}
}

// TestSpillGangAfterSpillAfter: a gang of 2 x 4 GPUs cannot run in its
// home region eu (one 4-GPU node). Before spill_after nothing moves; at
// spill_after the leader asks ap (one 4-GPU node: no room) and us (two
// 4-GPU nodes: fits now), registers the gang in us with its home
// recorded, and stops it at home with where it went and why.
func TestSpillGangAfterSpillAfter(t *testing.T) {
	clk := clock.NewFake(testT0)
	home := newTestServer(t, withClock(clk), func(c *Config) { c.Region = "eu"; c.HeartbeatTTLMin = 24 * time.Hour })
	ap := newTestServer(t, func(c *Config) { c.Region = "ap" })
	us := newTestServer(t, func(c *Config) { c.Region = "us" })
	registerNode(t, home, defragGPUNode("eu-1", 4))
	registerNode(t, ap, defragGPUNode("ap-1", 4))
	registerNode(t, us, defragGPUNode("us-1", 4))
	registerNode(t, us, defragGPUNode("us-2", 4))
	apr, usr := &fakeRegion{srv: ap}, &fakeRegion{srv: us}
	regions := newFakeRegions(t, "eu", map[string]*fakeRegion{"ap": apr, "us": usr, "eu": {srv: home}})

	registerJob(t, home, spillGangJob("train", 2, 4, "eu", "ap", "us"))
	waitBlocked(t, home, "train")
	sp := &spiller{serverCore: home.core.named("spill"), regions: regions, home: "eu"}
	ctx := context.Background()

	clk.Advance(4*time.Minute + 59*time.Second)
	if n, err := sp.round(ctx); err != nil || n != 0 {
		t.Fatalf("round before spill_after = %d moved, %v; want 0", n, err)
	}
	if got := usr.jobs(); len(got) != 0 {
		t.Fatalf("registered in us before spill_after: %d jobs", len(got))
	}

	clk.Advance(time.Second)
	if n, err := sp.round(ctx); err != nil || n != 1 {
		t.Fatalf("round at spill_after = %d moved, %v; want 1", n, err)
	}
	if got := apr.jobs(); len(got) != 0 {
		t.Errorf("registered in ap, which has no room: %d jobs", len(got))
	}
	moved, err := us.State().JobByID(nil, api.DefaultNamespace, "train")
	if err != nil || moved == nil {
		t.Fatalf("job in us = %v, %v; want registered", moved, err)
	}
	if moved.Region != "us" || moved.Meta[api.MetaSpilledFrom] != "eu" {
		t.Errorf("job in us: region %q, spilled_from %q; want us, eu", moved.Region, moved.Meta[api.MetaSpilledFrom])
	}
	waitLive(t, us, "train", 2) // the whole gang runs in us

	waitIdle(t, home)
	stopped, _ := home.State().JobByID(nil, api.DefaultNamespace, "train")
	to, reason := stopped.SpilledTo()
	if !stopped.Stop || to != "us" {
		t.Fatalf("job at home: stop %v, spilled to %q; want stopped, us", stopped.Stop, to)
	}
	want := "no room in eu for 5m0s (gang of 2 x 4 GPUs); us fits now"
	if reason != want {
		t.Errorf("spill reason = %q, want %q", reason, want)
	}
	if stopped.Version == 0 {
		t.Errorf("home job version 0: the spill must add a version (history kept)")
	}
	// The stop's eval drops the blocked one (cancelled by the reaper).
	waitState(t, home, "no blocked eval at home", func(ws memdb.WatchSet) (bool, error) {
		evals, err := home.State().EvalsByJob(ws, api.DefaultNamespace, "train")
		return !slices.ContainsFunc(evals, func(e *api.Evaluation) bool { return e.Status == api.EvalStatusBlocked }), err
	})
	// Spilled once: the next round moves nothing, here or there.
	if n, err := sp.round(ctx); err != nil || n != 0 {
		t.Errorf("second round = %d moved, %v; want 0", n, err)
	}
}

// TestSpillNeverMovesPlacedWork: jobs with live allocs stay home however
// long the rest waits, and a job that fits at home is never asked about.
func TestSpillNeverMovesPlacedWork(t *testing.T) {
	clk := clock.NewFake(testT0)
	home := newTestServer(t, withClock(clk), func(c *Config) { c.Region = "eu"; c.HeartbeatTTLMin = 24 * time.Hour })
	us := newTestServer(t, func(c *Config) { c.Region = "us" })
	registerNode(t, home, defragGPUNode("eu-1", 4))
	registerNode(t, us, defragGPUNode("us-1", 8))
	registerNode(t, us, defragGPUNode("us-2", 8)) // room for all of it
	usr := &fakeRegion{srv: us}
	regions := newFakeRegions(t, "eu", map[string]*fakeRegion{"us": usr})

	// half: one group placed (1 GPU), one waiting (8 GPUs).
	half := spillGangJob("half", 1, 1, "eu", "us")
	half.Gang = nil
	big := defragGPUJob("x", 8).TaskGroups[0]
	big.Name = "big"
	half.TaskGroups = append(half.TaskGroups, big)
	registerJob(t, home, half)
	waitBlocked(t, home, "half")
	waitLive(t, home, "half", 1)
	// fits: placed at home.
	registerJob(t, home, spillGangJob("fits", 1, 2, "eu", "us"))
	waitLive(t, home, "fits", 1)

	clk.Advance(time.Hour)
	sp := &spiller{serverCore: home.core.named("spill"), regions: regions, home: "eu"}
	if n, err := sp.round(context.Background()); err != nil || n != 0 {
		t.Fatalf("round = %d moved, %v; want 0", n, err)
	}
	if got := usr.jobs(); len(got) != 0 {
		t.Fatalf("registered %d jobs in us; want none (placed work never moves)", len(got))
	}
	for _, id := range []string{"half", "fits"} {
		if j, _ := home.State().JobByID(nil, api.DefaultNamespace, id); j.Stop {
			t.Errorf("job %s stopped at home", id)
		}
	}
}

// TestSpillSoonestRegion: with canned answers, a region that fits now
// wins over one listed first that fits only after preemption; a region
// that is down, or fits nowhere, is passed over; nothing moves when none
// fits.
func TestSpillSoonestRegion(t *testing.T) {
	clk := clock.NewFake(testT0)
	home := newTestServer(t, withClock(clk), func(c *Config) { c.Region = "eu"; c.HeartbeatTTLMin = 24 * time.Hour })
	registerNode(t, home, defragGPUNode("eu-1", 4))
	preempt := &api.JobPlanResponse{Annotations: &api.PlanAnnotations{PreemptedAllocs: []*api.AllocListStub{{ID: "x"}}}}
	never := &api.JobPlanResponse{FailedTGAllocs: map[string]*api.AllocMetric{"web": {GangFailure: "gang job needs 2 members, 1 fits"}}}
	now := &api.JobPlanResponse{}
	ap, us, sa, down := &fakeRegion{plan: preempt}, &fakeRegion{plan: now}, &fakeRegion{plan: never}, &fakeRegion{plan: now}
	regions := newFakeRegions(t, "eu", map[string]*fakeRegion{"ap": ap, "us": us, "sa": sa, "down": down})
	regions.down["down"] = true

	registerJob(t, home, spillGangJob("train", 2, 4, "down", "sa", "ap", "us"))
	waitBlocked(t, home, "train")
	clk.Advance(5 * time.Minute)
	sp := &spiller{serverCore: home.core.named("spill"), regions: regions, home: "eu"}
	if n, err := sp.round(context.Background()); err != nil || n != 1 {
		t.Fatalf("round = %d moved, %v; want 1", n, err)
	}
	for name, r := range map[string]*fakeRegion{"ap": ap, "sa": sa, "down": down} {
		if len(r.jobs()) != 0 {
			t.Errorf("registered in %s; want us (fits now)", name)
		}
	}
	if len(us.jobs()) != 1 {
		t.Fatalf("registered %d jobs in us, want 1", len(us.jobs()))
	}

	// None fits: the job stays, blocked, at home.
	us.plan, ap.plan = never, never
	registerJob(t, home, spillGangJob("stay", 2, 4, "sa", "ap", "us"))
	waitBlocked(t, home, "stay")
	clk.Advance(10 * time.Minute)
	if n, err := sp.round(context.Background()); err != nil || n != 0 {
		t.Fatalf("round with no room anywhere = %d moved, %v; want 0", n, err)
	}
	if j, _ := home.State().JobByID(nil, api.DefaultNamespace, "stay"); j.Stop {
		t.Errorf("job stay stopped though it fits nowhere")
	}
}

func TestChooseSpill(t *testing.T) {
	fits := []regionFit{
		{Region: "a", Rank: fitPreempt}, {Region: "b", Rank: fitNever}, {Region: "c", Rank: fitNow}, {Region: "d", Rank: fitNow},
	}
	for _, tc := range []struct {
		order []string
		want  []string
	}{
		{[]string{"a", "b", "c", "d"}, []string{"c", "d", "a"}},
		{[]string{"d", "c", "b", "a"}, []string{"d", "c", "a"}},
	} {
		var got []string
		for _, f := range chooseSpill(tc.order, fits) {
			got = append(got, f.Region)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("chooseSpill(%v) = %v, want %v", tc.order, got, tc.want)
		}
	}
}

func TestPlanFit(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp *api.JobPlanResponse
		want fitRank
	}{
		{"empty", &api.JobPlanResponse{}, fitNow},
		{"preempt", &api.JobPlanResponse{Annotations: &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{"web": {Place: 2, Preemptions: 1}}}}, fitPreempt},
		{"failed", &api.JobPlanResponse{FailedTGAllocs: map[string]*api.AllocMetric{"web": {QuotaExhausted: []string{"gpu"}}}}, fitNever},
	} {
		if got := planFit("r", tc.resp); got.Rank != tc.want {
			t.Errorf("%s: rank %v, want %v", tc.name, got.Rank, tc.want)
		}
	}
}

func TestSpillDutyWired(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.Regions = &fakeRegions{} })
	if !slices.ContainsFunc(s.leaderDuties(time.Now()), func(d leaderDuty) bool { _, ok := d.(*spiller); return ok }) {
		t.Errorf("no spill duty with Config.Regions set")
	}
}

// TestSpillRespectsQueues: the job's queue as each region has it. In ap
// its queue's limit (4 GPUs) keeps the gang out though nodes have room;
// us has room but no such queue, so registering there fails and it is
// passed over; sa, with the queue and room, takes it.
func TestSpillRespectsQueues(t *testing.T) {
	clk := clock.NewFake(testT0)
	ctx := context.Background()
	home := newTestServer(t, withClock(clk), func(c *Config) { c.Region = "eu"; c.HeartbeatTTLMin = 24 * time.Hour })
	regions := map[string]*fakeRegion{}
	for _, r := range []string{"ap", "us", "sa"} {
		s := newTestServer(t, func(c *Config) { c.Region = r })
		registerNode(t, s, defragGPUNode(r+"-1", 8))
		regions[r] = &fakeRegion{srv: s}
	}
	registerNode(t, home, defragGPUNode("eu-1", 4))
	for s, limit := range map[*Server]*api.QueueResources{home: nil, regions["ap"].srv: {GPUs: 4}, regions["sa"].srv: nil} {
		if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "research", Limit: limit}}); err != nil {
			t.Fatalf("queue: %v", err)
		}
	}
	job := spillGangJob("train", 2, 4, "eu", "ap", "us", "sa")
	job.Queue = "research"
	registerJob(t, home, job)
	waitBlocked(t, home, "train")
	clk.Advance(5 * time.Minute)
	sp := &spiller{serverCore: home.core.named("spill"), regions: newFakeRegions(t, "eu", regions), home: "eu"}
	if n, err := sp.round(ctx); err != nil || n != 1 {
		t.Fatalf("round = %d moved, %v; want 1", n, err)
	}
	if j, _ := regions["ap"].srv.State().JobByID(nil, api.DefaultNamespace, "train"); j != nil {
		t.Errorf("registered in ap, whose queue limit keeps it out")
	}
	if j, _ := regions["us"].srv.State().JobByID(nil, api.DefaultNamespace, "train"); j != nil {
		t.Errorf("registered in us, which has no queue research")
	}
	waitLive(t, regions["sa"].srv, "train", 2)
	if j, _ := home.State().JobByID(nil, api.DefaultNamespace, "train"); j.Meta[api.MetaSpilledTo] != "sa" {
		t.Errorf("home job spilled to %q, want sa", j.Meta[api.MetaSpilledTo])
	}
}
