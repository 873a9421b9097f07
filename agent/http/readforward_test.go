package http_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server"
)

// follower is a server that is not the leader and names leaderURL as the
// leader's HTTP address; its own state is its own (empty) store.
type follower struct {
	*server.Server
	leaderURL string
}

func (f *follower) IsLeader() bool         { return false }
func (f *follower) LeaderHTTPAddr() string { return f.leaderURL }

// TestFollowerReadsForwarded: like Nomad, a plain read on a follower is
// answered by the leader (blocking queries included), ?stale is answered
// from the follower's own state, /v1/status/* stays local.
func TestFollowerReadsForwarded(t *testing.T) {
	leader := newTestAPI(t)
	reg := leader.register(webJob(1))
	f := newTestAPI(t, func(c *agenthttp.Config) {
		c.Server.Leadership = &follower{Server: c.Server.Leadership.(*server.Server), leaderURL: strings.TrimPrefix(leader.ts.URL, "http://")}
	})

	var job api.Job
	r := f.ok("GET", "/v1/job/web", nil, &job)
	if job.ID != "web" || headerIndex(t, r) < reg.JobModifyIndex {
		t.Errorf("plain read on a follower = job %q index %d, want the leader's job web at >= %d", job.ID, headerIndex(t, r), reg.JobModifyIndex)
	}
	if got := r.header.Get(api.HeaderKnownLeader); got != "true" {
		t.Errorf("forwarded read %s = %q, want true", api.HeaderKnownLeader, got)
	}
	var stubs []*api.JobListStub
	f.ok("GET", "/v1/jobs", nil, &stubs)
	if len(stubs) != 1 || stubs[0].ID != "web" {
		t.Errorf("plain list on a follower = %+v, want the leader's [web]", stubs)
	}
	// ?stale is served by the follower itself: its state has no job.
	f.fails("GET", "/v1/job/web?stale", nil, 404, "job_not_found")
	f.fails("GET", "/v1/job/web?stale=true", nil, 404, "job_not_found")
	f.ok("GET", "/v1/jobs?stale", nil, &stubs)
	if len(stubs) != 0 {
		t.Errorf("stale list on a follower = %+v, want its own empty state", stubs)
	}
	f.fails("GET", "/v1/job/web?stale=maybe", nil, 400, "bad_request")

	// A blocking query is held by the leader and wakes on its change.
	idx := headerIndex(t, r)
	done := make(chan *resp, 1)
	go func() { done <- f.do("GET", "/v1/job/web?wait=20s&index="+itoa(idx), nil) }()
	leader.register(webJob(2))
	select {
	case br := <-done:
		if br.status != 200 || headerIndex(t, br) <= idx || !strings.Contains(string(br.body), `"Count":2`) {
			t.Errorf("forwarded blocking query = %d index %s %s, want the new version past %d", br.status, br.header.Get(api.HeaderIndex), br.body, idx)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("forwarded blocking query did not wake on the leader's write")
	}

	// Who leads is each server's own answer.
	var l string
	f.ok("GET", "/v1/status/leader", nil, &l)
	if want := f.srv.Leader(); l != want {
		t.Errorf("status/leader on a follower = %q, want its own view %q", l, want)
	}
}

// electing is a server whose election is under way: no leader is known
// until the test elects it, which closes the channel LeaderChanged gave.
type electing struct {
	*server.Server
	mu      sync.Mutex
	elected bool
	changed chan struct{}
	looks   atomic.Int32 // IsLeader calls
}

func (e *electing) IsLeader() bool {
	e.looks.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.elected && e.Server.IsLeader()
}

func (e *electing) LeaderHTTPAddr() string { return "" }

func (e *electing) LeaderChanged() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

func (e *electing) elect() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.elected = true
	close(e.changed)
	e.changed = make(chan struct{})
}

// A write that arrives while no leader is known is held, and goes on as
// soon as the server reports a new leader, not at its next retry (the
// retry timer is stopped here: only the notification can wake it).
func TestHeldWriteResumesOnLeaderChange(t *testing.T) {
	defer agenthttp.StopHoldRetries()()
	e := &electing{changed: make(chan struct{})}
	a := newTestAPI(t, func(c *agenthttp.Config) {
		e.Server = c.Server.Leadership.(*server.Server)
		c.Server.Leadership = e
	})
	done := make(chan *resp, 1)
	go func() { done <- a.do("PUT", "/v1/jobs", webJob(1)) }()
	// Held: it has looked for a leader once.
	testproc.Eventually(t, 10*time.Second, "the write to look for a leader", func() bool { return e.looks.Load() != 0 })
	e.elect()
	select {
	case r := <-done:
		if r.status != 200 {
			t.Fatalf("held write = %d %s, want 200 once a leader is known", r.status, r.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held write did not resume when the leader changed")
	}
}
