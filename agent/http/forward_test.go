package http_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
)

// TestForwardToServers: an agent without the server role proxies server
// API calls to its servers, skipping an unreachable one for reads.
func TestForwardToServers(t *testing.T) {
	a := newTestAPI(t)
	a.register(webJob(1))
	h, err := agenthttp.New(agenthttp.Config{Servers: []string{"127.0.0.1:1", strings.TrimPrefix(a.ts.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	defer ts.Close()
	fwd := &testAPI{t: t, ts: ts}

	var job api.Job
	r := fwd.ok("GET", "/v1/job/web", nil, &job)
	if job.ID != "web" || r.header.Get(api.HeaderIndex) == "" {
		t.Errorf("forwarded GET = %+v (index %q), want job web with its index header", job.ID, r.header.Get(api.HeaderIndex))
	}
	fwd.fails("GET", "/v1/job/nope", nil, 404, "job_not_found")
	// A write is not retried on another server: the first is unreachable.
	fwd.fails("PUT", "/v1/jobs", webJob(2), 503, "unavailable")
	// The agent's own endpoints are not forwarded.
	var self api.AgentSelf
	fwd.ok("GET", "/v1/agent/self", nil, &self)
	fwd.fails("GET", "/v1/client/fs/ls/abc", nil, 404, "alloc_not_found")

	// With the reachable server first, writes go through.
	h2, err := agenthttp.New(agenthttp.Config{Servers: []string{a.ts.URL}})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewServer(h2.Handler())
	defer ts2.Close()
	fwd2 := &testAPI{t: t, ts: ts2}
	var reg api.JobRegisterResponse
	fwd2.ok("PUT", "/v1/jobs", webJob(2), &reg)
	a.ok("GET", "/v1/job/web", nil, &job)
	if job.TaskGroups[0].Count != 2 {
		t.Errorf("after a forwarded write, count = %d, want 2", job.TaskGroups[0].Count)
	}
}
