package http_test

import (
	"bufio"
	"encoding/json"
	"net"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// fakeRegions is a RegionSource of fixed addresses per region.
type fakeRegions map[string][]string

func (f fakeRegions) Regions() []string {
	var out []string
	for r := range f {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (f fakeRegions) RegionServers(region string) ([]string, bool) {
	addrs, ok := f[region]
	return slices.Clone(addrs), ok
}

// deadAddr is a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestRegionForwarding: an agent of eu forwards a request with
// ?region=us to us's server whole (method, body, query, the caller's
// token) and streams its answer; its own region and no region are served
// locally; an unknown region is 400 unknown_region; a region with no
// server that answers is 503 region_unavailable, tried on every server;
// a request another region forwarded is never forwarded again.
func TestRegionForwarding(t *testing.T) {
	us := newTestAPIWith(t, server.Config{ACLEnabled: true}, func(c *agenthttp.Config) { c.Region = "us" })
	code, b := us.doAs("POST", "/v1/acl/bootstrap", nil, nil)
	if code != 200 {
		t.Fatalf("bootstrap us = %d %s", code, b)
	}
	var mgmt api.ACLToken
	if err := json.Unmarshal(b, &mgmt); err != nil {
		t.Fatal(err)
	}
	usAddr := strings.TrimPrefix(us.ts.URL, "http://")
	eu := newTestAPI(t, func(c *agenthttp.Config) {
		c.Region = "eu"
		c.Regions = fakeRegions{"eu": nil, "us": {deadAddr(t), usAddr}, "ap": {deadAddr(t)}}
	})
	tok := map[string]string{"X-Nomad-Token": mgmt.SecretID}

	if code, b := eu.doAs("PUT", "/v1/jobs?region=us", webJob(1), tok); code != 200 {
		t.Fatalf("register in us through eu = %d %s", code, b)
	}
	if code, b := eu.doAs("GET", "/v1/job/web?region=us", nil, tok); code != 200 || !strings.Contains(string(b), `"ID":"web"`) {
		t.Errorf("GET web in us through eu = %d %s", code, b)
	}
	if code, _ := eu.doAs("GET", "/v1/job/web?region=us", nil, nil); code != nethttp.StatusForbidden {
		t.Errorf("GET web in us without the token = %d, want 403 (us checks the caller)", code)
	}
	eu.fails("GET", "/v1/job/web", nil, 404, "job_not_found")
	eu.fails("GET", "/v1/job/web?region=eu", nil, 404, "job_not_found")
	if e := eu.fails("GET", "/v1/jobs?region=mars", nil, 400, "unknown_region"); !strings.Contains(e.Message, "us") {
		t.Errorf("unknown region message %q, want the known regions", e.Message)
	}
	eu.fails("GET", "/v1/jobs?region=ap", nil, 503, "region_unavailable")
	code, b = eu.doAs("GET", "/v1/jobs?region=us", nil, map[string]string{"X-Drover-Region-Forwarded": "ap"})
	if code != 503 || !strings.Contains(string(b), "region_unavailable") {
		t.Errorf("a request forwarded from ap for us = %d %s, want 503 region_unavailable (no second hop)", code, b)
	}

	// The event stream of us, through eu, arrives as it is written.
	req, _ := nethttp.NewRequest("GET", eu.ts.URL+"/v1/event/stream?region=us", nil)
	req.Header.Set("X-Nomad-Token", mgmt.SecretID)
	r, err := eu.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("event stream of us = %d", r.StatusCode)
	}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(r.Body)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Error("the forwarded event stream ended without a line")
		}
		_ = l
	case <-time.After(10 * time.Second):
		t.Error("no line of the forwarded event stream (responses must be flushed as written)")
	}
}

// TestRegionForwardingNotFederated: an agent that knows no other region
// refuses another region's request, naming both.
func TestRegionForwardingNotFederated(t *testing.T) {
	a := newTestAPI(t)
	e := a.fails("GET", "/v1/jobs?region=eu", nil, 400, "unknown_region")
	if !strings.Contains(e.Message, `"global"`) || !strings.Contains(e.Message, `"eu"`) {
		t.Errorf("message %q, want both regions", e.Message)
	}
	var regions []string
	a.ok("GET", "/v1/regions", nil, &regions)
	if !slices.Equal(regions, []string{"global"}) {
		t.Errorf("regions = %v, want [global]", regions)
	}
}
