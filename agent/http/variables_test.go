package http_test

import (
	"context"
	"encoding/json"
	"errors"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server"
)

// Variables over HTTP with a real server, as Nomad's API: a put answers
// the variable, a get its items, the list metadata only; ?cas= refuses a
// stale index with 409 and the current variable; a blocking get wakes on
// a change of that variable; paths, items and bodies are checked.
func TestVariablesHTTP(t *testing.T) {
	a := newTestAPI(t)
	var v api.Variable
	a.ok("PUT", "/v1/var/team/db", api.Variable{Items: map[string]string{"user": "app", "pass": "s3cret"}}, &v)
	if v.Path != "team/db" || v.Namespace != "default" || v.Items["pass"] != "s3cret" || v.CreateIndex == 0 || v.ModifyIndex != v.CreateIndex || v.CreateTime == 0 {
		t.Fatalf("put answered %+v", v)
	}
	var got api.Variable
	r := a.ok("GET", "/v1/var/team/db", nil, &got)
	if got.Items["user"] != "app" || got.ModifyIndex != v.ModifyIndex {
		t.Fatalf("get = %+v", got)
	}
	a.ok("PUT", "/v1/var/team/cache", api.Variable{Items: map[string]string{"url": "redis://x"}}, nil)
	a.ok("PUT", "/v1/var/other/x", api.Variable{Items: map[string]string{"k": "v"}}, nil)
	lr := a.do("GET", "/v1/vars?prefix=team/", nil)
	var list []map[string]any
	if err := json.Unmarshal(lr.body, &list); err != nil || lr.status != 200 {
		t.Fatalf("list = %d %s", lr.status, lr.body)
	}
	if len(list) != 2 || list[0]["Path"] != "team/cache" || list[1]["Path"] != "team/db" {
		t.Fatalf("list = %s, want team/cache and team/db", lr.body)
	}
	if strings.Contains(string(lr.body), "s3cret") || strings.Contains(string(lr.body), "Items") {
		t.Errorf("the list carries items: %s", lr.body)
	}

	// Check-and-set: a stale index is refused with the current variable.
	r = a.do("PUT", "/v1/var/team/db?cas=1", api.Variable{Items: map[string]string{"user": "x"}})
	if r.status != nethttp.StatusConflict {
		t.Fatalf("stale cas = %d %s, want 409", r.status, r.body)
	}
	var conflict struct {
		Error *api.Error `json:"error"`
		api.Variable
	}
	if err := json.Unmarshal(r.body, &conflict); err != nil || conflict.Error == nil || conflict.Error.Code != api.ErrCASConflict.Code ||
		conflict.ModifyIndex != v.ModifyIndex || conflict.Items["user"] != "app" {
		t.Fatalf("conflict body %s", r.body)
	}
	a.fails("PUT", "/v1/var/team/db?cas=0", api.Variable{Items: map[string]string{"user": "x"}}, 409, api.ErrCASConflict.Code)
	var upd api.Variable
	a.ok("PUT", "/v1/var/team/db?cas="+itoa(v.ModifyIndex), api.Variable{Items: map[string]string{"user": "dba"}}, &upd)
	if upd.Items["user"] != "dba" || upd.ModifyIndex <= v.ModifyIndex || upd.CreateIndex != v.CreateIndex {
		t.Fatalf("cas update = %+v", upd)
	}
	a.ok("PUT", "/v1/var/team/new?cas=0", api.Variable{Items: map[string]string{"k": "v"}}, nil)

	// A blocking get returns once this variable changes, not before.
	done := make(chan api.Variable, 1)
	go func() {
		var b api.Variable
		a.ok("GET", "/v1/var/team/db?wait=20s&index="+itoa(upd.ModifyIndex), nil, &b)
		done <- b
	}()
	a.ok("PUT", "/v1/var/team/cache", api.Variable{Items: map[string]string{"url": "redis://y"}}, nil)
	select {
	case b := <-done:
		t.Fatalf("blocking get woke for another variable: %+v", b)
	default:
	}
	a.ok("PUT", "/v1/var/team/db", api.Variable{Items: map[string]string{"user": "root"}}, nil)
	select {
	case b := <-done:
		if b.Items["user"] != "root" {
			t.Errorf("blocking get = %+v, want the new items", b)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("blocking get did not wake on the change")
	}

	// Delete: with a stale cas refused; then gone.
	a.fails("DELETE", "/v1/var/team/db?cas=1", nil, 409, api.ErrCASConflict.Code)
	a.ok("DELETE", "/v1/var/team/db", nil, nil)
	a.fails("GET", "/v1/var/team/db", nil, 404, api.ErrNotFound.Code)

	// Input checks.
	for _, c := range []struct {
		path string
		body any
		code string
	}{
		{"/v1/var/bad$char", api.Variable{Items: map[string]string{"k": "v"}}, api.ErrBadRequest.Code},
		{"/v1/var/" + strings.Repeat("p", 129), api.Variable{Items: map[string]string{"k": "v"}}, api.ErrBadRequest.Code},
		{"/v1/var/nomad/secret", api.Variable{Items: map[string]string{"k": "v"}}, api.ErrBadRequest.Code},
		{"/v1/var/empty", api.Variable{}, api.ErrBadRequest.Code},
		{"/v1/var/big", api.Variable{Items: map[string]string{"k": strings.Repeat("x", api.MaxVariableItemsBytes)}}, api.ErrBadRequest.Code},
		{"/v1/var/huge", api.Variable{Items: map[string]string{"k": strings.Repeat("x", api.MaxVariableBodyBytes)}}, api.ErrBodyTooLarge.Code},
		{"/v1/var/unknown", `{"Items":{"k":"v"},"Colour":1}`, api.ErrBadRequest.Code},
		{"/v1/var/mismatch", api.Variable{Path: "other", Items: map[string]string{"k": "v"}}, api.ErrBadRequest.Code},
		{"/v1/var/badcas?cas=x", api.Variable{Items: map[string]string{"k": "v"}}, api.ErrBadRequest.Code},
	} {
		r := a.do("PUT", c.path, c.body)
		var eb api.ErrorBody
		if r.status/100 != 4 || json.Unmarshal(r.body, &eb) != nil || eb.Error == nil || eb.Error.Code != c.code {
			t.Errorf("PUT %.60s = %d %.200s, want %s", c.path, r.status, r.body, c.code)
		}
	}
	var all []*api.VariableMetadata
	a.ok("GET", "/v1/vars", nil, &all)
	for _, m := range all {
		if !strings.HasPrefix(m.Path, "team/") && m.Path != "other/x" {
			t.Errorf("a refused write was stored: %+v", m)
		}
	}

	// The api client: a conflict carries the current variable.
	c := api.NewClient(a.ts.URL)
	ctx := context.Background()
	cur, err := c.PutVariable(ctx, &api.Variable{Path: "team/cache", Items: map[string]string{"url": "z"}}, 1, nil)
	var ce *api.CASConflictError
	if !errors.As(err, &ce) || ce.Current == nil || ce.Current.Items["url"] != "redis://y" || !errors.Is(err, api.ErrCASConflict) {
		t.Fatalf("api conflict: %v %+v", err, cur)
	}
	// A variable's own namespace is the request's.
	a.ok("PUT", "/v1/namespace/ml", api.Namespace{Name: "ml"}, nil)
	if _, err := c.PutVariable(ctx, &api.Variable{Namespace: "ml", Path: "team/db", Items: map[string]string{"k": "ml"}}, -1, nil); err != nil {
		t.Fatalf("put in ml: %v", err)
	}
	if got, _, err := c.Variable(ctx, "team/db", &api.QueryOptions{Namespace: "ml"}); err != nil || got.Namespace != "ml" || got.Items["k"] != "ml" {
		t.Errorf("read in ml: %+v %v", got, err)
	}
	a.fails("PUT", "/v1/var/team/db?namespace=ml", api.Variable{Namespace: "default", Items: map[string]string{"k": "v"}}, 400, api.ErrBadRequest.Code)
}

// Locks: the acquirer gets the ID; another acquire, or a write without
// the ID, conflicts; the holder writes, renews and releases with it.
func TestVariableLocksHTTP(t *testing.T) {
	a := newTestAPI(t)
	var held api.Variable
	a.ok("PUT", "/v1/var/locks/leader?lock-acquire", api.Variable{Items: map[string]string{"who": "a"}, Lock: &api.VariableLock{TTL: "1h"}}, &held)
	if held.Lock == nil || held.Lock.ID == "" || held.Lock.TTL != "1h0m0s" {
		t.Fatalf("acquire answered %+v", held.Lock)
	}
	var seen api.Variable
	a.ok("GET", "/v1/var/locks/leader", nil, &seen)
	if seen.Lock == nil || seen.Lock.ID != "" {
		t.Errorf("a read shows the lock %+v, want it without the ID", seen.Lock)
	}
	a.fails("PUT", "/v1/var/locks/leader?lock-acquire", api.Variable{Items: map[string]string{"who": "b"}}, 409, api.ErrCASConflict.Code)
	a.fails("PUT", "/v1/var/locks/leader", api.Variable{Items: map[string]string{"who": "b"}}, 409, api.ErrCASConflict.Code)
	a.fails("DELETE", "/v1/var/locks/leader", nil, 409, api.ErrCASConflict.Code)
	a.fails("PUT", "/v1/var/locks/leader?lock-renew", api.Variable{Lock: &api.VariableLock{ID: "not-it"}}, 409, api.ErrCASConflict.Code)
	a.ok("PUT", "/v1/var/locks/leader", api.Variable{Items: map[string]string{"who": "a2"}, Lock: &api.VariableLock{ID: held.Lock.ID}}, nil)
	a.ok("PUT", "/v1/var/locks/leader?lock-renew", api.Variable{Lock: &api.VariableLock{ID: held.Lock.ID}}, nil)
	a.ok("PUT", "/v1/var/locks/leader?lock-release", api.Variable{Lock: &api.VariableLock{ID: held.Lock.ID}}, nil)
	var again api.Variable
	a.ok("PUT", "/v1/var/locks/leader?lock-acquire", api.Variable{}, &again)
	if again.Lock == nil || again.Lock.ID == "" || again.Lock.ID == held.Lock.ID || again.Items["who"] != "a2" {
		t.Fatalf("acquire after release: %+v", again)
	}
}

// ACLs by path: a policy's variables block grants capabilities on the
// paths its globs match (deny by default, the most specific path wins);
// a list shows only what the token may list; a task's workload identity
// reads its own nomad/jobs/<job>[/<group>[/<task>]] and nothing else, and
// only while its alloc runs.
func TestVariablesACL(t *testing.T) {
	a := newTestAPIWith(t, server.Config{ACLEnabled: true})
	var boot api.ACLToken
	if code, b := a.doAs("POST", "/v1/acl/bootstrap", nil, nil); code != 200 || json.Unmarshal(b, &boot) != nil {
		t.Fatalf("bootstrap = %d %s", code, b)
	}
	mgmt := map[string]string{api.HeaderToken: boot.SecretID}
	for _, p := range []string{"team/db", "team/secret/root", "other/x", "nomad/jobs/web", "nomad/jobs/web/web/srv", "nomad/jobs/api"} {
		if code, b := a.doAs("PUT", "/v1/var/"+p, api.Variable{Items: map[string]string{"k": "v-" + p}}, mgmt); code != 200 {
			t.Fatalf("put %s = %d %s", p, code, b)
		}
	}
	rules := `namespace "default" {
  variables {
    path "team/*" { capabilities = ["read", "list", "write"] }
    path "team/secret/*" { capabilities = ["deny"] }
  }
}`
	if code, b := a.doAs("PUT", "/v1/acl/policy/team", api.ACLPolicy{Name: "team", Rules: rules}, mgmt); code != 200 {
		t.Fatalf("policy = %d %s", code, b)
	}
	if code, b := a.doAs("PUT", "/v1/acl/policy/bad", api.ACLPolicy{Name: "bad", Rules: "namespace \"x\" {\n variables {\n path \"*\" { capabilities = [\"fly\"] }\n }\n}"}, mgmt); code != 400 || !strings.Contains(string(b), "unknown capability") {
		t.Errorf("bad variables capability = %d %s", code, b)
	}
	var tok api.ACLToken
	code, b := a.doAs("POST", "/v1/acl/token", api.ACLToken{Name: "team", Policies: []string{"team"}}, mgmt)
	if code != 200 || json.Unmarshal(b, &tok) != nil {
		t.Fatalf("token = %d %s", code, b)
	}
	team := map[string]string{api.HeaderToken: tok.SecretID}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v1/var/team/db", 200},
		{"PUT", "/v1/var/team/db", 200},
		{"DELETE", "/v1/var/team/db", 403}, // no destroy
		{"GET", "/v1/var/team/secret/root", 403},
		{"GET", "/v1/var/other/x", 403},
		{"PUT", "/v1/var/other/x", 403},
		{"GET", "/v1/var/team/db?namespace=ml", 403},
		{"GET", "/v1/var/nomad/jobs/web", 403},
	} {
		var body any
		if c.method == "PUT" {
			body = api.Variable{Items: map[string]string{"k": "changed"}}
		}
		if code, b := a.doAs(c.method, c.path, body, team); code != c.want {
			t.Errorf("%s %s with the team token = %d %s, want %d", c.method, c.path, code, b, c.want)
		}
	}
	if code, _ := a.doAs("GET", "/v1/var/team/db", nil, nil); code != 403 {
		t.Errorf("anonymous read = %d, want 403", code)
	}
	code, b = a.doAs("GET", "/v1/vars", nil, team)
	var list []*api.VariableMetadata
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list) != 1 || list[0].Path != "team/db" {
		t.Errorf("the team token's list = %d %s, want team/db only", code, b)
	}

	// A workload identity.
	n := testNode(nodeID)
	if code, b := a.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil); code != 200 {
		t.Fatalf("register node = %d %s", code, b)
	}
	job := webJob(1)
	job["Job"].(map[string]any)["Constraints"] = []any{map[string]any{"LTarget": "${node.unique.id}", "Operand": "=", "RTarget": nodeID}}
	mc := api.NewClient(a.ts.URL)
	mc.Token = boot.SecretID
	ctx := context.Background()
	var reg api.JobRegisterResponse
	if err := mc.Write(ctx, "PUT", "/v1/jobs", job, &reg, nil); err != nil {
		t.Fatal(err)
	}
	var allocs []*api.AllocListStub
	testproc.Eventually(t, 20*time.Second, "the job's alloc placed", func() bool {
		_, err := mc.Query(ctx, "/v1/job/web/allocations", &allocs, &api.QueryOptions{WaitIndex: reg.EvalCreateIndex, WaitTime: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return len(allocs) > 0
	})
	if len(allocs) != 1 {
		t.Fatalf("%d allocs", len(allocs))
	}
	nc := api.NewClient(a.ts.URL)
	nc.Headers = nethttp.Header{api.NodeSecretHeader: {n.SecretID}}
	ids, err := nc.SignIdentities(ctx, n.ID, &api.TaskIdentityRequest{AllocID: allocs[0].ID, Task: "srv"})
	if err != nil || len(ids.Identities) == 0 {
		t.Fatalf("sign: %v", err)
	}
	wid := map[string]string{api.HeaderToken: ids.Identities[0].Token}
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/v1/var/nomad/jobs/web", 200},
		{"GET", "/v1/var/nomad/jobs/web/web/srv", 200},
		{"GET", "/v1/var/nomad/jobs/api", 403},
		{"GET", "/v1/var/team/db", 403},
		{"PUT", "/v1/var/nomad/jobs/web", 403},
		{"GET", "/v1/var/nomad/jobs/web?namespace=ml", 403},
		{"GET", "/v1/jobs", 403},
	} {
		var body any
		if c.method == "PUT" {
			body = api.Variable{Items: map[string]string{"k": "changed"}}
		}
		if code, b := a.doAs(c.method, c.path, body, wid); code != c.want {
			t.Errorf("%s %s with the workload identity = %d %s, want %d", c.method, c.path, code, b, c.want)
		}
	}
	// Through a client-only agent, which resolves the identity at the
	// server for its own enforcement, the same.
	fwd, err := agenthttp.New(agenthttp.Config{Servers: []string{a.ts.URL},
		ACL: &agenthttp.RemoteACL{Servers: []string{a.ts.URL}, HTTP: a.ts.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	fts := httptest.NewServer(fwd.Handler())
	t.Cleanup(fts.Close)
	for path, want := range map[string]int{"/v1/var/nomad/jobs/web/web": 404, "/v1/var/nomad/jobs/web": 200, "/v1/var/nomad/jobs/api": 403} {
		req, _ := nethttp.NewRequest("GET", fts.URL+path, nil)
		req.Header.Set(api.HeaderToken, ids.Identities[0].Token)
		r, err := fts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("GET %s with the workload identity through a client agent = %d, want %d", path, r.StatusCode, want)
		}
	}
	code, b = a.doAs("GET", "/v1/vars?prefix=nomad/", nil, wid)
	list = nil
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list) != 2 {
		t.Errorf("the workload's list = %d %s, want its two paths", code, b)
	}
	if err := mc.Write(ctx, "DELETE", "/v1/job/web", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 20*time.Second, "the identity of the stopped alloc refused", func() bool {
		code, _ := a.doAs("GET", "/v1/var/nomad/jobs/web", nil, wid)
		return code == 403
	})
}
