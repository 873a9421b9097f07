package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/http/serverstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/server"
)

// testAPI is a real in-memory dev server behind the HTTP handler.
type testAPI struct {
	t   *testing.T
	srv *server.Server
	ts  *httptest.Server
}

func newTestAPI(t *testing.T, mod ...func(*agenthttp.Config)) *testAPI {
	t.Helper()
	return newTestAPIWith(t, server.Config{}, mod...)
}

// newTestAPIWith is newTestAPI with server settings (ACLEnabled ...).
func newTestAPIWith(t *testing.T, sc server.Config, mod ...func(*agenthttp.Config)) *testAPI {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	sc.BindAddr, sc.NumSchedulers, sc.Logger, sc.NodeName = "127.0.0.1", 1, log, "test"
	s := testcluster.Server(t, sc) // a dev server, ready (leading, duties running)
	cfg := agenthttp.Config{Server: serverstate.Bind(s), Logger: log, EventHeartbeat: 50 * time.Millisecond, ACL: s.ACL()}
	for _, m := range mod {
		m(&cfg)
	}
	h, err := agenthttp.New(cfg)
	if err != nil {
		t.Fatalf("agenthttp.New: %v", err)
	}
	ts := httptest.NewServer(h.Handler())
	t.Cleanup(ts.Close)
	return &testAPI{t: t, srv: s, ts: ts}
}

type resp struct {
	status int
	header nethttp.Header
	body   []byte
}

// do sends body (a string is sent as is, anything else as JSON).
func (a *testAPI) do(method, path string, body any) *resp {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := nethttp.NewRequest(method, a.ts.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	r, err := a.ts.Client().Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		a.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return &resp{status: r.StatusCode, header: r.Header, body: b}
}

// ok asserts a 200 and decodes the body into out (if non-nil).
func (a *testAPI) ok(method, path string, body, out any) *resp {
	a.t.Helper()
	r := a.do(method, path, body)
	if r.status != nethttp.StatusOK {
		a.t.Fatalf("%s %s = %d %s, want 200", method, path, r.status, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			a.t.Fatalf("%s %s: decode %s: %v", method, path, r.body, err)
		}
	}
	return r
}

// fails asserts an error status and a JSON error body with code.
func (a *testAPI) fails(method, path string, body any, status int, code string) *api.Error {
	a.t.Helper()
	r := a.do(method, path, body)
	if r.status != status {
		a.t.Fatalf("%s %s = %d %s, want %d", method, path, r.status, r.body, status)
	}
	var eb api.ErrorBody
	if err := json.Unmarshal(r.body, &eb); err != nil || eb.Error == nil {
		a.t.Fatalf("%s %s: body %q is not a JSON error: %v", method, path, r.body, err)
	}
	if eb.Error.Code != code {
		a.t.Fatalf("%s %s: error code %q (%s), want %q", method, path, eb.Error.Code, eb.Error.Message, code)
	}
	if eb.Error.Message == "" {
		a.t.Fatalf("%s %s: empty error message", method, path)
	}
	return eb.Error
}

// webJob is the Nomad-style job of the brief.
func webJob(count int) map[string]any {
	return map[string]any{"Job": map[string]any{
		"ID": "web",
		"TaskGroups": []any{map[string]any{
			"Name": "web", "Count": count,
			"Tasks": []any{map[string]any{
				"Name": "srv", "Driver": "exec",
				"Config":    map[string]any{"command": "/bin/sleep", "args": []string{"300"}},
				"Resources": map[string]any{"CPU": 500, "MemoryMB": 256},
			}},
		}},
	}}
}

// register registers a job and returns the answer.
func (a *testAPI) register(job any) *api.JobRegisterResponse {
	a.t.Helper()
	var out api.JobRegisterResponse
	a.ok("PUT", "/v1/jobs", job, &out)
	if out.EvalID == "" || out.JobModifyIndex == 0 {
		a.t.Fatalf("register answered %+v, want an EvalID and a JobModifyIndex", out)
	}
	return &out
}

// waitEval follows an eval with blocking queries until it is terminal.
func (a *testAPI) waitEval(id string) *api.Evaluation {
	a.t.Helper()
	var idx uint64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var e api.Evaluation
		r := a.ok("GET", "/v1/evaluation/"+id+"?wait=5s&index="+itoa(idx), nil, &e)
		if e.TerminalStatus() {
			return &e
		}
		idx = headerIndex(a.t, r)
	}
	a.t.Fatalf("evaluation %s not terminal within 20s", id)
	return nil
}

func headerIndex(t *testing.T, r *resp) uint64 {
	t.Helper()
	var n uint64
	if err := json.Unmarshal([]byte(r.header.Get(api.HeaderIndex)), &n); err != nil || n == 0 {
		t.Fatalf("%s header %q: want a positive index", api.HeaderIndex, r.header.Get(api.HeaderIndex))
	}
	return n
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
