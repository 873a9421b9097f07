package agent_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/internal/testproc"
)

// droverIn runs the drover binary in dir; an error fails the test.
func droverIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(droverBin(t), args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("drover %v: %v %s", args, err, out)
	}
}

// pkiFiles makes a CA and one certificate per role with the real
// `drover tls` commands; it returns the CA file and each role's cert and
// key files.
func pkiFiles(t *testing.T) (ca string, certs map[string][2]string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) { droverIn(t, dir, args...) }
	run("tls", "ca", "create", "-days", "1")
	certs = map[string][2]string{}
	for _, role := range []string{tlsutil.RoleServer, tlsutil.RoleClient, tlsutil.RoleCLI} {
		run("tls", "cert", "create", "-"+role, "-days", "1")
		base := filepath.Join(dir, "global-"+role+"-drover")
		certs[role] = [2]string{base + ".pem", base + "-key.pem"}
	}
	return filepath.Join(dir, "drover-agent-ca.pem"), certs
}

// startInProc starts an agent in this process, shut down at the test's
// end.
func startInProc(t *testing.T, cfg *config.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg, clusterLogger().With("agent", cfg.Name))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = a.Shutdown(ctx)
		// Its client's tasks outlive it (for a restarted agent): reap them.
		if cfg.Client.Enabled && cfg.DataDir != "" {
			if killed := testproc.Reap(nil, cfg.DataDir); len(killed) > 0 {
				t.Logf("agent %s left %d processes running; killed: %s", cfg.Name, len(killed), strings.Join(killed, "; "))
			}
		}
	})
	return a
}

// tlsAPI is an API client presenting the given cert (none: "") and
// trusting caFile.
func tlsAPI(t *testing.T, base, caFile string, cert [2]string) *api.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tc := &tls.Config{RootCAs: pool}
	if cert[0] != "" {
		pair, err := tls.LoadX509KeyPair(cert[0], cert[1])
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	c := api.NewClient(base)
	c.HTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	return c
}

// TestE2EMutualTLS: a server and a client-only agent with tls { http,
// verify_server_hostname, verify_https_client }: the client registers
// over mutual TLS, the client agent forwards server API calls over it,
// and callers without a certificate, with another CA's, or over plain
// HTTP get nothing.
func TestE2EMutualTLS(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	ca, certs := pkiFiles(t)
	_, otherCerts := pkiFiles(t)
	tlsOf := func(role string) config.TLS {
		return config.TLS{HTTP: true, CAFile: ca, CertFile: certs[role][0], KeyFile: certs[role][1],
			VerifyServerHostname: true, VerifyHTTPSClient: true}
	}
	start := func(cfg *config.Config) *agent.Agent { return startInProc(t, cfg) }
	sc := config.Default()
	sc.Name, sc.DataDir, sc.Ports = "tls-srv", t.TempDir(), config.Ports{}
	sc.Server.Enabled, sc.Server.BootstrapExpect, sc.Server.NumSchedulers, sc.Server.Encrypt = true, 1, 1, testGossipKey
	sc.TLS = tlsOf(tlsutil.RoleServer)
	srv := start(sc)
	srvBase := "https://" + srv.HTTPAddr()
	cli := tlsAPI(t, srvBase, ca, certs[tlsutil.RoleCLI])
	testcluster.WaitReady(t, srv.Server())
	if l, err := cli.Leader(context.Background()); err != nil || l == "" {
		t.Fatalf("the leader over TLS: %q %v", l, err)
	}

	cc := config.Default()
	cc.Name, cc.DataDir, cc.Ports = "tls-client", t.TempDir(), config.Ports{}
	cc.Client.Enabled, cc.Client.Servers = true, []string{srv.HTTPAddr()}
	cc.TLS = tlsOf(tlsutil.RoleClient)
	client := start(cc)
	testcluster.WaitState(t, srv.Server(), 15*time.Second, "the client registered over mutual TLS", func() bool {
		nodes, _, err := cli.Nodes(context.Background(), nil)
		return err == nil && len(nodes) == 1 && nodes[0].Status == api.NodeStatusReady
	})
	// The client agent forwards server routes to its server over TLS.
	viaClient := tlsAPI(t, "https://"+client.HTTPAddr(), ca, certs[tlsutil.RoleCLI])
	if nodes, _, err := viaClient.Nodes(context.Background(), nil); err != nil || len(nodes) != 1 {
		t.Errorf("nodes through the client agent: %v %v", nodes, err)
	}

	for name, c := range map[string]*api.Client{
		"no certificate":        tlsAPI(t, srvBase, ca, [2]string{}),
		"another CA's":          tlsAPI(t, srvBase, ca, otherCerts[tlsutil.RoleCLI]),
		"plain http":            api.NewClient("http://" + srv.HTTPAddr()),
		"client agent, no cert": tlsAPI(t, "https://"+client.HTTPAddr(), ca, [2]string{}),
	} {
		if _, _, err := c.Nodes(context.Background(), nil); err == nil {
			t.Errorf("%s: the API answered", name)
		}
	}
}

// TestClusterRaftTLS: three servers with tls { rpc = true } elect a leader
// and replicate over mutual TLS. A rogue server that holds the gossip key
// and a certificate of the CA, but a client one, joins gossip, yet is
// never bootstrapped with, added to Raft nor promoted, and receives no
// state: a legitimate fourth server that joins after it is added and
// promoted by the same autopilot passes that leave the rogue out.
func TestClusterRaftTLS(t *testing.T) {
	ca, certs := pkiFiles(t)
	raftTLS := func(role string) func(*config.Config) {
		return func(c *config.Config) {
			c.TLS = config.TLS{RPC: true, CAFile: ca, CertFile: certs[role][0], KeyFile: certs[role][1]}
		}
	}
	servers := startCluster(t, raftTLS(tlsutil.RoleServer))
	leader := waitOneLeader(t, 20*time.Second, servers)
	if code := putJob(t, leader.base, "over-tls"); code != 200 {
		t.Fatalf("put job = %d", code)
	}
	for _, s := range servers {
		waitFor(t, 10*time.Second, s.name+" replicated the job", func() (bool, string) {
			var jobs []*api.JobListStub
			getJSON(s.base+"/v1/jobs?stale", &jobs)
			return len(jobs) == 1, fmt.Sprint(len(jobs), " jobs")
		})
	}

	join := []string{servers[0].gossipAddr()}
	rogue := startClusterServer(t, "rogue", t.TempDir(), config.Ports{}, join, raftTLS(tlsutil.RoleClient))
	waitFor(t, 30*time.Second, "the rogue alive in the leader's gossip", func() (bool, string) {
		var m api.ServerMembers
		getJSON(leader.base+"/v1/agent/members", &m)
		for _, mb := range m.Members {
			if mb.Name == "rogue.global" && mb.Status == "alive" {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(m.Members), " members")
	})
	fourth := startClusterServer(t, "s4", t.TempDir(), config.Ports{}, join, raftTLS(tlsutil.RoleServer))
	waitFor(t, 40*time.Second, "s4 a voter", func() (bool, string) {
		conf := raftPeers(t, leader.base)
		if conf == nil {
			return false, "no answer"
		}
		var got []string
		for _, sv := range conf.Servers {
			got = append(got, sv.Address+"/"+strconv.FormatBool(sv.Voter))
		}
		return slices.Contains(got, fourth.raftAddr()+"/true"), fmt.Sprint(got)
	})
	for _, sv := range raftPeers(t, leader.base).Servers {
		if sv.Address == rogue.raftAddr() {
			t.Errorf("the rogue is in the raft configuration: %+v", sv)
		}
	}
	var jobs []*api.JobListStub
	getJSON(rogue.base+"/v1/jobs?stale", &jobs)
	if len(jobs) != 0 {
		t.Errorf("the rogue received state: %d jobs", len(jobs))
	}
}
