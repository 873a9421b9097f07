package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

func TestNextRollout(t *testing.T) {
	const (
		pe = api.DeploymentStatusPending
		ru = api.DeploymentStatusRunning
		bl = api.DeploymentStatusBlocked
		su = api.DeploymentStatusSuccessful
		fa = api.DeploymentStatusFailed
		ca = api.DeploymentStatusCancelled
	)
	mr := func(par int, onFailure string) *api.Multiregion {
		m := &api.Multiregion{Strategy: &api.MultiregionStrategy{MaxParallel: par, OnFailure: onFailure}}
		for _, r := range []string{"a", "b", "c", "d"} {
			m.Regions = append(m.Regions, &api.MultiregionRegion{Name: r})
		}
		return m
	}
	tests := []struct {
		name   string
		m      *api.Multiregion
		status map[string]string
		want   rolloutActions
	}{
		{"first region starts", mr(1, ""), map[string]string{"a": pe, "b": pe, "c": pe, "d": pe}, rolloutActions{Run: []string{"a"}}},
		{"no strategy: all at once", &api.Multiregion{Regions: mr(0, "").Regions},
			map[string]string{"a": pe, "b": pe, "c": pe, "d": pe}, rolloutActions{Run: []string{"a", "b", "c", "d"}}},
		{"one running: wait", mr(1, ""), map[string]string{"a": ru, "b": pe, "c": pe, "d": pe}, rolloutActions{}},
		{"finished region hands on in order", mr(1, ""), map[string]string{"a": bl, "b": pe, "c": pe, "d": pe}, rolloutActions{Run: []string{"b"}}},
		{"two at a time", mr(2, ""), map[string]string{"a": bl, "b": ru, "c": pe, "d": pe}, rolloutActions{Run: []string{"c"}}},
		{"a paused region holds its slot", mr(1, ""), map[string]string{"a": api.DeploymentStatusPaused, "b": pe}, rolloutActions{}},
		{"all finished: unblock", mr(1, ""), map[string]string{"a": bl, "b": bl, "c": bl, "d": bl}, rolloutActions{Unblock: []string{"a", "b", "c", "d"}}},
		{"unblock the rest after a partial unblock", mr(1, ""), map[string]string{"a": su, "b": bl, "c": su, "d": bl}, rolloutActions{Unblock: []string{"b", "d"}}},
		{"a cancelled region takes no part", mr(1, ""), map[string]string{"a": bl, "b": ca, "c": bl, "d": ca}, rolloutActions{Unblock: []string{"a", "c"}}},
		{"a region without a deployment yet keeps its turn", mr(1, ""), map[string]string{"b": pe, "c": pe}, rolloutActions{}},
		{"and blocks the unblock", mr(1, ""), map[string]string{"a": bl, "b": bl, "c": bl}, rolloutActions{Run: nil}},
		{"a later region runs once the missing one passed", mr(2, ""), map[string]string{"b": pe, "c": pe}, rolloutActions{Run: []string{"b"}}},
		{"nothing finished: nothing to unblock", mr(0, ""), map[string]string{"a": su, "b": su}, rolloutActions{}},
		{"default: the failed region and those after it", mr(1, ""), map[string]string{"a": bl, "b": fa, "c": pe, "d": pe},
			rolloutActions{Fail: []string{"c", "d"}}},
		{"default: a region running before the failure goes on", mr(2, ""), map[string]string{"a": ru, "b": fa, "c": pe, "d": su},
			rolloutActions{Fail: []string{"c"}}},
		{"fail_all", mr(1, api.MultiregionFailAll), map[string]string{"a": bl, "b": fa, "c": pe, "d": pe},
			rolloutActions{Fail: []string{"a", "c", "d"}}},
		{"fail_all leaves successful regions", mr(0, api.MultiregionFailAll), map[string]string{"a": su, "b": fa, "c": bl, "d": ca},
			rolloutActions{Fail: []string{"c"}}},
		{"fail_local goes on", mr(1, api.MultiregionFailLocal), map[string]string{"a": bl, "b": fa, "c": pe, "d": pe},
			rolloutActions{Run: []string{"c"}}},
		{"fail_local: the rest wait blocked", mr(1, api.MultiregionFailLocal), map[string]string{"a": bl, "b": fa, "c": bl, "d": bl},
			rolloutActions{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := nextRollout(tc.m, tc.status)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); diff != "" {
				t.Errorf("nextRollout(%v) (-want +got):\n%s", tc.status, diff)
			}
			if again := nextRollout(tc.m, applyActs(tc.status, got)); len(again.Fail)+len(again.Unblock) > 0 {
				t.Errorf("after applying %+v the next step fails or unblocks again: %+v", got, again)
			}
		})
	}
}

// applyActs is status after acts succeeded.
func applyActs(status map[string]string, acts rolloutActions) map[string]string {
	out := map[string]string{}
	for k, v := range status {
		out[k] = v
	}
	for _, r := range acts.Run {
		out[r] = api.DeploymentStatusRunning
	}
	for _, r := range acts.Fail {
		out[r] = api.DeploymentStatusFailed
	}
	for _, r := range acts.Unblock {
		out[r] = api.DeploymentStatusSuccessful
	}
	return out
}

func TestMultiregionTarget(t *testing.T) {
	for _, tc := range []struct {
		versions []int // -1: absent
		want     uint64
	}{
		{[]int{-1, -1}, 0},
		{[]int{0, -1}, 1},
		{[]int{3, 7, -1}, 8},
	} {
		var jobs []*api.Job
		for _, v := range tc.versions {
			if v < 0 {
				jobs = append(jobs, nil)
			} else {
				jobs = append(jobs, &api.Job{Version: uint64(v)})
			}
		}
		if got := multiregionTarget(jobs); got != tc.want {
			t.Errorf("multiregionTarget(%v) = %d, want %d", tc.versions, got, tc.want)
		}
	}
}

// mrFederation is a federation of in-process servers, each behind the few
// API routes multiregion jobs use (the agent's real HTTP layer lives in
// agent/http, which this package cannot import).
type mrFederation struct {
	mu      sync.Mutex
	servers map[string]*Server
	urls    map[string]string
	tokens  map[string][]string // the ACL tokens each region's registrations came with
}

func (f *mrFederation) Known() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for r := range f.urls {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (f *mrFederation) Client(region, token string) (*api.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.urls[region]
	if !ok {
		return nil, api.Errorf(api.ErrUnknownRegion, "unknown region "+region)
	}
	c := api.NewClient(u)
	c.Token = token
	return c, nil
}

func (f *mrFederation) handler(region string) http.Handler {
	srv := func() *Server {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.servers[region]
	}
	reply := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			api.WriteError(w, api.AsError(err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	jobOr404 := func(s *Server, ns, id string) (*api.Job, error) {
		if ns == "" {
			ns = api.DefaultNamespace
		}
		j, err := s.State().JobByID(nil, ns, id)
		if err == nil && j == nil {
			err = api.ErrJobNotFound
		}
		return j, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/job/{id}", func(w http.ResponseWriter, r *http.Request) {
		j, err := jobOr404(srv(), r.URL.Query().Get("namespace"), r.PathValue("id"))
		reply(w, j, err)
	})
	mux.HandleFunc("GET /v1/job/{id}/deployments", func(w http.ResponseWriter, r *http.Request) {
		s, ns := srv(), r.URL.Query().Get("namespace")
		if _, err := jobOr404(s, ns, r.PathValue("id")); err != nil {
			reply(w, nil, err)
			return
		}
		ds, err := s.State().DeploymentsByJobID(nil, api.DefaultNamespace, r.PathValue("id"))
		reply(w, ds, err)
	})
	mux.HandleFunc("PUT /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		var req api.JobRegisterRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			reply(w, nil, api.Errorf(api.ErrBadRequest, err.Error()))
			return
		}
		f.mu.Lock()
		f.tokens[region] = append(f.tokens[region], r.Header.Get(api.HeaderToken))
		f.mu.Unlock()
		resp, err := srv().Jobs().RegisterJob(WithCallerToken(r.Context(), r.Header.Get(api.HeaderToken)), &req)
		reply(w, resp, err)
	})
	mux.HandleFunc("POST /v1/deployment/{verb}/{id}", func(w http.ResponseWriter, r *http.Request) {
		dp, id := srv().Deployments(), r.PathValue("id")
		var resp *api.DeploymentUpdateResponse
		var err error
		switch r.PathValue("verb") {
		case "run":
			resp, err = dp.RunDeployment(r.Context(), id)
		case "fail":
			resp, err = dp.FailDeployment(r.Context(), id)
		case "unblock":
			resp, err = dp.UnblockDeployment(r.Context(), id)
		default:
			err = api.ErrNotFound
		}
		reply(w, resp, err)
	})
	return mux
}

// newFederation starts one in-process server per region (two nodes
// each) on one fake clock, federated through mrFederation.
func newMRFederation(t *testing.T, regions ...string) (*mrFederation, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(testT0)
	f := &mrFederation{servers: map[string]*Server{}, urls: map[string]string{}, tokens: map[string][]string{}}
	for _, r := range regions {
		hs := httptest.NewServer(f.handler(r))
		t.Cleanup(hs.Close)
		f.urls[r] = hs.URL
	}
	for _, r := range regions {
		s := newTestServer(t, withClock(clk), func(c *Config) {
			c.Region, c.Regions = r, f
			c.HeartbeatTTLMin = 24 * time.Hour
			c.NackTimeout = 24 * time.Hour
		})
		for i := range 2 {
			registerNode(t, s, testNode(fmt.Sprintf("%s-node-%d", r, i), 4000, 8192))
		}
		f.mu.Lock()
		f.servers[r] = s
		f.mu.Unlock()
	}
	return f, clk
}

// multiregionJob is "web" in regions a, b, c (b with two allocs), rolled
// out one region at a time.
func multiregionJob(onFailure string) *api.Job {
	j := testJob("web", 0, 100, 64)
	j.Update = &api.UpdateStrategy{MaxParallel: 1, MinHealthyTime: 10 * time.Second, AutoRevert: false}
	j.Multiregion = &api.Multiregion{
		Strategy: &api.MultiregionStrategy{MaxParallel: 1, OnFailure: onFailure},
		Regions: []*api.MultiregionRegion{{Name: "a", Count: 1}, {Name: "b", Count: 2, Meta: map[string]string{"tier": "b"}},
			{Name: "c", Count: 1}},
	}
	return j
}

// deployRegion plays region r's clients: its allocs of the job report
// running, and min_healthy_time passes.
func deployRegion(t *testing.T, s *Server, clk *clock.Fake, n int, status string) {
	t.Helper()
	allocs := waitLive(t, s, "web", n)
	reportTasks(t, s, status, clk.Now(), allocs...)
	clk.Advance(10 * time.Second)
}

// noAllocs checks that s placed nothing of the job.
func noAllocs(t *testing.T, s *Server, why string) {
	t.Helper()
	live, err := liveAllocs(s, nil, "web")
	if err != nil || len(live) != 0 {
		t.Fatalf("%s: %d allocs (%v), want none", why, len(live), err)
	}
}

// TestMultiregionRollout: a job registered in region a with the caller's
// token is registered, with the same version and its region's
// parameters, in a, b and c; b and c place nothing until their turn; each
// region's finished deployment waits blocked; when c finishes, all three
// are successful.
func TestMultiregionRollout(t *testing.T) {
	f, clk := newMRFederation(t, "a", "b", "c")
	a, b, c := f.servers["a"], f.servers["b"], f.servers["c"]
	ctx := WithCallerToken(context.Background(), "caller-secret")
	if _, err := a.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: multiregionJob("")}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"b", "c"} {
		if got := f.tokens[r]; !slices.Equal(got, []string{"caller-secret"}) {
			t.Errorf("registrations in %s came with tokens %q, want the caller's", r, got)
		}
	}
	for r, want := range map[string]int{"a": 1, "b": 2, "c": 1} {
		j, err := f.servers[r].State().JobByID(nil, api.DefaultNamespace, "web")
		if err != nil || j == nil {
			t.Fatalf("job in %s: %v %v", r, j, err)
		}
		if j.Region != r || j.Version != 0 || j.TaskGroups[0].Count != want || j.Multiregion == nil {
			t.Errorf("job in %s: region %q version %d count %d multiregion %v, want %s 0 %d set", r, j.Region, j.Version,
				j.TaskGroups[0].Count, j.Multiregion != nil, r, want)
		}
		if r == "b" && j.Meta["tier"] != "b" {
			t.Errorf("job in b: meta %v, want the region's tier=b", j.Meta)
		}
	}
	waitDeployment(t, a, 0, api.DeploymentStatusRunning)
	waitDeployment(t, b, 0, api.DeploymentStatusPending)
	waitDeployment(t, c, 0, api.DeploymentStatusPending)
	noAllocs(t, b, "b before its turn")
	noAllocs(t, c, "c before its turn")

	deployRegion(t, a, clk, 1, api.AllocClientStatusRunning)
	waitDeployment(t, a, 0, api.DeploymentStatusBlocked)
	waitDeployment(t, b, 0, api.DeploymentStatusRunning)
	noAllocs(t, c, "c while b deploys")

	deployRegion(t, b, clk, 2, api.AllocClientStatusRunning)
	waitDeployment(t, b, 0, api.DeploymentStatusBlocked)
	waitDeployment(t, c, 0, api.DeploymentStatusRunning)
	if d := waitDeployment(t, a, 0, api.DeploymentStatusBlocked); d.Status != api.DeploymentStatusBlocked {
		t.Fatalf("a is %s before c finished, want blocked", d.Status)
	}

	deployRegion(t, c, clk, 1, api.AllocClientStatusRunning)
	for _, s := range []*Server{a, b, c} {
		waitDeployment(t, s, 0, api.DeploymentStatusSuccessful)
		waitStable(t, s, 0)
	}
}

// TestMultiregionRolloutFailure: b's deployment fails after a finished.
// With on_failure "fail_all" a (blocked) and c (pending) fail too; with
// the default c fails and a stays blocked; c never places anything.
func TestMultiregionRolloutFailure(t *testing.T) {
	for _, tc := range []struct {
		onFailure string
		aAfter    string
	}{
		{api.MultiregionFailAll, api.DeploymentStatusFailed},
		{api.MultiregionFailDefault, api.DeploymentStatusBlocked},
	} {
		t.Run(fmt.Sprintf("on_failure=%q", tc.onFailure), func(t *testing.T) {
			f, clk := newMRFederation(t, "a", "b", "c")
			a, b, c := f.servers["a"], f.servers["b"], f.servers["c"]
			registerJob(t, a, multiregionJob(tc.onFailure))
			waitDeployment(t, a, 0, api.DeploymentStatusRunning)
			deployRegion(t, a, clk, 1, api.AllocClientStatusRunning)
			waitDeployment(t, b, 0, api.DeploymentStatusRunning)

			deployRegion(t, b, clk, 2, api.AllocClientStatusFailed)
			waitDeployment(t, b, 0, api.DeploymentStatusFailed)
			waitDeployment(t, c, 0, api.DeploymentStatusFailed)
			waitDeployment(t, a, 0, tc.aAfter)
			noAllocs(t, c, "c after b failed")
			if tc.aAfter == api.DeploymentStatusBlocked {
				// An operator unblocks a: nothing else moves.
				d := waitDeployment(t, a, 0, api.DeploymentStatusBlocked)
				if _, err := a.Deployments().UnblockDeployment(context.Background(), d.ID); err != nil {
					t.Fatal(err)
				}
				waitDeployment(t, a, 0, api.DeploymentStatusSuccessful)
			}
		})
	}
}

// TestMultiregionRegisterErrors: a job naming a region the server cannot
// reach is refused (nothing registered), and Run/Unblock refuse a
// deployment in the wrong state.
func TestMultiregionRegisterErrors(t *testing.T) {
	f, _ := newMRFederation(t, "a", "b")
	a := f.servers["a"]
	j := multiregionJob("")
	_, err := a.Jobs().RegisterJob(context.Background(), &api.JobRegisterRequest{Job: j}) // c is unknown
	if !errors.Is(err, api.ErrUnknownRegion) {
		t.Fatalf("register with unknown region c: %v, want unknown_region", err)
	}
	for r, s := range f.servers {
		if got, _ := s.State().JobByID(nil, api.DefaultNamespace, "web"); got != nil {
			t.Errorf("region %s has the job after a refused registration", r)
		}
	}
	j.Multiregion.Regions = j.Multiregion.Regions[:2]
	registerJob(t, a, j)
	d := waitDeployment(t, a, 0, api.DeploymentStatusRunning)
	if _, err := a.Deployments().UnblockDeployment(context.Background(), d.ID); !errors.Is(err, api.ErrConflict) {
		t.Errorf("unblock a running deployment: %v, want conflict", err)
	}
	if _, err := a.Deployments().RunDeployment(context.Background(), d.ID); !errors.Is(err, api.ErrConflict) {
		t.Errorf("run a running deployment: %v, want conflict", err)
	}
	waitState(t, f.servers["b"], "b's pending deployment", func(ws memdb.WatchSet) (bool, error) {
		ds, err := f.servers["b"].State().DeploymentsByJobID(ws, api.DefaultNamespace, "web")
		return len(ds) == 1 && ds[0].Status == api.DeploymentStatusPending, err
	})
}

// TestMultiregionVersionLockstep: every region gets the same version of
// a multiregion job, one above the highest any region held, so each
// region's deployment of it is found by version; registering it again
// unchanged makes no new version anywhere.
func TestMultiregionVersionLockstep(t *testing.T) {
	f, _ := newMRFederation(t, "a", "b")
	a, b := f.servers["a"], f.servers["b"]
	for i := range 3 {
		j := testJob("web", 1, 100, 64)
		j.TaskGroups[0].Tasks[0].Config["args"] = []any{fmt.Sprint(i)}
		registerJob(t, b, j) // b: versions 0, 1, 2
	}
	j := multiregionJob("")
	j.Multiregion.Regions = j.Multiregion.Regions[:2]
	registerJob(t, a, j)
	for r, s := range map[string]*Server{"a": a, "b": b} {
		got, err := s.State().JobByID(nil, api.DefaultNamespace, "web")
		if err != nil || got == nil || got.Version != 3 {
			t.Fatalf("job in %s: %+v %v, want version 3", r, got, err)
		}
	}
	waitDeployment(t, a, 3, api.DeploymentStatusRunning)
	waitDeployment(t, b, 3, api.DeploymentStatusPending)
	registerJob(t, a, multiregionJobIn("a", "b"))
	for r, s := range map[string]*Server{"a": a, "b": b} {
		if got, _ := s.State().JobByID(nil, api.DefaultNamespace, "web"); got.Version != 3 {
			t.Errorf("job in %s after an unchanged register: version %d, want 3", r, got.Version)
		}
	}
}

// multiregionJobIn is multiregionJob in the first regions named.
func multiregionJobIn(regions ...string) *api.Job {
	j := multiregionJob("")
	j.Multiregion.Regions = j.Multiregion.Regions[:len(regions)]
	return j
}
