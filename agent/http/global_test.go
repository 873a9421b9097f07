package http_test

import (
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
)

// hungAddr is a loopback address that takes connections and never
// answers.
func hungAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestGlobalViews: GET /v1/queues and /v1/usage with region=all, on an
// agent of eu federated with us (up), ap (refuses connections) and sa
// (takes them and never answers), merge eu's and us's answers, each
// marked with its region, and name ap and sa as missing (partial) within
// the timeout; every region answers the same usage window; other routes
// refuse region=all.
func TestGlobalViews(t *testing.T) {
	agenthttp.GlobalViewTimeout = 500 * time.Millisecond
	t.Cleanup(func() { agenthttp.GlobalViewTimeout = 5 * time.Second })
	us := newTestAPI(t, func(c *agenthttp.Config) { c.Region = "us" })
	us.ok("PUT", "/v1/queues", &api.QueueUpsertRequest{Queues: []*api.Queue{{Name: "train"}}}, nil)
	usAddr := strings.TrimPrefix(us.ts.URL, "http://")
	eu := newTestAPI(t, func(c *agenthttp.Config) {
		c.Region = "eu"
		c.Regions = fakeRegions{"eu": nil, "us": {usAddr}, "ap": {deadAddr(t)}, "sa": {hungAddr(t)}}
	})
	eu.ok("PUT", "/v1/queues", &api.QueueUpsertRequest{Queues: []*api.Queue{{Name: "infer"}}}, nil)

	start := time.Now()
	var qs api.QueueStatusesAll
	eu.ok("GET", "/v1/queues?region=all", nil, &qs)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("global view took %s; a region that does not answer must be cut off at the timeout", took)
	}
	var got []string
	for _, q := range qs.Queues {
		got = append(got, q.Region+":"+q.Queue.Name)
	}
	for _, want := range []string{"eu:infer", "us:train"} {
		if !slices.Contains(got, want) {
			t.Errorf("queues = %v, want %s among them", got, want)
		}
	}
	if slices.Contains(got, "eu:train") || slices.Contains(got, "us:infer") {
		t.Errorf("queues = %v: a queue marked with the wrong region", got)
	}
	if !qs.Partial || !slices.Equal(qs.Missing, []string{"ap", "sa"}) {
		t.Errorf("partial %v missing %v, want true [ap sa]", qs.Partial, qs.Missing)
	}

	var u api.UsageResponse
	eu.ok("GET", "/v1/usage?region=all&by=queue", nil, &u)
	if !u.Partial || !slices.Equal(u.Missing, []string{"ap", "sa"}) {
		t.Errorf("usage partial %v missing %v, want true [ap sa]", u.Partial, u.Missing)
	}
	if u.To-u.From != int64(agenthttp.DefaultUsageWindow/time.Second) || u.By != api.UsageByQueue {
		t.Errorf("usage window %d..%d by %q, want the default 24h by queue", u.From, u.To, u.By)
	}

	// Every region up: not partial.
	whole := newTestAPI(t, func(c *agenthttp.Config) {
		c.Region = "eu"
		c.Regions = fakeRegions{"eu": nil, "us": {usAddr}}
	})
	r := whole.ok("GET", "/v1/usage?region=all", nil, nil)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["Partial"]; ok {
		t.Errorf("usage with every region up = %s, want no Partial", r.body)
	}

	eu.fails("GET", "/v1/jobs?region=all", nil, 400, "bad_request")
	eu.fails("GET", "/v1/usage?region=all&format=csv", nil, 400, "bad_request")
	eu.fails("GET", "/v1/usage?region=all&from=yesterday", nil, 400, "bad_request")
}
