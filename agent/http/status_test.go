package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStatusAndAgentRoutes(t *testing.T) {
	a := newTestAPI(t)
	var leader string
	a.ok("GET", "/v1/status/leader", nil, &leader)
	if leader == "" {
		t.Errorf("leader = %q, want the leader's Raft address", leader)
	}
	var peers []string
	a.ok("GET", "/v1/status/peers", nil, &peers)
	if len(peers) != 1 || peers[0] != leader {
		t.Errorf("peers = %v, want [%s]", peers, leader)
	}
	var self api.AgentSelf
	a.ok("GET", "/v1/agent/self", nil, &self)
	if self.Config == nil {
		t.Errorf("agent/self has no config")
	}
	var h api.AgentHealth
	a.ok("GET", "/v1/agent/health", nil, &h)
	if h.Server == nil || !h.Server.Ok {
		t.Errorf("health = %+v, want server ok", h)
	}
	var m api.ServerMembers
	a.ok("GET", "/v1/agent/members", nil, &m)
}

func TestMetricsAndUI(t *testing.T) {
	a := newTestAPI(t)
	a.ok("GET", "/v1/jobs", nil, nil)
	for _, p := range []string{"/v1/metrics", "/v1/metrics?format=prometheus"} {
		r := a.do("GET", p, nil)
		if r.status != 200 || !strings.Contains(string(r.body), `drover_http_requests_total{code="200",route="GET /v1/jobs"}`) {
			t.Errorf("GET %s = %d, body lacks the request counter of GET /v1/jobs:\n%.2000s", p, r.status, r.body)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Errorf("GET %s Content-Type = %q, want Prometheus text", p, ct)
		}
	}
	c := a.ts.Client()
	c.CheckRedirect = func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }
	r, err := c.Get(a.ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode/100 != 3 || r.Header.Get("Location") != "/ui/" {
		t.Errorf("GET / = %d Location %q, want a redirect to /ui/", r.StatusCode, r.Header.Get("Location"))
	}
	ui := a.do("GET", "/ui/", nil)
	if ui.status != 200 || !strings.Contains(string(ui.body), "drover") {
		t.Errorf("GET /ui/ = %d, want the UI page", ui.status)
	}
}

// TestBlockingQuery checks ?index= returns only after a change: the
// answer's index must exceed the asked one and carry the new data, which
// exists only after the write this test makes once the request is out.
func TestBlockingQuery(t *testing.T) {
	a := newTestAPI(t)
	first := a.register(webJob(1))
	a.waitEval(first.EvalID) // the scheduler's own updates of web are done
	r := a.ok("GET", "/v1/job/web", nil, nil)
	idx := headerIndex(t, r)

	type result struct {
		r   *resp
		err error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := nethttp.NewRequest("GET", fmt.Sprintf("%s/v1/job/web?index=%d&wait=60s", a.ts.URL, idx), nil)
		res, err := a.ts.Client().Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer res.Body.Close()
		var b strings.Builder
		_, err = bufio.NewReader(res.Body).WriteTo(&b)
		done <- result{r: &resp{status: res.StatusCode, header: res.Header, body: []byte(b.String())}, err: err}
	}()
	// An unrelated job's write must not wake this query.
	other := webJob(1)
	other["Job"].(map[string]any)["ID"] = "other"
	a.register(other)
	select {
	case res := <-done:
		t.Fatalf("blocking query returned before the watched job changed: %+v", res)
	default:
	}
	upd := a.register(webJob(4))
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("blocking query did not return within 30s of the write")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	got := headerIndex(t, res.r)
	if got <= idx || got < upd.JobModifyIndex {
		t.Errorf("blocking query index %d, want > %d and >= the write's %d", got, idx, upd.JobModifyIndex)
	}
	var job api.Job
	if err := json.Unmarshal(res.r.body, &job); err != nil {
		t.Fatal(err)
	}
	if job.TaskGroups[0].Count != 4 {
		t.Errorf("blocking query answered count %d, want 4 (the write it waited for)", job.TaskGroups[0].Count)
	}

	// A wait that elapses answers with the current data and index.
	r = a.ok("GET", fmt.Sprintf("/v1/job/web?index=%d&wait=20ms", got+1000), nil, &job)
	if headerIndex(t, r) != got && headerIndex(t, r) < got {
		t.Errorf("timed-out query index %d, want >= %d", headerIndex(t, r), got)
	}
}

func TestEventStream(t *testing.T) {
	a := newTestAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := nethttp.NewRequestWithContext(ctx, "GET", a.ts.URL+"/v1/event/stream?topic=Job:web", nil)
	res, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("event stream = %d", res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	// A heartbeat comes first: nothing has been written.
	if !sc.Scan() {
		t.Fatalf("no first line: %v", sc.Err())
	}
	if got := strings.TrimSpace(sc.Text()); got != "{}" {
		t.Fatalf("first line %q, want a {} heartbeat", got)
	}
	other := webJob(1)
	other["Job"].(map[string]any)["ID"] = "other"
	a.register(other)
	reg := a.register(webJob(1))
	for sc.Scan() {
		var evs api.Events
		if err := json.Unmarshal(sc.Bytes(), &evs); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		for _, e := range evs.Events {
			if e.Topic != api.TopicJob || e.Key != "web" {
				t.Fatalf("event %s/%s passed the Job:web filter", e.Topic, e.Key)
			}
			if e.Index >= reg.JobModifyIndex && e.Type == "JobRegistered" {
				return
			}
		}
	}
	t.Fatalf("stream ended without the JobRegistered event of web: %v", sc.Err())
}

// TestEventStreamReplay: ?index= delivers buffered events written before
// the subscription.
func TestEventStreamReplay(t *testing.T) {
	a := newTestAPI(t)
	reg := a.register(webJob(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := nethttp.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v1/event/stream?topic=Job:*&index=%d", a.ts.URL, reg.JobModifyIndex), nil)
	res, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var evs api.Events
		if err := json.Unmarshal(sc.Bytes(), &evs); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if len(evs.Events) == 0 {
			t.Fatal("heartbeat before the replayed JobRegistered event")
		}
		for _, e := range evs.Events {
			if e.Key == "web" && e.Type == "JobRegistered" && e.Index == reg.JobModifyIndex {
				return
			}
		}
	}
	t.Fatalf("no replayed JobRegistered event: %v", sc.Err())
}

// TestBlockingList: a blocking node list returns when a node registers.
func TestBlockingList(t *testing.T) {
	a := newTestAPI(t)
	r := a.ok("GET", "/v1/nodes", nil, nil)
	idx := headerIndex(t, r)
	done := make(chan *resp, 1)
	go func() {
		res, err := a.ts.Client().Get(fmt.Sprintf("%s/v1/nodes?index=%d&wait=60s", a.ts.URL, idx))
		if err != nil {
			done <- &resp{status: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(res.Body).WriteTo(&b)
		done <- &resp{status: res.StatusCode, header: res.Header, body: []byte(b.String())}
	}()
	a.register(webJob(1)) // a job write does not wake a node list
	select {
	case got := <-done:
		t.Fatalf("node list returned before any node registered: %d %s", got.status, got.body)
	default:
	}
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: testNode(nodeID)}, nil)
	var got *resp
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("blocking node list did not return within 30s of the registration")
	}
	var stubs []*api.NodeListStub
	if err := json.Unmarshal(got.body, &stubs); err != nil || len(stubs) != 1 || headerIndex(t, got) <= idx {
		t.Errorf("blocking node list = %d %s (index %s), want the new node at an index > %d", got.status, got.body, got.header.Get(api.HeaderIndex), idx)
	}
}
