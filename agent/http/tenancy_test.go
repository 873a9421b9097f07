package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server"
	"github.com/drover/drover/server/acl"
)

// Named tests of the tenancy findings (issue "Tenancy that holds"); the
// route x identity matrix is agent's TestTenancyMatrix.

const (
	alphaNS = "tenant-alpha"
	bravoNS = "tenant-bravo"
	node2ID = "f0e1d2c3-0000-4000-8000-000000000002"
)

// tenants is a server with ACLs on and node introduction required,
// namespaces tenant-alpha and tenant-bravo, a token that may do anything
// in tenant-alpha (alpha), two introduced nodes, and a bravo job with a
// deployment and a scaling policy whose allocs are placed on node one.
type tenants struct {
	*testAPI
	mgmt, alpha  map[string]string
	n1, n2       *api.Node
	bravoAllocs  []*api.AllocListStub
	bravoEval    string
	bravoDeploy  string
	bravoPolicy  string
	bravoJobPath string
}

func newTenants(t *testing.T, mod ...func(*agenthttp.Config)) *tenants {
	t.Helper()
	a := newTestAPIWith(t, server.Config{ACLEnabled: true, RequireNodeIntro: true}, mod...)
	var boot api.ACLToken
	a.ok("POST", "/v1/acl/bootstrap", nil, &boot)
	ts := &tenants{testAPI: a, mgmt: map[string]string{api.HeaderToken: boot.SecretID}}
	for _, ns := range []string{alphaNS, bravoNS} {
		ts.as(200, "PUT", "/v1/namespace", &api.Namespace{Name: ns}, ts.mgmt)
	}
	ts.alpha = ts.token(`namespace "tenant-alpha" { policy = "write" }`)
	ts.n1, ts.n2 = testNode(nodeID), testNode(node2ID)
	for _, n := range []*api.Node{ts.n1, ts.n2} {
		ts.as(200, "PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n, IntroToken: ts.intro(api.NodeIntroRequest{})}, nil)
	}
	job := webJob(2)
	j := job["Job"].(map[string]any)
	j["ID"], j["Namespace"], j["Update"] = "bravo-web", bravoNS, map[string]any{"MaxParallel": 1}
	j["TaskGroups"].([]any)[0].(map[string]any)["Scaling"] = map[string]any{"Min": 1, "Max": 4}
	var reg api.JobRegisterResponse
	ts.as(200, "PUT", "/v1/jobs", job, ts.mgmt, &reg)
	ts.bravoEval = reg.EvalID
	ts.bravoJobPath = "/v1/job/bravo-web?namespace=" + bravoNS
	var allocs []*api.AllocListStub
	deadline := time.Now().Add(20 * time.Second)
	for len(allocs) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the bravo job was not placed within 20s")
		}
		// A blocking query on the job's allocs wakes when they are placed.
		ts.as(200, "GET", "/v1/job/bravo-web/allocations?namespace="+bravoNS+"&wait=2s&index="+itoa(reg.Index), nil, ts.mgmt, &allocs)
	}
	ts.bravoAllocs = allocs
	var deps []*api.Deployment
	ts.as(200, "GET", "/v1/job/bravo-web/deployments?namespace="+bravoNS, nil, ts.mgmt, &deps)
	var pols []*api.ScalingPolicyListStub
	ts.as(200, "GET", "/v1/scaling/policies?namespace="+bravoNS, nil, ts.mgmt, &pols)
	if len(deps) != 1 || len(pols) != 1 {
		t.Fatalf("bravo has %d deployments and %d scaling policies, want 1 each", len(deps), len(pols))
	}
	ts.bravoDeploy, ts.bravoPolicy = deps[0].ID, pols[0].ID
	return ts
}

// as sends a request with headers h and asserts its status; a 200 body is
// decoded into out[0] if given.
func (ts *tenants) as(want int, method, path string, body any, h map[string]string, out ...any) []byte {
	ts.t.Helper()
	code, b := ts.doAs(method, path, body, h)
	if code != want {
		ts.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	if len(out) > 0 && code == 200 {
		if err := json.Unmarshal(b, out[0]); err != nil {
			ts.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return b
}

func (ts *tenants) token(rules string) map[string]string {
	ts.t.Helper()
	name := fmt.Sprintf("p%d", time.Now().UnixNano())
	ts.as(200, "PUT", "/v1/acl/policy/"+name, api.ACLPolicy{Name: name, Rules: rules}, ts.mgmt)
	var tok api.ACLToken
	ts.as(200, "POST", "/v1/acl/token", api.ACLToken{Policies: []string{name}}, ts.mgmt, &tok)
	return map[string]string{api.HeaderToken: tok.SecretID}
}

func (ts *tenants) intro(req api.NodeIntroRequest) string {
	ts.t.Helper()
	var out api.NodeIntroResponse
	ts.as(200, "PUT", "/v1/node/intro", req, ts.mgmt, &out)
	return out.Token
}

func nodeSecret(n *api.Node) map[string]string {
	return map[string]string{api.NodeSecretHeader: n.SecretID}
}

// Finding 2: a node joins only with an introduction an operator issued
// (for its pool, and its name when the token names one), never with a
// secret of its own making; it registers again with its secret, but
// moves to another pool only with a new introduction.
func TestNodeIntroduction(t *testing.T) {
	ts := newTenants(t)
	fresh := func(id string) *api.Node { return testNode(id) }
	id := func(n int) string { return fmt.Sprintf("f0e1d2c3-0000-4000-8000-0000000001%02d", n) }
	ts.as(200, "PUT", "/v1/node/pools", &api.NodePool{Name: "gpu"}, ts.mgmt)
	for i, c := range []struct {
		name  string
		token string
	}{
		{"no introduction", ""},
		{"a made-up token", "not.a.token"},
		{"a token for another pool", ts.intro(api.NodeIntroRequest{NodePool: "gpu"})},
		{"a token for another node name", ts.intro(api.NodeIntroRequest{NodeName: "someone-else"})},
		{"an ACL token as introduction", ts.mgmt[api.HeaderToken]},
	} {
		if code, b := ts.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: fresh(id(i)), IntroToken: c.token}, nil); code != 403 {
			t.Errorf("register with %s = %d %s, want 403", c.name, code, b)
		}
	}
	// A made-up secret in the header is no introduction either.
	if code, b := ts.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: fresh(id(20))}, map[string]string{api.NodeSecretHeader: "secret-" + id(20)}); code != 403 {
		t.Errorf("register with a made-up node secret = %d %s, want 403", code, b)
	}
	n := fresh(id(30))
	n.Name = "named"
	ts.as(200, "PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n, IntroToken: ts.intro(api.NodeIntroRequest{NodeName: "named", TTL: time.Minute})}, nil)
	ts.as(200, "PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nodeSecret(n)) // again, with its secret
	moved := *n
	moved.NodePool = "gpu"
	if code, b := ts.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: &moved}, nodeSecret(n)); code != 403 {
		t.Errorf("moving to another pool without an introduction = %d %s, want 403", code, b)
	}
	ts.as(200, "PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: &moved, IntroToken: ts.intro(api.NodeIntroRequest{NodePool: "gpu"})}, nodeSecret(n))
	// Introductions are node write (operators), not a tenant's.
	ts.as(403, "PUT", "/v1/node/intro", api.NodeIntroRequest{}, ts.alpha)
	ts.as(400, "PUT", "/v1/node/intro", api.NodeIntroRequest{TTL: 48 * time.Hour}, ts.mgmt)
	ts.as(400, "PUT", "/v1/node/intro", api.NodeIntroRequest{NodePool: "nope"}, ts.mgmt)
}

// Finding 2: where nodes must prove who they are, a node's HTTP address
// is a host:port whose host is the address it registers from, with this
// cluster's scheme: servers forward users' requests there.
func TestNodeAddrChecked(t *testing.T) {
	ts := newTenants(t)
	for i, addr := range []string{"10.9.9.9:4646", "https://127.0.0.1:4646", "127.0.0.1:4646/x", "127.0.0.1", "attacker.invalid:4646"} {
		n := testNode(fmt.Sprintf("f0e1d2c3-0000-4000-8000-0000000002%02d", i))
		n.HTTPAddr = addr
		if code, b := ts.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n, IntroToken: ts.intro(api.NodeIntroRequest{})}, nil); code != 400 {
			t.Errorf("register with HTTPAddr %q = %d %s, want 400", addr, code, b)
		}
	}
	n := testNode("f0e1d2c3-0000-4000-8000-000000000299")
	n.HTTPAddr = "http://127.0.0.1:4646"
	ts.as(200, "PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n, IntroToken: ts.intro(api.NodeIntroRequest{})}, nil)
}

// Finding 3: a node's secret is good for its own node only: it neither
// drains, marks, heartbeats, updates nor reads another node's allocs; a
// token with node write drains (an operator's power) but never speaks
// for a node.
func TestNodeSecretBoundToItsNode(t *testing.T) {
	ts := newTenants(t)
	other := nodeSecret(ts.n2)
	n1 := "/v1/node/" + ts.n1.ID
	nodeWriter := ts.token(`node { policy = "write" }`)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PUT", n1 + "/heartbeat", nil},
		{"POST", n1 + "/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: []string{ts.bravoAllocs[0].ID}}},
		{"PUT", n1 + "/allocations/update", api.NodeAllocUpdateRequest{}},
		{"GET", n1 + "/client-allocs", nil},
		{"GET", n1 + "/client-mig", nil},
		{"PUT", n1 + "/services", api.NodeServicesRequest{}},
		{"PUT", n1 + "/identities", api.TaskIdentityRequest{AllocID: ts.bravoAllocs[0].ID, Task: "srv"}},
		{"PUT", n1 + "/drain", api.NodeUpdateDrainRequest{DrainSpec: &api.DrainSpec{Deadline: time.Hour}}},
		{"PUT", n1 + "/eligibility", api.NodeUpdateEligibilityRequest{Eligibility: api.NodeSchedulingIneligible}},
		{"PUT", n1 + "/gpu/mig", api.NodeMIGApplyRequest{Layouts: []api.MIGLayout{{GPU: "GPU-x", Disable: true}}}},
		{"GET", n1 + "/allocations", nil},
		{"GET", n1, nil},
		{"PUT", "/v1/client/metadata?node_id=" + ts.n1.ID, api.NodeMetaApplyRequest{Meta: map[string]*string{}}},
	} {
		if code, b := ts.doAs(c.method, c.path, c.body, other); code != 403 {
			t.Errorf("%s %s with another node's secret = %d %s, want 403", c.method, c.path, code, b)
		}
		if strings.Contains(c.path, "/drain") || strings.Contains(c.path, "/eligibility") || strings.Contains(c.path, "metadata") ||
			strings.HasSuffix(c.path, "/gpu/mig") ||
			c.path == n1 || strings.HasSuffix(c.path, "/allocations") {
			continue // node write's own powers
		}
		if code, b := ts.doAs(c.method, c.path, c.body, nodeWriter); code != 403 {
			t.Errorf("%s %s with a node write token = %d %s, want 403", c.method, c.path, code, b)
		}
	}
	ts.as(200, "PUT", "/v1/node/"+ts.n2.ID+"/heartbeat", nil, other)
	for _, n := range []*api.Node{ts.n1, ts.n2} {
		var ids []string
		for _, a := range ts.bravoAllocs {
			if a.NodeID == n.ID {
				ids = append(ids, a.ID)
			}
		}
		var fetched api.NodeAllocFetchResponse
		ts.as(200, "POST", "/v1/node/"+n.ID+"/allocations/fetch", api.NodeAllocFetchRequest{AllocIDs: ids}, nodeSecret(n), &fetched)
		if len(fetched.Allocs) != len(ids) {
			t.Errorf("node %s fetched %d of its %d allocs", n.ID, len(fetched.Allocs), len(ids))
		}
	}
	ts.as(200, "PUT", n1+"/drain", api.NodeUpdateDrainRequest{}, nodeWriter)
}

// Finding 6: node read shows a node's allocs only in the namespaces the
// token reads jobs in.
func TestNodeReadFiltersAllocs(t *testing.T) {
	ts := newTenants(t)
	reader := ts.token(`node { policy = "read" }
namespace "tenant-alpha" { policy = "read" }`)
	seen := map[string]int{}
	for _, n := range []*api.Node{ts.n1, ts.n2} {
		for name, h := range map[string]map[string]string{"reader": reader, "management": ts.mgmt} {
			var allocs []*api.Allocation
			ts.as(200, "GET", "/v1/node/"+n.ID+"/allocations", nil, h, &allocs)
			seen[name] += len(allocs)
		}
	}
	if seen["reader"] != 0 || seen["management"] != 2 {
		t.Errorf("allocs of tenant-bravo seen on the nodes: %v, want none by node read + tenant-alpha read, 2 by management", seen)
	}
}

// Findings 7 and 8: deployments, scaling policies and evals served by ID
// are checked in their own namespace, whatever ?namespace= says; so is a
// plan's job body.
func TestObjectsByIDCheckedInTheirNamespace(t *testing.T) {
	ts := newTenants(t)
	d, p, e := ts.bravoDeploy, ts.bravoPolicy, ts.bravoEval
	plan := webJob(1)
	plan["Job"].(map[string]any)["ID"], plan["Job"].(map[string]any)["Namespace"] = "bravo-web", bravoNS
	for _, q := range []string{"", "?namespace=" + alphaNS} {
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/deployment/" + d, nil},
			{"GET", "/v1/deployment/allocations/" + d, nil},
			{"POST", "/v1/deployment/fail/" + d, nil},
			{"POST", "/v1/deployment/pause/" + d, api.DeploymentPauseRequest{Pause: true}},
			{"POST", "/v1/deployment/promote/" + d, nil},
			{"GET", "/v1/scaling/policy/" + p, nil},
			{"GET", "/v1/evaluation/" + e, nil},
			{"GET", "/v1/evaluation/" + e[:8], nil},
			{"GET", "/v1/evaluation/" + e + "/allocations", nil},
			{"GET", "/v1/allocation/" + ts.bravoAllocs[0].ID, nil},
			{"POST", "/v1/job/bravo-web/plan", plan},
		} {
			// Refused (or, for a prefix looked up in tenant-alpha, not found).
			if code, b := ts.doAs(c.method, c.path+q, c.body, ts.alpha); code != 403 && code != 404 {
				t.Errorf("%s %s%s with the alpha token = %d %s, want 403", c.method, c.path, q, code, b)
			}
		}
	}
	ts.as(200, "GET", "/v1/deployment/"+d, nil, ts.mgmt)
	ts.as(200, "GET", "/v1/scaling/policy/"+p, nil, ts.mgmt)
	ts.as(200, "GET", "/v1/evaluation/"+e, nil, ts.mgmt)
}

// Finding 17: a namespace the token may not use is not shown by name
// either.
func TestNamespaceReadHidden(t *testing.T) {
	ts := newTenants(t)
	ts.as(403, "GET", "/v1/namespace/"+bravoNS, nil, ts.alpha)
	ts.as(200, "GET", "/v1/namespace/"+alphaNS, nil, ts.alpha)
}

// Finding 9: queue rules are enforced: a job runs in a queue only with
// queue write there (the default queue is everyone's unless a rule says
// otherwise), a namespace's default queue counts, and queues are read
// with queue read.
func TestQueueACL(t *testing.T) {
	ts := newTenants(t)
	ts.as(200, "PUT", "/v1/queues", map[string]any{"Queues": []*api.Queue{{Name: "team-a"}, {Name: "team-b"}}}, ts.mgmt)
	ts.as(200, "PUT", "/v1/namespace", &api.Namespace{Name: "ns-b-queue", Queue: "team-b"}, ts.mgmt)
	tok := ts.token(`namespace "*" { policy = "write" }
queue "team-a" { policy = "write" }`)
	job := func(queue, ns string) map[string]any {
		j := webJob(1)
		j["Job"].(map[string]any)["Queue"], j["Job"].(map[string]any)["Namespace"] = queue, ns
		return j
	}
	ts.as(200, "PUT", "/v1/jobs", job("team-a", alphaNS), tok)
	ts.as(200, "PUT", "/v1/jobs", job("", alphaNS), tok) // default: no rule matches it
	ts.as(403, "PUT", "/v1/jobs", job("team-b", alphaNS), tok)
	ts.as(403, "PUT", "/v1/jobs", job("", "ns-b-queue"), tok) // the namespace's default queue
	ts.as(403, "POST", "/v1/job/web/plan", job("team-b", alphaNS), tok)
	// A job in team-b (registered by management) is not scaled or
	// dispatched into it by a token without team-b.
	j := job("team-b", bravoNS)
	j["Job"].(map[string]any)["ID"] = "in-b"
	ts.as(200, "PUT", "/v1/jobs", j, ts.mgmt)
	ts.as(403, "POST", "/v1/job/in-b/scale?namespace="+bravoNS, api.JobScaleRequest{Target: map[string]string{"Group": "web"}, Count: ptr(int64(2))}, tok)
	ts.as(403, "GET", "/v1/queue/team-b", nil, tok)
	ts.as(200, "GET", "/v1/queue/team-a", nil, tok)
	var list []*api.QueueStatus
	ts.as(200, "GET", "/v1/queues", nil, tok, &list)
	var names []string
	for _, q := range list {
		names = append(names, q.Queue.Name)
	}
	if strings.Join(names, ",") != "default,team-a" {
		t.Errorf("queues listed to a team-a token: %v, want default and team-a", names)
	}
}

func ptr[T any](v T) *T { return &v }

// Finding 14: a client-only agent drops its kept token answers as soon as
// its servers' ACLs change (RemoteACL.Watch), not TTL later.
func TestRemoteACLWatchRevokes(t *testing.T) {
	ts := newTenants(t)
	r := &agenthttp.RemoteACL{Servers: []string{ts.ts.URL}, HTTP: ts.ts.Client(), TTL: time.Hour, Clock: clock.NewFake(time.Now())}
	tok := ts.token(`namespace "tenant-alpha" { policy = "read" }`)
	secret := tok[api.HeaderToken]
	if a, _, err := r.ResolveToken(secret); err != nil || !a.AllowNamespace(alphaNS, acl.CapReadJob) {
		t.Fatalf("resolve: %v %v", a, err)
	}
	changed := make(chan struct{}, 8)
	ctx, cancel := contextWithCancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Watch(ctx, func() string { return ts.n1.SecretID }, func() { changed <- struct{}{} })
	}()
	t.Cleanup(func() { cancel(); <-done })
	// The watch's first poll learns the index; then a change flushes.
	var self api.ACLToken
	ts.as(200, "GET", "/v1/acl/token/self", nil, tok, &self)
	deadline := time.After(20 * time.Second)
	for {
		// Changing an unrelated policy until the watch reports a flush
		// (its first poll may start after the first change).
		ts.token(`namespace "x" { policy = "read" }`)
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the watch reported no ACL change within 20s")
		case <-time.After(200 * time.Millisecond):
			continue // the watch had not polled yet: change again
		}
		break
	}
	ts.as(200, "DELETE", "/v1/acl/token/"+self.AccessorID, nil, ts.mgmt)
	select {
	case <-changed:
	case <-deadline:
		t.Fatal("the token's deletion was not seen within 20s")
	}
	if _, _, err := r.ResolveToken(secret); err == nil {
		t.Error("a deleted token still resolves on the client agent (its TTL is an hour)")
	}
}

// fakeClient is a client role holding one alloc of tenant-bravo: it
// answers every request with the alloc's secret file.
type fakeClient struct {
	id, secret, alloc string
	mu                sync.Mutex
	served            int
}

func (f *fakeClient) Handler() nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		f.mu.Lock()
		f.served++
		f.mu.Unlock()
		fmt.Fprint(w, "bravo-file-content")
	})
}
func (f *fakeClient) HasAlloc(id string) bool { return id == f.alloc }
func (f *fakeClient) AllocNamespace(id string) (string, bool) {
	return bravoNS, id == f.alloc
}
func (f *fakeClient) NodeID() string     { return f.id }
func (f *fakeClient) NodeSecret() string { return f.secret }

// Finding 1: a client-only agent checks /v1/client/* in the namespace of
// the alloc as its client holds it, not the request's ?namespace=; a
// server's grant lets exactly its action on its alloc through.
func TestClientAgentChecksAllocNamespace(t *testing.T) {
	ts := newTenants(t)
	fc := &fakeClient{id: ts.n1.ID, secret: ts.n1.SecretID, alloc: ts.bravoAllocs[0].ID}
	h, err := agenthttp.New(agenthttp.Config{Servers: []string{ts.ts.URL}, Client: fc,
		ACL: &agenthttp.RemoteACL{Servers: []string{ts.ts.URL}, HTTP: ts.ts.Client()}})
	if err != nil {
		t.Fatal(err)
	}
	cl := httptest.NewServer(h.Handler())
	t.Cleanup(cl.Close)
	get := func(path string, hdr map[string]string) (int, string) {
		req, _ := nethttp.NewRequest("GET", cl.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := cl.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, readAll(resp))
		return resp.StatusCode, b.String()
	}
	alloc := fc.alloc
	for _, path := range []string{
		"/v1/client/fs/cat/" + alloc + "?namespace=" + alphaNS + "&path=local/x",
		"/v1/client/fs/logs/" + alloc + "?namespace=" + alphaNS + "&task=srv&type=stdout",
		"/v1/client/allocation/" + alloc + "/stats?namespace=" + alphaNS,
		"/v1/client/allocation/" + alloc + "/exec?namespace=" + alphaNS,
		"/v1/client/fs/cat/" + alloc + "?path=local/x",
	} {
		if code, body := get(path, ts.alpha); code != 403 || strings.Contains(body, "bravo-file-content") {
			t.Errorf("GET %s with the alpha token at the client agent = %d %q, want 403", path, code, body)
		}
	}
	if code, body := get("/v1/client/fs/cat/"+alloc+"?path=local/x", ts.mgmt); code != 200 || body != "bravo-file-content" {
		t.Errorf("management at the client agent = %d %q", code, body)
	}
	// Grants: only the granted action on the granted alloc, unexpired,
	// signed with this node's secret.
	path := "/v1/client/fs/cat/" + alloc + "?path=local/x"
	exp := time.Now().Add(time.Minute).Unix()
	for name, c := range map[string]struct {
		secret, node, alloc, cap string
		exp                      int64
		want                     int
	}{
		"good":            {ts.n1.SecretID, ts.n1.ID, alloc, acl.CapReadFS, exp, 200},
		"another action":  {ts.n1.SecretID, ts.n1.ID, alloc, acl.CapAllocExec, exp, 403},
		"another alloc":   {ts.n1.SecretID, ts.n1.ID, ts.bravoAllocs[1].ID, acl.CapReadFS, exp, 403},
		"another node":    {ts.n1.SecretID, ts.n2.ID, alloc, acl.CapReadFS, exp, 403},
		"another's key":   {ts.n2.SecretID, ts.n1.ID, alloc, acl.CapReadFS, exp, 403},
		"expired":         {ts.n1.SecretID, ts.n1.ID, alloc, acl.CapReadFS, time.Now().Add(-time.Second).Unix(), 403},
		"no grant at all": {"", "", "", "", 0, 403},
	} {
		hdr := map[string]string{}
		if c.secret != "" {
			hdr[agenthttp.HeaderClientGrant] = agenthttp.SignGrant(c.secret, c.node, c.alloc, c.cap, c.exp)
		}
		if code, body := get(path, hdr); code != c.want {
			t.Errorf("grant %s: %d %q, want %d", name, code, body, c.want)
		}
	}
}

// Finding 2: servers never forward a user's token to a node: the node
// gets a grant for the one action on the one alloc instead.
func TestServerForwardsGrantNotToken(t *testing.T) {
	var mu sync.Mutex
	var got nethttp.Header
	node := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(node.Close)
	a := newTestAPIWith(t, server.Config{ACLEnabled: true})
	var boot api.ACLToken
	a.ok("POST", "/v1/acl/bootstrap", nil, &boot)
	mgmt := map[string]string{api.HeaderToken: boot.SecretID}
	n := testNode(nodeID)
	n.HTTPAddr = strings.TrimPrefix(node.URL, "http://")
	if code, b := a.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil); code != 200 {
		t.Fatalf("register = %d %s", code, b)
	}
	if code, b := a.doAs("PUT", "/v1/jobs", webJob(1), mgmt); code != 200 {
		t.Fatalf("register job = %d %s", code, b)
	}
	var allocs []*api.AllocListStub
	deadline := time.Now().Add(20 * time.Second)
	for len(allocs) == 0 && time.Now().Before(deadline) {
		code, b := a.doAs("GET", "/v1/job/web/allocations?wait=2s&index=1", nil, mgmt)
		if code == 200 {
			_ = json.Unmarshal(b, &allocs)
		}
	}
	if len(allocs) == 0 {
		t.Fatal("no alloc placed")
	}
	id := allocs[0].ID
	hdr := map[string]string{api.HeaderToken: boot.SecretID, "X-Nomad-Token": boot.SecretID, "Authorization": "Bearer " + boot.SecretID,
		"Sec-WebSocket-Protocol": "drover.exec, " + api.WebSocketTokenProtocol + boot.SecretID}
	if code, b := a.doAs("GET", "/v1/client/fs/cat/"+id[:8]+"?path=local/x", nil, hdr); code != 200 {
		t.Fatalf("forwarded cat = %d %s", code, b)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, vs := range got {
		for _, v := range vs {
			if strings.Contains(v, boot.SecretID) {
				t.Errorf("the node received the user's token in %s: %q", k, v)
			}
		}
	}
	g, err := agenthttp.ParseGrant(n.SecretID, got.Get(agenthttp.HeaderClientGrant))
	if err != nil || g.Alloc != id || g.Cap != acl.CapReadFS || g.Node != n.ID {
		t.Errorf("the node's grant: %+v %v, want read-fs on %s for %s", g, err, id, n.ID)
	}
	if p := got.Get("Sec-WebSocket-Protocol"); p != "drover.exec" {
		t.Errorf("websocket protocols forwarded: %q, want drover.exec alone", p)
	}
}

func readAll(r *nethttp.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// Finding 10: POST /v1/jobs/parse bounds what HCL functions build: the
// measured repro is a 400 with the position, not gigabytes.
func TestJobParseBoundsValues(t *testing.T) {
	ts := newTenants(t)
	src := "job \"x\" {\n  meta {\n    big = join(\"\", formatlist(\"%01000000d\", range(1000)))\n  }\n}\n"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	code, b := ts.doAs("POST", "/v1/jobs/parse?namespace="+alphaNS, &api.JobsParseRequest{JobHCL: src}, ts.alpha)
	runtime.ReadMemStats(&after)
	if code != 400 || !strings.Contains(string(b), "Value too large") || !strings.Contains(string(b), ":3:") {
		t.Fatalf("parse = %d %s, want 400 Value too large at line 3", code, b)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Errorf("the refused parse allocated %d MiB", grew>>20)
	}
}
