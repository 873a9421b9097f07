package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server"
)

// doAs sends a request with the given headers and returns the status and body.
func (a *testAPI) doAs(method, path string, body any, hdr map[string]string) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := nethttp.NewRequest(method, a.ts.URL+path, rd)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	r, err := a.ts.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, b
}

// ACLs as Nomad's: without a token only public routes answer; bootstrap
// works once; a client token holds its policies' capabilities in their
// namespaces (X-Drover-Token, X-Nomad-Token, Authorization: Bearer and
// the websocket token subprotocol),
// never across namespaces; the anonymous policy applies to requests
// without a token; an expired token is refused; a node secret acts for
// its client.
func TestACLEnforcement(t *testing.T) {
	a := newTestAPIWith(t, server.Config{ACLEnabled: true})
	if code, _ := a.doAs("GET", "/v1/jobs", nil, nil); code != 403 {
		t.Fatalf("anonymous GET /v1/jobs = %d, want 403", code)
	}
	if code, _ := a.doAs("GET", "/v1/status/leader", nil, nil); code != 200 {
		t.Errorf("public route = %d", code)
	}
	var boot api.ACLToken
	code, b := a.doAs("POST", "/v1/acl/bootstrap", nil, nil)
	if code != 200 || json.Unmarshal(b, &boot) != nil || boot.Type != api.ACLTokenManagement || boot.SecretID == "" {
		t.Fatalf("bootstrap = %d %s", code, b)
	}
	if code, _ := a.doAs("POST", "/v1/acl/bootstrap", nil, nil); code != 400 {
		t.Errorf("second bootstrap = %d, want 400", code)
	}
	mgmt := map[string]string{api.HeaderToken: boot.SecretID}
	if code, b := a.doAs("PUT", "/v1/namespace/ml", api.Namespace{Name: "ml"}, mgmt); code != 200 {
		t.Fatalf("namespace ml = %d %s", code, b)
	}
	if code, b := a.doAs("PUT", "/v1/acl/policy/dev", api.ACLPolicy{Name: "dev",
		Rules: "namespace \"default\" {\n  policy       = \"read\"\n  capabilities = [\"submit-job\"]\n}\n"}, mgmt); code != 200 {
		t.Fatalf("policy = %d %s", code, b)
	}
	if code, b := a.doAs("PUT", "/v1/acl/policy/bad", api.ACLPolicy{Name: "bad", Rules: `namespace "x" { policy = "own" }`}, mgmt); code != 400 || !strings.Contains(string(b), "own") {
		t.Errorf("bad policy = %d %s", code, b)
	}
	var tok api.ACLToken
	code, b = a.doAs("POST", "/v1/acl/token", api.ACLToken{Name: "dev", Policies: []string{"dev"}}, mgmt)
	if code != 200 || json.Unmarshal(b, &tok) != nil || tok.SecretID == "" || tok.Type != api.ACLTokenClient {
		t.Fatalf("token = %d %s", code, b)
	}
	for _, hdr := range []map[string]string{{api.HeaderToken: tok.SecretID}, {"X-Nomad-Token": tok.SecretID}, {"Authorization": "Bearer " + tok.SecretID},
		// a browser's websocket offers the token as a subprotocol
		{"Sec-WebSocket-Protocol": api.WebSocketExecProtocol + ", " + api.WebSocketTokenProtocol + tok.SecretID}} {
		if code, b := a.doAs("GET", "/v1/jobs", nil, hdr); code != 200 {
			t.Errorf("GET /v1/jobs with %v = %d %s", hdr, code, b)
		}
	}
	dev := map[string]string{api.HeaderToken: tok.SecretID}
	if code, b := a.doAs("PUT", "/v1/jobs", webJob(1), dev); code != 200 {
		t.Errorf("submit in default = %d %s", code, b)
	}
	ml := webJob(1)
	ml["Job"].(map[string]any)["Namespace"] = "ml"
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/v1/jobs", ml}, // the body's namespace counts
		{"GET", "/v1/jobs?namespace=ml", nil},
		{"GET", "/v1/nodes", nil},
		{"GET", "/v1/acl/tokens", nil},
		{"PUT", "/v1/acl/policy/x", api.ACLPolicy{Name: "x", Rules: `node { policy = "write" }`}},
		{"GET", "/v1/operator/raft/configuration", nil},
	} {
		if code, _ := a.doAs(c.method, c.path, c.body, dev); code != 403 {
			t.Errorf("%s %s with the dev token = %d, want 403", c.method, c.path, code)
		}
	}
	// The event stream shows the dev token default's events, not ml's
	// (ml's job came first).
	if code, b := a.doAs("PUT", "/v1/jobs", ml, mgmt); code != 200 {
		t.Fatalf("submit in ml = %d %s", code, b)
	}
	// A "*" list shows each token the namespaces it may list; the
	// namespace list only those it may use.
	for _, c := range []struct {
		path  string
		token map[string]string
		want  string
	}{
		{"/v1/jobs?namespace=*", dev, "default"},
		{"/v1/jobs?namespace=*", mgmt, "default,ml"},
		{"/v1/allocations?namespace=*", dev, ""},
		{"/v1/namespaces", dev, "default"},
		{"/v1/namespaces", mgmt, "default,ml"},
	} {
		code, b := a.doAs("GET", c.path, nil, c.token)
		var items []struct{ Namespace, Name string }
		if code != 200 || json.Unmarshal(b, &items) != nil {
			t.Errorf("GET %s = %d %s", c.path, code, b)
			continue
		}
		seen := map[string]bool{}
		var got []string
		for _, it := range items {
			n := it.Namespace
			if strings.HasPrefix(c.path, "/v1/namespaces") {
				n = it.Name
			}
			if !seen[n] {
				seen[n] = true
				got = append(got, n)
			}
		}
		slices.Sort(got)
		if strings.Join(got, ",") != c.want {
			t.Errorf("GET %s shows namespaces %v, want %q", c.path, got, c.want)
		}
	}
	dj := webJob(1)
	dj["Job"].(map[string]any)["ID"] = "after"
	if code, b := a.doAs("PUT", "/v1/jobs", dj, dev); code != 200 {
		t.Fatalf("submit after = %d %s", code, b)
	}
	req, _ := nethttp.NewRequest("GET", a.ts.URL+"/v1/event/stream?topic=Job&index=1", nil)
	req.Header.Set(api.HeaderToken, tok.SecretID)
	resp, err := a.ts.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("event stream: %v %v", err, resp)
	}
	dec := json.NewDecoder(resp.Body)
	for seen := false; !seen; {
		var batch api.Events
		if err := dec.Decode(&batch); err != nil {
			t.Fatalf("event stream: %v", err)
		}
		for _, e := range batch.Events {
			if e.Namespace == "ml" {
				t.Fatalf("the dev token saw an ml event: %+v", e)
			}
			seen = seen || e.Key == "after"
		}
	}
	resp.Body.Close()
	if code, _ := a.doAs("GET", "/v1/namespaces", nil, nil); code != 403 {
		t.Errorf("anonymous namespace list = %d, want 403", code)
	}

	var self api.ACLToken
	if code, b := a.doAs("GET", "/v1/acl/token/self", nil, dev); code != 200 || json.Unmarshal(b, &self) != nil || self.AccessorID != tok.AccessorID {
		t.Errorf("token self = %d %s", code, b)
	}
	if code, _ := a.doAs("GET", "/v1/acl/policy/dev", nil, dev); code != 200 {
		t.Errorf("own policy = %d", code)
	}
	var list []*api.ACLToken
	code, b = a.doAs("GET", "/v1/acl/tokens", nil, mgmt)
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list) != 2 || list[0].SecretID != "" {
		t.Errorf("token list = %d %s, want two tokens without secrets", code, b)
	}

	// The anonymous policy.
	if code, _ := a.doAs("PUT", "/v1/acl/policy/anonymous", api.ACLPolicy{Name: "anonymous", Rules: `node { policy = "read" }`}, mgmt); code != 200 {
		t.Fatal("anonymous policy")
	}
	if code, _ := a.doAs("GET", "/v1/nodes", nil, nil); code != 200 {
		t.Errorf("anonymous GET /v1/nodes with the anonymous policy = %d", code)
	}
	if code, _ := a.doAs("GET", "/v1/nodes", nil, map[string]string{api.HeaderToken: "not-a-token"}); code != 403 {
		t.Errorf("an unknown token = %d, want 403", code)
	}

	// Roles and an expiring token.
	var role api.ACLRole
	code, b = a.doAs("POST", "/v1/acl/role", api.ACLRole{Name: "devs", Policies: []*api.ACLRolePolicyLink{{Name: "dev"}}}, mgmt)
	if code != 200 || json.Unmarshal(b, &role) != nil || role.ID == "" {
		t.Fatalf("role = %d %s", code, b)
	}
	if code, _ := a.doAs("DELETE", "/v1/acl/policy/dev", nil, mgmt); code != 400 {
		t.Errorf("deleting a policy a role uses = %d, want 400", code)
	}
	var short api.ACLToken
	code, b = a.doAs("POST", "/v1/acl/token", api.ACLToken{Roles: []*api.ACLTokenRoleLink{{Name: "devs"}}, ExpirationTTL: 300 * time.Millisecond}, mgmt)
	if code != 200 || json.Unmarshal(b, &short) != nil || short.ExpirationTime == nil {
		t.Fatalf("expiring token = %d %s", code, b)
	}
	sh := map[string]string{api.HeaderToken: short.SecretID}
	if code, _ := a.doAs("GET", "/v1/jobs", nil, sh); code != 200 {
		t.Errorf("role token = %d", code)
	}
	// The token's expiry is wall-clock time: poll.
	testproc.Eventually(t, 10*time.Second, "the token to expire", func() bool {
		code, b := a.doAs("GET", "/v1/jobs", nil, sh)
		return code == 403 && strings.Contains(string(b), "expired")
	})

	// A node secret acts for its node alone: its own routes, and service
	// reads only where its allocs run (none here); no submits.
	n := testNode(nodeID)
	if code, b := a.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, mgmt); code != 200 {
		t.Fatalf("register node = %d %s", code, b)
	}
	node := map[string]string{api.NodeSecretHeader: n.SecretID}
	if code, _ := a.doAs("GET", "/v1/service/web", nil, node); code != 403 {
		t.Errorf("service read with the secret of a node that runs nothing in the namespace = %d, want 403", code)
	}
	if code, b := a.doAs("PUT", "/v1/node/"+nodeID+"/heartbeat", nil, node); code != 200 {
		t.Errorf("heartbeat with the node's own secret = %d %s", code, b)
	}
	if code, _ := a.doAs("PUT", "/v1/jobs", webJob(1), node); code != 403 {
		t.Errorf("job submit with the node secret = %d, want 403", code)
	}
	if code, _ := a.doAs("DELETE", "/v1/acl/token/"+tok.AccessorID, nil, mgmt); code != 200 {
		t.Error("delete token")
	}
	if code, _ := a.doAs("GET", "/v1/jobs", nil, dev); code != 403 {
		t.Errorf("a deleted token = %d, want 403", code)
	}
}
