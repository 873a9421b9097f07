package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// The federation harness: N regions on loopback, each one or more
// `drover agent -server` processes (and optionally a client), over
// mutual TLS with certificates of their region from one CA, federated
// through the servers' WAN gossip pool.

// fedPKI is one CA with a server and a client certificate per region and
// a CLI certificate.
type fedPKI struct {
	dir, ca string
	cli     [2]string
}

func newFedPKI(t *testing.T, regions ...string) *fedPKI {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) { droverIn(t, dir, args...) }
	run("tls", "ca", "create", "-days", "1")
	for _, r := range regions {
		run("tls", "cert", "create", "-server", "-region", r, "-days", "1")
		run("tls", "cert", "create", "-client", "-region", r, "-days", "1")
	}
	run("tls", "cert", "create", "-cli", "-days", "1")
	base := filepath.Join(dir, "global-cli-drover")
	return &fedPKI{dir: dir, ca: filepath.Join(dir, "drover-agent-ca.pem"), cli: [2]string{base + ".pem", base + "-key.pem"}}
}

// certs are the cert and key files of role in region.
func (p *fedPKI) certs(role, region string) (cert, key string) {
	base := filepath.Join(p.dir, region+"-"+role+"-drover")
	return base + ".pem", base + "-key.pem"
}

func (p *fedPKI) tlsBlock(role, region string) string {
	cert, key := p.certs(role, region)
	return fmt.Sprintf("tls {\n  http = true\n  ca_file = %q\n  cert_file = %q\n  key_file = %q\n  verify_server_hostname = true\n  verify_https_client = true\n}\n",
		p.ca, cert, key)
}

// fedServer is one server process of a federated region.
type fedServer struct {
	name, region            string
	http, raft, gossip, wan int
	proc                    *agentProc
	dataDir                 string
}

func (s *fedServer) base() string { return fmt.Sprintf("https://127.0.0.1:%d", s.http) }

// fedCluster is the federation under test.
type fedCluster struct {
	pki     *fedPKI
	servers map[string][]*fedServer // by region
	clients map[string]*agentProc
	seedWAN int // the WAN port every region's first server joins
	// clientHTTP is each region's client agent's HTTP port.
	clientHTTP map[string]int
}

// startFederation starts, for each region, size[region] servers (one by
// default) and, for withClient regions, a client agent (raw_exec on),
// and waits until every server knows every region and each region has
// a leader.
func startFederation(t *testing.T, regions []string, size map[string]int, withClient ...string) *fedCluster {
	t.Helper()
	fc := newFedCluster(t, regions...)
	for _, r := range regions {
		fc.startRegion(t, r, max(size[r], 1), "", "")
	}
	for _, r := range withClient {
		fc.startClient(t, r)
	}
	fc.waitFederated(t)
	return fc
}

// newFedCluster makes the PKI of regions; nothing runs yet.
func newFedCluster(t *testing.T, regions ...string) *fedCluster {
	t.Helper()
	return &fedCluster{pki: newFedPKI(t, regions...), servers: map[string][]*fedServer{}, clients: map[string]*agentProc{},
		clientHTTP: map[string]int{}}
}

// startRegion starts n servers of region r that bootstrap their own Raft
// cluster (LAN-joined to each other). The first region's first server
// seeds the WAN pool: each region's first server joins it there, the
// others through their region's LAN pool. serverHCL goes inside the
// server block of their config, topHCL at its top.
func (fc *fedCluster) startRegion(t *testing.T, r string, n int, serverHCL, topHCL string) {
	t.Helper()
	for i := range n {
		s := &fedServer{name: fmt.Sprintf("%s-s%d", r, i+1), region: r, http: freePort(t), raft: freePort(t),
			gossip: freePort(t), wan: freePort(t), dataDir: t.TempDir()}
		if fc.seedWAN == 0 {
			fc.seedWAN = s.wan
		}
		fc.servers[r] = append(fc.servers[r], s)
	}
	for i, s := range fc.servers[r] {
		join := ""
		if i == 0 {
			join = fmt.Sprintf("  server_join {\n    retry_join_wan = [\"127.0.0.1:%d\"]\n  }\n", fc.seedWAN)
		}
		cfg := fmt.Sprintf("ports {\n  serf_wan = %d\n}\nserver {\n%s%s\n}\n%s%s",
			s.wan, join, serverHCL, fc.pki.tlsBlock(tlsutil.RoleServer, r), topHCL)
		file := filepath.Join(t.TempDir(), "server.hcl")
		if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"-server", "-region", r, "-encrypt", testGossipKey, "-bootstrap-expect", strconv.Itoa(n),
			"-node", s.name, "-data-dir", s.dataDir, "-bind", "127.0.0.1", "-config", file,
			"-http-port", strconv.Itoa(s.http), "-raft-port", strconv.Itoa(s.raft), "-gossip-port", strconv.Itoa(s.gossip)}
		for _, o := range fc.servers[r] {
			if o != s {
				args = append(args, "-join", fmt.Sprintf("127.0.0.1:%d", o.gossip))
			}
		}
		s.proc = startAgent(t, args...)
	}
	c := fc.api(t, fc.servers[r][0], "")
	testproc.Eventually(t, 30*time.Second, "a leader in "+r, func() bool {
		l, err := c.Leader(context.Background())
		return err == nil && l != ""
	})
}

// startClient starts a client agent of region r (raw_exec on).
func (fc *fedCluster) startClient(t *testing.T, r string) {
	t.Helper()
	cert, key := fc.pki.certs(tlsutil.RoleClient, r)
	cfg := fmt.Sprintf("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\ntls {\n  http = true\n  ca_file = %q\n  cert_file = %q\n  key_file = %q\n  verify_server_hostname = true\n  verify_https_client = true\n}\n",
		fc.pki.ca, cert, key)
	file := filepath.Join(t.TempDir(), "client.hcl")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	reapLeftovers(t, dir)
	var servers []string
	for _, s := range fc.servers[r] {
		servers = append(servers, fmt.Sprintf("127.0.0.1:%d", s.http))
	}
	fc.clientHTTP[r] = freePort(t)
	fc.clients[r] = startAgent(t, "-client", "-region", r, "-servers", strings.Join(servers, ","), "-data-dir", dir,
		"-bind", "127.0.0.1", "-http-port", strconv.Itoa(fc.clientHTTP[r]), "-config", file, "-node", r+"-c1")
}

// waitFederated waits until every server knows every region started.
func (fc *fedCluster) waitFederated(t *testing.T) {
	t.Helper()
	var regions []string
	for r := range fc.servers {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	for _, r := range regions {
		for _, s := range fc.servers[r] {
			c := fc.api(t, s, "")
			testproc.Eventually(t, 60*time.Second, s.name+" knows every region", func() bool {
				got, err := c.Regions(context.Background())
				return err == nil && slices.Equal(got, regions)
			})
		}
	}
}

// api is an API client of server s with the CLI certificate, acting on
// region ("" = s's own).
func (fc *fedCluster) api(t *testing.T, s *fedServer, region string) *api.Client {
	t.Helper()
	c := tlsAPI(t, s.base(), fc.pki.ca, fc.pki.cli)
	c.Region = region
	return c
}

// cli runs the drover CLI against server s with the CLI certificate.
func (fc *fedCluster) cli(t *testing.T, s *fedServer, args ...string) (string, error) {
	t.Helper()
	all := append([]string{"-address", s.base(), "-ca-cert", fc.pki.ca, "-client-cert", fc.pki.cli[0], "-client-key", fc.pki.cli[1]}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, droverBin(t), all...).CombinedOutput()
	return string(out), err
}

func rawJob(id string, count int) *api.Job {
	return &api.Job{ID: id, TaskGroups: []*api.TaskGroup{{Name: "g", Count: count, Tasks: []*api.Task{{
		Name: "t", Driver: "raw_exec", Config: map[string]any{"command": "/bin/sleep", "args": []string{"600"}},
		Resources: &api.Resources{CPU: 50, MemoryMB: 32},
	}}}}}
}

// waitJobRunning waits until job id has n running allocations, as the
// servers c talks to (possibly forwarded to another region) see it, and
// returns them.
func waitJobRunning(t *testing.T, c *api.Client, id string, n int) []*api.AllocListStub {
	t.Helper()
	var allocs []*api.AllocListStub
	testproc.Eventually(t, 60*time.Second, fmt.Sprintf("%d running allocations of %s in region %q", n, id, c.Region), func() bool {
		as, _, err := c.JobAllocations(context.Background(), id, nil)
		if err != nil {
			return false
		}
		allocs = allocs[:0]
		for _, a := range as {
			if a.ClientStatus == api.AllocClientStatusRunning {
				allocs = append(allocs, a)
			}
		}
		return len(allocs) == n
	})
	return allocs
}

func errCode(err error) string {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// TestE2EFederation: three regions (eu and us with a client each, ap a
// lone server), mutual TLS on, federated over the WAN pool. Requests and
// CLI commands with -region reach the named region through any server
// (writes, reads, blocking queries), server members lists every region's
// servers, an unknown region is refused, and when ap dies the others keep
// scheduling while requests for ap fail fast with region_unavailable.
func TestE2EFederation(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	regions := []string{"eu", "us", "ap"}
	fc := startFederation(t, regions, nil, "eu", "us")
	eu, us, ap := fc.servers["eu"][0], fc.servers["us"][0], fc.servers["ap"][0]
	ctx := context.Background()

	// A job registered through eu for us runs in us, on us's node, and
	// does not exist in eu.
	viaEU := fc.api(t, eu, "us")
	if _, err := viaEU.RegisterJob(ctx, &api.JobRegisterRequest{Job: rawJob("web-us", 1)}, nil); err != nil {
		t.Fatalf("register web-us in us through eu: %v", err)
	}
	allocs := waitJobRunning(t, viaEU, "web-us", 1)
	nodes, _, err := fc.api(t, us, "").Nodes(ctx, nil)
	if err != nil || len(nodes) != 1 || nodes[0].Name != "us-c1" || allocs[0].NodeID != nodes[0].ID {
		t.Fatalf("web-us runs on %s; us nodes %v (%v), want us-c1's", allocs[0].NodeID, nodes, err)
	}
	if _, _, err := fc.api(t, eu, "").Job(ctx, "web-us", nil); errCode(err) != api.ErrJobNotFound.Code {
		t.Errorf("web-us in eu: err %v, want job_not_found (each region keeps its own state)", err)
	}
	if _, err := fc.api(t, eu, "").RegisterJob(ctx, &api.JobRegisterRequest{Job: rawJob("web-eu", 1)}, nil); err != nil {
		t.Fatalf("register web-eu: %v", err)
	}
	waitJobRunning(t, fc.api(t, eu, ""), "web-eu", 1)

	// A client agent of eu hands a request for us to its server, which
	// forwards it on.
	viaClient := tlsAPI(t, fmt.Sprintf("https://127.0.0.1:%d", fc.clientHTTP["eu"]), fc.pki.ca, fc.pki.cli)
	viaClient.Region = "us"
	if jobs, _, err := viaClient.Jobs(ctx, nil); err != nil || len(jobs) != 1 || jobs[0].ID != "web-us" {
		t.Errorf("jobs of us through eu's client agent = %v %v, want web-us", jobs, err)
	}

	// A blocking query forwarded to us returns when us changes.
	_, meta, err := viaEU.Jobs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, m, err := viaEU.Jobs(ctx, &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: time.Minute})
		if err == nil && m.LastIndex <= meta.LastIndex {
			err = fmt.Errorf("blocking query returned index %d, not past %d", m.LastIndex, meta.LastIndex)
		}
		blocked <- err
	}()
	if _, err := fc.api(t, us, "").RegisterJob(ctx, &api.JobRegisterRequest{Job: rawJob("wake", 0)}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-blocked:
		if err != nil {
			t.Errorf("forwarded blocking query: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the forwarded blocking query did not return after us changed")
	}

	// Read commands with -region, through eu, answer us's view.
	allocID := allocs[0].ID
	for _, args := range [][]string{
		{"status"}, {"job", "status"}, {"job", "status", "web-us"}, {"node", "status"},
		{"alloc", "status", allocID}, {"eval", "list"}, {"server", "members"}, {"namespace", "list"},
		{"job", "allocs", "web-us"}, {"operator", "raft", "list-peers"}, {"job", "inspect", "web-us"},
		{"job", "history", "web-us"}, {"job", "deployments", "web-us"}, {"deployment", "list"},
		{"namespace", "status", "default"}, {"queue", "list"}, {"service", "list"}, {"var", "list"},
		{"usage"}, {"operator", "scheduler", "get-config"}, {"node", "pool", "list"},
		{"alloc", "fs", allocID, "t"}, {"alloc", "logs", allocID, "t"},
	} {
		out, err := fc.cli(t, eu, append([]string{"-region", "us"}, args...)...)
		if err != nil {
			t.Errorf("drover -region us %v: %v\n%s", args, err, out)
			continue
		}
		if strings.Contains(out, "web-eu") || strings.Contains(out, "eu-c1") {
			t.Errorf("drover -region us %v shows eu's objects:\n%s", args, out)
		}
	}
	if out, err := fc.cli(t, eu, "-region", "us", "node", "status"); err != nil || !strings.Contains(out, "us-c1") {
		t.Errorf("node status -region us = %v\n%s, want us-c1", err, out)
	}
	// alloc exec's websocket crosses regions too (eu -> us's server -> us's node).
	if out, err := fc.cli(t, eu, "-region", "us", "alloc", "exec", "-i=false", allocID, "/bin/echo", "from-us"); err != nil || !strings.Contains(out, "from-us") {
		t.Errorf("alloc exec -region us = %v\n%s, want from-us", err, out)
	}

	// server members lists every region's servers, each region's leader.
	out, err := fc.cli(t, us, "server", "members")
	if err != nil {
		t.Fatalf("server members: %v\n%s", err, out)
	}
	for _, want := range []string{"Raft Version", "Build", "Datacenter", "Region", "eu-s1.eu", "us-s1.us", "ap-s1.ap"} {
		if !strings.Contains(out, want) {
			t.Errorf("server members lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 5 && (f[3] != "alive" || f[4] != "true") {
			t.Errorf("server members line %q: want alive and the leader of its (one-server) region", line)
		}
	}

	// An unknown region is refused.
	if _, _, err := fc.api(t, eu, "mars").Jobs(ctx, nil); errCode(err) != api.ErrUnknownRegion.Code {
		t.Errorf("region mars: %v, want unknown_region", err)
	}

	// ap dies: requests for it fail with region_unavailable, eu and us
	// keep scheduling (a new job in each runs).
	if err := ap.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-ap.proc.done
	start := time.Now()
	_, _, err = fc.api(t, eu, "ap").Jobs(ctx, nil)
	if errCode(err) != api.ErrRegionUnavailable.Code {
		t.Errorf("region ap after its server died: %v, want region_unavailable", err)
	}
	t.Logf("a request for the dead region failed after %v", time.Since(start).Round(time.Millisecond))
	for _, r := range []string{"eu", "us"} {
		c := fc.api(t, us, r) // us forwards to eu, answers us itself
		id := "after-ap-" + r
		if _, err := c.RegisterJob(ctx, &api.JobRegisterRequest{Job: rawJob(id, 1)}, nil); err != nil {
			t.Fatalf("register %s in %s after ap died: %v", id, r, err)
		}
		waitJobRunning(t, c, id, 1)
	}
	testproc.Eventually(t, 30*time.Second, "ap's server failed in eu's WAN pool", func() bool {
		m, err := fc.api(t, eu, "").Members(ctx)
		if err != nil {
			return false
		}
		for _, s := range m.Members {
			if s.Name == "ap-s1.ap" {
				return s.Status == "failed"
			}
		}
		return false
	})
	if _, _, err := fc.api(t, us, "ap").Jobs(ctx, nil); errCode(err) != api.ErrRegionUnavailable.Code {
		t.Errorf("region ap once its server failed: %v, want region_unavailable", err)
	}
}

// TestE2EFederationThreeServerRegion: eu runs three servers, us one; only
// eu-s1 is told of us, yet every server federates. Each region keeps its
// own Raft cluster (eu three peers, us one), requests for eu through us
// reach eu whichever eu server takes them, and keep doing so after eu's
// leader is killed and eu elects another.
func TestE2EFederationThreeServerRegion(t *testing.T) {
	fc := startFederation(t, []string{"eu", "us"}, map[string]int{"eu": 3})
	us := fc.servers["us"][0]
	ctx := context.Background()
	for region, want := range map[string]int{"eu": 3, "us": 1} {
		peers, err := fc.api(t, us, region).Peers(ctx)
		if err != nil || len(peers) != want {
			t.Errorf("raft peers of %s = %v %v, want %d", region, peers, err, want)
		}
	}
	m, err := fc.api(t, us, "").Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range m.Members {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	if want := []string{"eu-s1.eu", "eu-s2.eu", "eu-s3.eu", "us-s1.us"}; !slices.Equal(names, want) {
		t.Errorf("members seen from us = %v, want %v", names, want)
	}
	// us's LAN pool refuses eu's servers (Raft clusters never mix); the
	// WAN join of `drover server join` takes them.
	euS1 := fc.servers["eu"][0]
	if n, err := fc.api(t, us, "").Join(ctx, []string{fmt.Sprintf("127.0.0.1:%d", euS1.gossip)}, false); err == nil {
		t.Errorf("us joined eu's LAN pool (%d answered), want refused", n)
	}
	if out, err := fc.cli(t, us, "server", "join", fmt.Sprintf("127.0.0.1:%d", euS1.wan)); err != nil || !strings.Contains(out, "Joined 1 servers") {
		t.Errorf("server join eu's WAN address = %v\n%s", err, out)
	}
	if peers, err := fc.api(t, us, "").Peers(ctx); err != nil || len(peers) != 1 {
		t.Errorf("us's raft peers after the joins = %v %v, want itself only", peers, err)
	}
	toEU := fc.api(t, us, "eu")
	for i := range 5 {
		j := rawJob(fmt.Sprintf("batch-%d", i), 1)
		if _, err := toEU.RegisterJob(ctx, &api.JobRegisterRequest{Job: j}, nil); err != nil {
			t.Fatalf("register %s in eu through us: %v", j.ID, err)
		}
	}
	if jobs, _, err := fc.api(t, us, "").Jobs(ctx, nil); err != nil || len(jobs) != 0 {
		t.Errorf("jobs of us = %v %v, want none", jobs, err)
	}

	leader, err := fc.api(t, fc.servers["eu"][0], "").Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var dead *fedServer
	for _, s := range fc.servers["eu"] {
		if leader == fmt.Sprintf("127.0.0.1:%d", s.raft) {
			dead = s
		}
	}
	if dead == nil {
		t.Fatalf("eu's leader %s is none of its servers", leader)
	}
	if err := dead.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-dead.proc.done
	testproc.Eventually(t, 60*time.Second, "a write to eu through us after eu's leader died", func() bool {
		_, err := toEU.RegisterJob(ctx, &api.JobRegisterRequest{Job: rawJob("after-failover", 1)}, nil)
		return err == nil
	})
	jobs, _, err := toEU.Jobs(ctx, nil)
	if err != nil || len(jobs) != 6 {
		t.Errorf("jobs of eu after the failover = %d %v, want 6", len(jobs), err)
	}
}

// TestE2EFederationACLReplication: eu is the authoritative region, us
// replicates from it with a replication token. eu's bootstrap token works
// in us once replicated; a policy and a global token written through us
// land in eu and, replicated, work in us; a local token made in us stays
// in us; a deleted global token stops working in us.
func TestE2EFederationACLReplication(t *testing.T) {
	ctx := context.Background()
	fc := newFedCluster(t, "eu", "us")
	const aclOn = "acl {\n  enabled = true\n}\n"
	fc.startRegion(t, "eu", 1, `  authoritative_region = "eu"`, aclOn)
	eu := fc.servers["eu"][0]
	var mgmt api.ACLToken
	if err := fc.api(t, eu, "").Write(ctx, "POST", "/v1/acl/bootstrap", nil, &mgmt, nil); err != nil {
		t.Fatalf("bootstrap eu: %v", err)
	}
	fc.startRegion(t, "us", 1, `  authoritative_region = "eu"`,
		aclOn[:len(aclOn)-2]+fmt.Sprintf("  replication_token = %q\n}\n", mgmt.SecretID))
	fc.waitFederated(t)
	us := fc.servers["us"][0]
	as := func(s *fedServer, secret string) *api.Client {
		c := fc.api(t, s, "")
		c.Token = secret
		return c
	}
	works := func(s *fedServer, secret string) bool {
		_, _, err := as(s, secret).Jobs(ctx, nil)
		return err == nil
	}
	testproc.Eventually(t, 30*time.Second, "eu's bootstrap token works in us", func() bool { return works(us, mgmt.SecretID) })

	// Writes of global ACL objects through us go to eu.
	usAdmin := as(us, mgmt.SecretID)
	pol := &api.ACLPolicy{Name: "readjobs", Rules: `namespace "default" { policy = "read" }`}
	if err := usAdmin.Write(ctx, "PUT", "/v1/acl/policy/readjobs", pol, nil, nil); err != nil {
		t.Fatalf("write policy through us: %v", err)
	}
	var got api.ACLPolicy
	if _, err := as(eu, mgmt.SecretID).Query(ctx, "/v1/acl/policy/readjobs", &got, nil); err != nil || got.Rules != pol.Rules {
		t.Fatalf("policy in eu = %+v %v, want the one written through us", got, err)
	}
	var global api.ACLToken
	if err := usAdmin.Write(ctx, "PUT", "/v1/acl/token", &api.ACLToken{Name: "g", Type: api.ACLTokenClient,
		Policies: []string{"readjobs"}, Global: true}, &global, nil); err != nil {
		t.Fatalf("create a global token through us: %v", err)
	}
	if !works(eu, global.SecretID) {
		t.Fatal("the global token created through us does not work in eu")
	}
	testproc.Eventually(t, 30*time.Second, "the global token works in us", func() bool { return works(us, global.SecretID) })

	// A local token stays in us, and replication leaves it alone.
	var local api.ACLToken
	if err := usAdmin.Write(ctx, "PUT", "/v1/acl/token", &api.ACLToken{Name: "l", Type: api.ACLTokenClient,
		Policies: []string{"readjobs"}}, &local, nil); err != nil {
		t.Fatalf("create a local token in us: %v", err)
	}
	if works(eu, local.SecretID) {
		t.Error("us's local token works in eu")
	}
	if !works(us, local.SecretID) {
		t.Error("us's local token does not work in us")
	}

	// Deleted in eu: it stops working in us.
	if err := as(eu, mgmt.SecretID).Write(ctx, "DELETE", "/v1/acl/token/"+global.AccessorID, nil, nil, nil); err != nil {
		t.Fatalf("delete the global token in eu: %v", err)
	}
	testproc.Eventually(t, 30*time.Second, "the deleted global token refused in us", func() bool { return !works(us, global.SecretID) })
	if !works(us, local.SecretID) {
		t.Error("us's local token stopped working after replication")
	}
}
