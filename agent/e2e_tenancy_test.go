package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/agent/config"
	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// TestTenancyMatrix: a server and a client-only agent with mutual TLS and
// ACLs, two tenants (namespaces tenant-alpha and tenant-bravo) each with
// a running job, and every route of the route table (the client's own
// routes too) sent, about tenant-bravo's objects (its job, allocs, evals,
// deployment, scaling policy, service, policy, token, node), by each
// identity a stranger to tenant-bravo may hold: none, a token that may do
// anything in tenant-alpha, the secret of another node, and a workload
// identity of tenant-alpha's task; with ?namespace= unset, tenant-alpha,
// tenant-bravo and *; straight at the server and at the client agent.
// Every write is refused, and no answer carries any of tenant-bravo's
// identifiers or secrets (its env, its file, its log line). A route the
// matrix cannot fill in fails it: a new route is covered or the test
// says so (and a route without a capability cannot even be registered).
func TestTenancyMatrix(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	ctx := context.Background()
	ca, certs := pkiFiles(t)
	tlsOf := func(role string) config.TLS {
		return config.TLS{HTTP: true, CAFile: ca, CertFile: certs[role][0], KeyFile: certs[role][1],
			VerifyServerHostname: true, VerifyHTTPSClient: true}
	}
	sc := config.Default()
	sc.Name, sc.DataDir, sc.Ports, sc.ACLEnabled = "tenancy-srv", t.TempDir(), config.Ports{}, true
	sc.Server.Enabled, sc.Server.BootstrapExpect, sc.Server.NumSchedulers, sc.Server.Encrypt = true, 1, 1, testGossipKey
	sc.TLS = tlsOf(tlsutil.RoleServer)
	srv := startInProc(t, sc)
	srvBase := "https://" + srv.HTTPAddr()
	anon := tlsAPI(t, srvBase, ca, certs[tlsutil.RoleCLI])
	testcluster.WaitReady(t, srv.Server())
	if l, err := anon.Leader(ctx); err != nil || l == "" {
		t.Fatalf("the leader: %q %v", l, err)
	}
	var boot api.ACLToken
	if err := anon.Write(ctx, "POST", "/v1/acl/bootstrap", nil, &boot, nil); err != nil {
		t.Fatal(err)
	}
	mgmt := tlsAPI(t, srvBase, ca, certs[tlsutil.RoleCLI])
	mgmt.Token = boot.SecretID
	for _, ns := range []string{"tenant-alpha", "tenant-bravo"} {
		if err := mgmt.Write(ctx, "PUT", "/v1/namespace", &api.Namespace{Name: ns}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	tokenOf := func(name, rules string) *api.ACLToken {
		if err := mgmt.Write(ctx, "PUT", "/v1/acl/policy/"+name, &api.ACLPolicy{Name: name, Rules: rules}, nil, nil); err != nil {
			t.Fatal(err)
		}
		var tok api.ACLToken
		if err := mgmt.Write(ctx, "POST", "/v1/acl/token", &api.ACLToken{Name: name, Policies: []string{name}}, &tok, nil); err != nil {
			t.Fatal(err)
		}
		return &tok
	}
	alphaTok := tokenOf("alpha", `namespace "tenant-alpha" { policy = "write" }`)
	bravoTok := tokenOf("bravo", `namespace "tenant-bravo" { policy = "write" }`)

	cc := config.Default()
	cc.Name, cc.DataDir, cc.Ports, cc.ACLEnabled = "tenancy-client", t.TempDir(), config.Ports{}, true
	cc.Client.Enabled, cc.Client.Servers = true, []string{srv.HTTPAddr()}
	cc.Plugins["raw_exec"] = map[string]any{"enabled": true, "executor_path": droverBin(t)}
	cc.TLS = tlsOf(tlsutil.RoleClient) // its introduction: a client certificate
	cl := startInProc(t, cc)
	cliBase := "https://" + cl.HTTPAddr()
	var nodeID string
	waitFor(t, 15*time.Second, "the client node ready", func() (bool, string) {
		nodes, _, err := mgmt.Nodes(ctx, nil)
		if err != nil || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
			return false, fmt.Sprint(nodes, err)
		}
		nodeID = nodes[0].ID
		return true, ""
	})

	job := func(tenant string) *api.Job {
		script := fmt.Sprintf("echo %[1]s-file-secret > $NOMAD_TASK_DIR/secret.txt; echo %[1]s-log-secret; exec sleep 3600", tenant)
		return &api.Job{ID: tenant + "-web", Namespace: "tenant-" + tenant, Update: &api.UpdateStrategy{MaxParallel: 1},
			TaskGroups: []*api.TaskGroup{{Name: "web", Count: 1, Scaling: &api.ScalingPolicy{Min: 1, Max: 3},
				Services: []*api.Service{{Name: tenant + "-svc", Provider: api.ServiceProviderNomad}},
				Tasks: []*api.Task{{Name: tenant, Driver: "raw_exec", Env: map[string]string{"SECRET": tenant + "-env-secret"},
					Identity:  &api.WorkloadIdentity{File: true},
					Config:    map[string]any{"command": "/bin/sh", "args": []string{"-c", script}},
					Resources: &api.Resources{CPU: 50, MemoryMB: 32}}}}}}
	}
	running := map[string]*api.AllocListStub{}
	for _, tenant := range []string{"alpha", "bravo"} {
		if _, err := mgmt.RegisterJob(ctx, &api.JobRegisterRequest{Job: job(tenant)}, nil); err != nil {
			t.Fatalf("register %s: %v", tenant, err)
		}
		waitFor(t, 30*time.Second, tenant+" running", func() (bool, string) {
			stubs, _, err := mgmt.JobAllocations(ctx, tenant+"-web", &api.QueryOptions{Namespace: "tenant-" + tenant})
			for _, s := range stubs {
				if s.ClientStatus == api.AllocClientStatusRunning {
					running[tenant] = s
					return true, ""
				}
			}
			var states []string
			for _, s := range stubs {
				states = append(states, s.ClientStatus+" "+s.ClientDescription)
				for _, ts := range s.TaskStates {
					for _, e := range ts.Events {
						states = append(states, e.Type+": "+e.DisplayMessage)
					}
				}
			}
			return false, fmt.Sprint(states, err)
		})
	}
	bravoAlloc, alphaAlloc := running["bravo"], running["alpha"]
	// tenant-bravo's identifiers and secrets, which no answer to a
	// stranger may carry.
	bravo := map[string]bool{"bravo-web": true, "bravo-env-secret": true, "bravo-file-secret": true, "bravo-log-secret": true,
		bravoAlloc.ID: true, bravoAlloc.EvalID: true, bravoTok.AccessorID: true, bravoTok.SecretID: true, `namespace \"tenant-bravo\"`: true}
	var deployID, policyID, serviceID string
	waitFor(t, 15*time.Second, "bravo's deployment, scaling policy and service", func() (bool, string) {
		var deps []*api.Deployment
		_, err1 := mgmt.Query(ctx, "/v1/job/bravo-web/deployments?namespace=tenant-bravo", &deps, nil)
		var pols []*api.ScalingPolicyListStub
		_, err2 := mgmt.Query(ctx, "/v1/scaling/policies?namespace=tenant-bravo", &pols, nil)
		var regs []*api.ServiceRegistration
		_, err3 := mgmt.Query(ctx, "/v1/service/bravo-svc?namespace=tenant-bravo", &regs, nil)
		if err := errors.Join(err1, err2, err3); err != nil || len(deps) != 1 || len(pols) != 1 || len(regs) != 1 {
			return false, fmt.Sprint(len(deps), len(pols), len(regs), err)
		}
		deployID, policyID, serviceID = deps[0].ID, pols[0].ID, regs[0].ID
		return true, ""
	})
	bravo[deployID], bravo[policyID], bravo[serviceID] = true, true, true
	if _, err := mgmt.PutVariable(ctx, &api.Variable{Namespace: "tenant-bravo", Path: "team/bravo",
		Items: map[string]string{"k": "bravo-var-secret"}}, -1, nil); err != nil {
		t.Fatal(err)
	}
	bravo["bravo-var-secret"] = true

	// The strangers.
	intro, err := mgmt.CreateNodeIntro(ctx, &api.NodeIntroRequest{})
	if err != nil {
		t.Fatal(err)
	}
	intruder := &api.Node{ID: "00000000-0000-4000-8000-00000000beef", SecretID: "intruder-secret", Name: "intruder", Datacenter: "dc1",
		HTTPAddr: "127.0.0.1:1", NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 1000}, Memory: api.NodeMemoryResources{MemoryMB: 1024}}}
	if _, err := anon.RegisterNodeRequest(ctx, &api.NodeRegisterRequest{Node: intruder, IntroToken: intro.Token}); err != nil {
		t.Fatalf("register the intruder node: %v", err)
	}
	wiFile := filepath.Join(cc.DataDir, "client", "alloc", alphaAlloc.ID, "alpha", "secrets", "nomad_token")
	var wi string
	waitFor(t, 15*time.Second, "alpha's workload identity file", func() (bool, string) {
		b, err := os.ReadFile(wiFile)
		wi = strings.TrimSpace(string(b))
		return err == nil && wi != "", fmt.Sprint(err)
	})
	identities := map[string]http.Header{
		"anonymous":             {},
		"a tenant-alpha token":  {api.HeaderToken: {alphaTok.SecretID}},
		"another node's secret": {api.NodeSecretHeader: {intruder.SecretID}},
		"a workload identity":   {api.HeaderToken: {wi}},
	}

	// Positive controls: the reads the matrix sends do show data to whom
	// may see it (so a leak would be seen), at both agents.
	hc := tlsAPI(t, srvBase, ca, certs[tlsutil.RoleCLI]).HTTP
	send := func(base, method, path string, h http.Header, body string) (int, string) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(rctx, method, base+path, rd)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		for k, vs := range h {
			req.Header[k] = vs
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		// Streams (the event stream, log follow) answer for as long as
		// they are read: what arrives in a short while is enough to see
		// a leak.
		sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer scancel()
		b, _ := readUntil(sctx, resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, base := range []string{srvBase, cliBase} {
		for _, c := range []struct {
			path, token, want string
		}{
			{"/v1/client/fs/cat/" + bravoAlloc.ID + "?path=bravo/local/secret.txt", boot.SecretID, "bravo-file-secret"},
			{"/v1/client/fs/cat/" + alphaAlloc.ID + "?path=alpha/local/secret.txt&namespace=tenant-alpha", alphaTok.SecretID, "alpha-file-secret"},
			{"/v1/allocation/" + bravoAlloc.ID, boot.SecretID, "bravo-env-secret"},
		} {
			waitFor(t, 10*time.Second, "a positive control", func() (bool, string) {
				code, body := send(base, "GET", c.path, http.Header{api.HeaderToken: {c.token}}, "")
				return code == 200 && strings.Contains(body, c.want), fmt.Sprint(code, body)
			})
		}
	}
	hb := "/v1/node/" + intruder.ID + "/heartbeat"
	if code, body := send(srvBase, "PUT", hb, identities["another node's secret"], "{}"); code != 200 {
		t.Fatalf("the intruder's own heartbeat = %d %s", code, body)
	}

	vars := map[string]string{"alloc": bravoAlloc.ID, "op": "list"}
	fill := func(pattern string) []string {
		method, path, _ := strings.Cut(pattern, " ")
		if path == "" {
			method, path = "GET", pattern
		}
		var out []string
		add := func(p string) { out = append(out, method+" "+p) }
		path = strings.ReplaceAll(path, "{$}", "")
		switch {
		case path == "/v1/client/":
			for _, p := range client.RoutePatterns() {
				out = append(out, fillVars(t, p, vars))
			}
			return out
		case strings.Contains(path, "{sub}"):
			for _, sub := range []string{"allocations", "client-allocs"} {
				add(strings.ReplaceAll(strings.ReplaceAll(path, "{sub}", sub), "{id}", nodeID))
			}
			return out
		}
		v := map[string]string{"id": "x", "name": "x", "name...": "default", "op": "list", "path...": "team/bravo"}
		switch {
		case strings.HasPrefix(path, "/v1/job/"):
			v["id"] = "bravo-web"
		case strings.HasPrefix(path, "/v1/allocation/"):
			v["id"] = bravoAlloc.ID
		case strings.HasPrefix(path, "/v1/evaluation/"):
			v["id"] = bravoAlloc.EvalID
		case strings.HasPrefix(path, "/v1/deployment/"):
			v["id"] = deployID
		case strings.HasPrefix(path, "/v1/scaling/policy/"):
			v["id"] = policyID
		case strings.HasPrefix(path, "/v1/service/"):
			v["name"], v["id"] = "bravo-svc", serviceID
		case strings.HasPrefix(path, "/v1/node/pool/"):
			v["name"] = "default"
		case strings.HasPrefix(path, "/v1/node/"):
			v["id"] = nodeID
		case strings.HasPrefix(path, "/v1/namespace/"):
			v["name"] = "tenant-bravo"
		case strings.HasPrefix(path, "/v1/acl/policy/"):
			v["name"] = "bravo"
		case strings.HasPrefix(path, "/v1/acl/token/"):
			v["id"] = bravoTok.AccessorID
		}
		add(fillVarsWith(t, pattern, path, v))
		return out
	}
	// Bodies aim writes at tenant-bravo's objects.
	bravoJob := `{"Job":{"ID":"bravo-web","Namespace":"tenant-bravo","TaskGroups":[{"Name":"web","Count":3,"Tasks":[{"Name":"bravo","Driver":"raw_exec","Config":{"command":"/bin/true"}}]}]}}`
	bodyOf := func(method, path string) string {
		switch {
		case method == "GET" || method == "HEAD":
			return ""
		case path == "/v1/jobs/parse":
			return `{"JobHCL":"job \"x\" {}"}`
		case path == "/v1/jobs", strings.HasPrefix(path, "/v1/job/bravo-web") && !strings.Contains(path, "/bravo-web/"),
			strings.HasSuffix(path, "/plan"):
			return bravoJob
		case strings.HasSuffix(path, "/scale"):
			return `{"Target":{"Group":"web"},"Count":3}`
		case strings.HasSuffix(path, "/revert"):
			return `{"JobVersion":0}`
		case strings.HasPrefix(path, "/v1/deployment/"):
			return `{"DeploymentID":"` + deployID + `","Pause":true,"All":true}`
		case path == "/v1/node/register":
			return `{"Node":{"ID":"` + nodeID + `","SecretID":"made-up","Name":"hijack","HTTPAddr":"127.0.0.1:1"}}`
		case strings.HasSuffix(path, "/allocations/fetch"):
			return `{"AllocIDs":["` + bravoAlloc.ID + `"]}`
		case strings.HasSuffix(path, "/allocations/update"):
			return `{"Allocs":[{"ID":"` + bravoAlloc.ID + `","ClientStatus":"failed"}]}`
		case strings.HasSuffix(path, "/identities"):
			return `{"AllocID":"` + bravoAlloc.ID + `","Task":"bravo"}`
		case strings.HasSuffix(path, "/drain"):
			return `{"DrainSpec":{"Deadline":3600000000000}}`
		case strings.HasSuffix(path, "/eligibility"):
			return `{"Eligibility":"ineligible"}`
		case path == "/v1/evaluations":
			return `{"EvalIDs":["` + bravoAlloc.EvalID + `"]}`
		case strings.HasPrefix(path, "/v1/namespace"):
			return `{"Name":"tenant-bravo","Description":"pwned"}`
		case strings.HasPrefix(path, "/v1/client/metadata"):
			return `{"NodeID":"` + nodeID + `","Meta":{"pwned":"1"}}`
		case strings.HasSuffix(path, "/signal"):
			return `{"Signal":"SIGKILL"}`
		case strings.HasPrefix(path, "/v1/var/"):
			return `{"Items":{"pwned":"1"}}`
		}
		return "{}"
	}
	// Writes a stranger may make: none touches tenant-bravo (the node's
	// own heartbeat is not sent here: the path is the client node's).
	harmless := map[string]bool{"POST /v1/jobs/parse": true}

	queries := map[string]string{"": "", "alpha": "namespace=tenant-alpha", "bravo": "namespace=tenant-bravo", "all": "namespace=*"}
	extra := "path=bravo/local/secret.txt&task=bravo&type=stdout&follow=true&origin=start&index=1&wait=50ms&node_id=" + url.QueryEscape(nodeID)
	sent := 0
	for _, pattern := range agenthttp.RoutePatterns() {
		for _, req := range fill(pattern) {
			method, path, _ := strings.Cut(req, " ")
			for qn, q := range queries {
				u := path + "?" + strings.TrimPrefix(q+"&"+extra, "&")
				for who, h := range identities {
					for where, base := range map[string]string{"server": srvBase, "client agent": cliBase} {
						code, body := send(base, method, u, h, bodyOf(method, path))
						sent++
						ok := code < 200 || code > 299
						if !ok && method != "GET" && method != "HEAD" && !harmless[method+" "+path] {
							t.Errorf("%s %s (namespace %s) by %s at the %s was accepted: %d %.200s", method, path, qn, who, where, code, body)
							continue
						}
						if !ok {
							for secret := range bravo {
								if strings.Contains(body, secret) {
									t.Errorf("%s %s (namespace %s) by %s at the %s shows tenant-bravo's %q: %d %.300s", method, path, qn, who, where, secret, code, body)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d requests sent", sent)
	if sent < 4000 {
		t.Errorf("sent %d requests, want the whole route table", sent)
	}
	// Nothing of tenant-bravo changed.
	j, _, err := mgmt.Job(ctx, "bravo-web", &api.QueryOptions{Namespace: "tenant-bravo"})
	if err != nil || j.TaskGroups[0].Count != 1 || j.Stop {
		t.Errorf("tenant-bravo's job after the matrix: %+v %v", j, err)
	}
	a, _, err := mgmt.Allocation(ctx, bravoAlloc.ID, nil)
	if err != nil || a.ClientStatus != api.AllocClientStatusRunning || a.DesiredStatus != api.AllocDesiredStatusRun {
		t.Errorf("tenant-bravo's alloc after the matrix: %v %v", a, err)
	}
}

var routeVar = regexp.MustCompile(`\{([^}]*)\}`)

func fillVars(t *testing.T, pattern string, v map[string]string) string {
	method, path, _ := strings.Cut(pattern, " ")
	return method + " " + fillVarsWith(t, pattern, path, v)
}

// fillVarsWith replaces each {var} of path with v[var]; a var the matrix
// has no value for fails the test (teach it the new route).
func fillVarsWith(t *testing.T, pattern, path string, v map[string]string) string {
	return routeVar.ReplaceAllStringFunc(path, func(m string) string {
		name := m[1 : len(m)-1]
		val, ok := v[name]
		if !ok {
			t.Errorf("route %q: the tenancy matrix has no value for {%s}", pattern, name)
			return "x"
		}
		return val
	})
}

// readUntil reads r until EOF or ctx ends (what arrived by then).
func readUntil(ctx context.Context, r io.Reader) ([]byte, error) {
	type chunk struct {
		b   []byte
		err error
	}
	ch := make(chan chunk, 1)
	var out []byte
	for {
		go func() {
			buf := make([]byte, 32<<10)
			n, err := r.Read(buf)
			ch <- chunk{buf[:n], err}
		}()
		select {
		case c := <-ch:
			out = append(out, c.b...)
			if c.err != nil {
				return out, nil
			}
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
}
