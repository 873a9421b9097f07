package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

var allNSCaps = []string{"list-jobs", "parse-job", "read-job", "read-job-scaling", "list-scaling-policies", "read-scaling-policy",
	"submit-job", "dispatch-job", "read-logs", "read-fs", "alloc-exec", "alloc-lifecycle", "scale-job"}

// wrongAndRight are policies (rules) that hold everything but c, and just c.
func wrongAndRight(c agenthttp.RouteCap) (wrong, right string) {
	levels := func(deny string, read bool) string {
		var b strings.Builder
		for _, k := range []string{"node", "agent", "operator"} {
			p := "write"
			if k == deny {
				p = "deny"
				if read {
					p = "read"
				}
			}
			fmt.Fprintf(&b, "%s { policy = %q }\n", k, p)
		}
		return b.String()
	}
	allNS := `namespace "*" { policy = "write" }` + "\n"
	switch c.Kind {
	case "namespace":
		others := slices.DeleteFunc(slices.Clone(allNSCaps), func(x string) bool { return x == c.Cap })
		q, _ := json.Marshal(others)
		return fmt.Sprintf("namespace \"default\" { capabilities = %s }\n", q) + levels("", false),
			fmt.Sprintf("namespace \"default\" { capabilities = [%q] }\n", c.Cap)
	case "self":
		// Only the node's own secret: everything else, management too, is
		// refused (the tenancy matrix checks the node's own secret).
		return allNS + levels("", false), ""
	case "node", "agent", "operator":
		kind := c.Kind
		lvl := "read"
		if c.Write {
			lvl = "write"
		}
		return allNS + levels(kind, c.Write), fmt.Sprintf("%s { policy = %q }\n", kind, lvl)
	case "management":
		return allNS + levels("", false), "" // "": the management token
	case "token":
		return "", "" // any valid token; no wrong one
	case "variables":
		others := slices.DeleteFunc([]string{"read", "write", "list", "destroy"}, func(x string) bool { return x == c.Cap })
		q, _ := json.Marshal(others)
		return fmt.Sprintf("namespace \"*\" {\n policy = \"write\"\n variables {\n path \"*\" { capabilities = %s }\n }\n}\n", q) + levels("", false),
			fmt.Sprintf("namespace \"default\" {\n variables {\n path \"*\" { capabilities = [%q] }\n }\n}\n", c.Cap)
	}
	panic("unknown capability kind " + c.Kind)
}

var pathVar = regexp.MustCompile(`\{[^}]*\}`)

// TestAuthzMatrix: every route of the route table, with no token, a bogus
// one, a token holding everything but the route's capability and one
// holding just it, straight at a server and forwarded through a
// client-only agent (which resolves tokens at the server for its own
// routes): everything but the right token is 403 on a route that is not
// public, and the right token is never 403.
func TestAuthzMatrix(t *testing.T) {
	a := newTestAPIWith(t, server.Config{ACLEnabled: true}, func(c *agenthttp.Config) { c.EnableDebug = true })
	var boot api.ACLToken
	if code, b := a.doAs("POST", "/v1/acl/bootstrap", nil, nil); code != 200 || json.Unmarshal(b, &boot) != nil {
		t.Fatalf("bootstrap = %d %s", code, b)
	}
	mgmt := map[string]string{api.HeaderToken: boot.SecretID}
	tokens := map[string]string{"": boot.SecretID}
	tokenFor := func(rules string) string {
		if s, ok := tokens[rules]; ok {
			return s
		}
		name := fmt.Sprintf("p%d", len(tokens))
		if code, b := a.doAs("PUT", "/v1/acl/policy/"+name, api.ACLPolicy{Name: name, Rules: rules}, mgmt); code != 200 {
			t.Fatalf("policy %q = %d %s", rules, code, b)
		}
		var tok api.ACLToken
		if code, b := a.doAs("POST", "/v1/acl/token", api.ACLToken{Policies: []string{name}}, mgmt); code != 200 || json.Unmarshal(b, &tok) != nil {
			t.Fatalf("token = %d %s", code, b)
		}
		tokens[rules] = tok.SecretID
		return tok.SecretID
	}

	// A client-only agent in front of the server.
	fwd, err := agenthttp.New(agenthttp.Config{Servers: []string{a.ts.URL},
		ACL: &agenthttp.RemoteACL{Servers: []string{a.ts.URL}, HTTP: a.ts.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	fts := httptest.NewServer(fwd.Handler())
	t.Cleanup(fts.Close)

	// status sends the request; a stream still open after 2s was let in.
	status := func(base, method, path, token string) int {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var body io.Reader
		if method == "PUT" || method == "POST" {
			body = strings.NewReader("{}")
		}
		req, _ := nethttp.NewRequestWithContext(ctx, method, base+path, body)
		if token != "" {
			req.Header.Set(api.HeaderToken, token)
		}
		r, err := nethttp.DefaultClient.Do(req)
		if errors.Is(err, context.DeadlineExceeded) {
			return 0
		}
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		r.Body.Close()
		return r.StatusCode
	}

	checked := 0
	for pattern, c := range agenthttp.RouteCaps() {
		if c.Public {
			continue
		}
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			method, path = "GET", pattern
		}
		path = strings.ReplaceAll(path, "{$}", "")
		path = pathVar.ReplaceAllString(path, "x")
		if c.Kind == "register" {
			continue // a node's introduction, checked by the server (TestNodeIntroduction)
		}
		if c.Kind == "client" || c.Kind == "nodesub" || c.Kind == "defrag" {
			if path == "/v1/client/" {
				path = "/v1/client/fs/logs/x"
			}
			req, _ := nethttp.NewRequest(method, path, nil)
			c = agenthttp.CapOf(pattern, req)
		}
		wrong, right := wrongAndRight(c)
		bases := []string{a.ts.URL}
		if agenthttp.ServerRoute(path) || strings.HasPrefix(path, "/v1/client/") {
			bases = append(bases, fts.URL)
		}
		for _, base := range bases {
			where := "direct"
			if base == fts.URL {
				where = "forwarded"
			}
			cases := map[string]string{"no token": "", "bogus": "00000000-0000-4000-8000-000000000000"}
			if c.Kind != "token" {
				cases["wrong capability"] = tokenFor(wrong)
			}
			for name, tok := range cases {
				if got := status(base, method, path, tok); got != 403 {
					t.Errorf("%s %s (%s) with %s = %d, want 403", method, path, where, name, got)
				}
			}
			if c.Kind == "self" {
				if got := status(base, method, path, boot.SecretID); got != 403 {
					t.Errorf("%s %s (%s) with a management token = %d, want 403 (a node's own route)", method, path, where, got)
				}
			} else if got := status(base, method, path, tokenFor(right)); got == 403 {
				t.Errorf("%s %s (%s) with the right capability (%+v) = 403", method, path, where, c)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Errorf("checked %d route x path combinations, want the whole table", checked)
	}
}
