package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/agent/gossip"
	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server"
)

// clusterServer is one in-process server agent of a test cluster: real
// memberlist on loopback and Raft over TCP on 127.0.0.1.
type clusterServer struct {
	name string
	cfg  *config.Config
	a    *agent.Agent
	base string
}

func (s *clusterServer) raftAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.cfg.Ports.Raft) }
func (s *clusterServer) gossipAddr() string {
	return fmt.Sprintf("127.0.0.1:%d", s.cfg.Ports.Gossip)
}

func clusterLogger() *slog.Logger {
	if os.Getenv("DROVER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startClusterServer starts a server agent; ports 0 are picked by the
// agent (and then found in cfg.Ports).
func startClusterServer(t *testing.T, name, dataDir string, ports config.Ports, join []string, mod func(*config.Config)) *clusterServer {
	t.Helper()
	cfg := config.Default()
	cfg.Name, cfg.BindAddr, cfg.DataDir, cfg.LogLevel = name, "127.0.0.1", dataDir, "debug"
	cfg.Ports = ports
	cfg.Server.Enabled, cfg.Server.BootstrapExpect, cfg.Server.NumSchedulers, cfg.Server.Encrypt = true, 3, 1, testGossipKey
	cfg.Server.DeadServerGrace, cfg.Server.ServerStabilization = time.Second, 200*time.Millisecond
	cfg.Join = join
	if mod != nil {
		mod(cfg)
	}
	a, err := agent.New(cfg, clusterLogger().With("agent", name))
	if err != nil {
		t.Fatalf("agent.New(%s): %v", name, err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	s := &clusterServer{name: name, cfg: cfg, a: a, base: "http://" + a.HTTPAddr()}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop shuts the agent down (no gossip leave: the others see a failure).
func (s *clusterServer) stop(t *testing.T) {
	if s.a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.a.Shutdown(ctx); err != nil {
		t.Errorf("shutdown %s: %v", s.name, err)
	}
	s.a = nil
}

// startCluster starts three servers with -bootstrap-expect 3, the second
// and third joining the first.
func startCluster(t *testing.T, mod func(*config.Config)) []*clusterServer {
	t.Helper()
	s1 := startClusterServer(t, "s1", t.TempDir(), config.Ports{}, nil, mod)
	join := []string{s1.gossipAddr()}
	s2 := startClusterServer(t, "s2", t.TempDir(), config.Ports{}, join, mod)
	s3 := startClusterServer(t, "s3", t.TempDir(), config.Ports{}, join, mod)
	return []*clusterServer{s1, s2, s3}
}

// waitFor is testproc.Eventually for a cond that also says why it does
// not hold yet: the last reason is logged when the wait fails.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	defer func() {
		if t.Failed() && last != "" {
			t.Logf("waiting for %s, last: %s", what, last)
		}
	}()
	testproc.Eventually(t, d, what, func() bool {
		ok, msg := cond()
		last = msg
		return ok
	})
}

// getJSON GETs url into out and returns the status and headers; a
// transport error is status 0.
func getJSON(url string, out any) (int, http.Header) {
	c := &http.Client{Timeout: 5 * time.Second}
	r, err := c.Get(url)
	if err != nil {
		return 0, nil
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode == 200 && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return -1, r.Header
		}
	}
	return r.StatusCode, r.Header
}

func leaderOf(base string) string {
	var l string
	if code, _ := getJSON(base+"/v1/status/leader", &l); code != 200 {
		return ""
	}
	return l
}

// waitOneLeader waits until every given server names the same leader,
// which leads with its duties running, and returns it (woken by the
// servers' leadership signals, not polled).
func waitOneLeader(t *testing.T, d time.Duration, servers []*clusterServer) *clusterServer {
	t.Helper()
	var ss []*server.Server
	for _, s := range servers {
		ss = append(ss, s.a.Server())
	}
	return servers[testcluster.Leader(t, d, ss)]
}

// jobIDs lists the jobs in base's own state (?stale: a plain read would
// be answered by the leader).
func jobIDs(t *testing.T, base string) ([]string, bool) {
	var stubs []*api.JobListStub
	if code, _ := getJSON(base+"/v1/jobs?stale", &stubs); code != 200 {
		return nil, false
	}
	var ids []string
	for _, s := range stubs {
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	return ids, true
}

func putJob(t *testing.T, base, id string) int {
	t.Helper()
	body := fmt.Sprintf(`{"Job":{"ID":%q,"Type":"batch","Datacenters":["nowhere"],"TaskGroups":[{"Name":"g","Count":1,
"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/true"},"Resources":{"CPU":10,"MemoryMB":16}}]}]}}`, id)
	req, err := http.NewRequest("PUT", base+"/v1/jobs", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Logf("PUT job %s on %s: %v", id, base, err)
		return 0
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Logf("PUT job %s on %s = %d %s", id, base, r.StatusCode, b)
	}
	return r.StatusCode
}

func raftPeers(t *testing.T, base string) *api.RaftConfiguration {
	var conf api.RaftConfiguration
	if code, _ := getJSON(base+"/v1/operator/raft/configuration", &conf); code != 200 {
		return nil
	}
	return &conf
}

func TestClusterJoinFailoverCleanupRejoin(t *testing.T) {
	// Hold writes through the election for long enough on a slow machine.
	hold := agenthttp.LeaderHoldTimeout
	agenthttp.LeaderHoldTimeout = 15 * time.Second
	t.Cleanup(func() { agenthttp.LeaderHoldTimeout = hold }) // after the agents stop
	servers := startCluster(t, nil)
	leader := waitOneLeader(t, 15*time.Second, servers)
	var followers []*clusterServer
	for _, s := range servers {
		if s != leader {
			followers = append(followers, s)
		}
	}

	// Gossip: every server lists the three, alive, with their tags.
	for _, s := range servers {
		waitFor(t, 10*time.Second, s.name+" members", func() (bool, string) {
			var m api.ServerMembers
			getJSON(s.base+"/v1/agent/members", &m)
			var got []string
			for _, mb := range m.Members {
				got = append(got, mb.Name+"="+mb.Status+"@"+mb.Tags["raft_addr"])
			}
			sort.Strings(got)
			var want []string
			for _, o := range servers {
				want = append(want, o.name+".global=alive@"+o.raftAddr())
			}
			return slices.Equal(got, want), fmt.Sprint(got)
		})
	}
	// A follower may know the leader (heartbeats) a moment before it has
	// replicated the configuration.
	waitFor(t, 10*time.Second, "3 voters on a follower", func() (bool, string) {
		conf := raftPeers(t, followers[0].base)
		if conf == nil {
			return false, "no answer"
		}
		voters := 0
		for _, sv := range conf.Servers {
			if sv.Voter {
				voters++
			}
		}
		return voters == 3 && len(conf.Servers) == 3, fmt.Sprintf("%+v", conf.Servers)
	})

	// A write to a follower is forwarded to the leader.
	if code := putJob(t, followers[0].base, "before-kill"); code != 200 {
		t.Fatalf("register through a follower = %d, want 200", code)
	}
	// ?consistent on a follower answers (through the leader) with the job.
	var j api.Job
	if code, h := getJSON(followers[1].base+"/v1/job/before-kill?consistent", &j); code != 200 || j.ID != "before-kill" {
		t.Errorf("consistent read on a follower = %d %q, want the job", code, j.ID)
	} else if h.Get(api.HeaderKnownLeader) != "true" || h.Get(api.HeaderIndex) == "" {
		t.Errorf("consistent read headers: known leader %q, index %q", h.Get(api.HeaderKnownLeader), h.Get(api.HeaderIndex))
	}
	for _, s := range servers {
		waitFor(t, 10*time.Second, "the job on "+s.name, func() (bool, string) {
			code, h := getJSON(s.base+"/v1/job/before-kill?stale", nil)
			return code == 200 && h.Get(api.HeaderKnownLeader) == "true", fmt.Sprint(code)
		})
	}
	if code, _ := getJSON(followers[0].base+"/v1/job/x?consistent=maybe", nil); code != 400 {
		t.Errorf("?consistent=maybe = %d, want 400", code)
	}

	// The leader goes away: the two others elect a new one within 10 s.
	// A write sent during the election is held until there is a leader.
	oldLeader := leader
	lostAt := time.Now()
	oldLeader.stop(t)
	if code := putJob(t, followers[0].base, "during-election"); code != 200 {
		t.Errorf("register during the election = %d, want 200 once a leader is elected", code)
	}
	t.Logf("write during the election answered after %v", time.Since(lostAt).Round(time.Millisecond))
	leader = waitOneLeader(t, 10*time.Second, followers)
	t.Logf("new leader %s after %v", leader.name, time.Since(lostAt).Round(time.Millisecond))
	for _, s := range followers {
		if ids, _ := jobIDs(t, s.base); !slices.Contains(ids, "before-kill") {
			t.Errorf("%s lost the job registered before the leader died: %v", s.name, ids)
		}
	}
	if code := putJob(t, followers[0].base, "after-kill"); code != 200 {
		t.Fatalf("register after failover = %d", code)
	}

	// Autopilot removes the dead server after the grace period (1 s).
	waitFor(t, 15*time.Second, "the dead server removed from raft", func() (bool, string) {
		c := raftPeers(t, leader.base)
		if c == nil {
			return false, "no answer"
		}
		var addrs []string
		for _, sv := range c.Servers {
			addrs = append(addrs, sv.Address)
		}
		return len(c.Servers) == 2 && !slices.Contains(addrs, oldLeader.raftAddr()), fmt.Sprint(addrs)
	})

	// It comes back (same data dir and ports): it is added as a non-voter,
	// promoted, and catches up.
	back := startClusterServer(t, oldLeader.name, oldLeader.cfg.DataDir, oldLeader.cfg.Ports, []string{followers[0].gossipAddr()}, nil)
	waitFor(t, 20*time.Second, "the returning server a voter again", func() (bool, string) {
		c := raftPeers(t, leader.base)
		if c == nil {
			return false, "no answer"
		}
		var got []string
		for _, sv := range c.Servers {
			got = append(got, fmt.Sprintf("%s voter=%v", sv.Address, sv.Voter))
		}
		return len(c.Servers) == 3 && slices.Contains(got, back.raftAddr()+" voter=true"), fmt.Sprint(got)
	})
	waitFor(t, 10*time.Second, "the returning server has every job", func() (bool, string) {
		ids, _ := jobIDs(t, back.base)
		return slices.Equal(ids, []string{"after-kill", "before-kill", "during-election"}), fmt.Sprint(ids)
	})

	// operator raft remove-peer (forwarded to the leader); unknown peer is 404.
	var other *clusterServer
	for _, s := range followers {
		if s != leader {
			other = s
		}
	}
	if code := call(t, "DELETE", back.base+"/v1/operator/raft/peer?address=127.0.0.1:1", "", nil); code != 404 {
		t.Errorf("remove unknown peer = %d, want 404", code)
	}
	if code := call(t, "DELETE", back.base+"/v1/operator/raft/peer", "", nil); code != 400 {
		t.Errorf("remove peer without id or address = %d, want 400", code)
	}
	if code := call(t, "DELETE", back.base+"/v1/operator/raft/peer?address="+other.raftAddr(), "", nil); code != 200 {
		t.Fatalf("remove peer %s = %d", other.raftAddr(), code)
	}
	c := raftPeers(t, leader.base)
	if c == nil || len(c.Servers) != 2 {
		t.Fatalf("after remove-peer: %+v, want 2 servers", c)
	}
	// It is still alive in gossip: autopilot adds it back.
	waitFor(t, 20*time.Second, "the removed but alive server re-added as a voter", func() (bool, string) {
		c := raftPeers(t, leader.base)
		if c == nil {
			return false, "no answer"
		}
		n := 0
		for _, sv := range c.Servers {
			if sv.Voter {
				n++
			}
		}
		return n == 3, fmt.Sprint(n, " voters")
	})
}

func TestClusterSnapshotAndKeyring(t *testing.T) {
	key, err := gossip.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	// A long dead-server grace: only force-leave removes a dead server.
	servers := startCluster(t, func(c *config.Config) { c.Server.Encrypt, c.Server.DeadServerGrace = key, time.Hour })
	leader := waitOneLeader(t, 15*time.Second, servers)
	follower := servers[0]
	if follower == leader {
		follower = servers[1]
	}
	for _, id := range []string{"a", "b"} {
		if code := putJob(t, follower.base, id); code != 200 {
			t.Fatalf("register %s = %d", id, code)
		}
	}
	// Saved through a follower: it comes from the leader.
	resp, err := http.Get(follower.base + "/v1/operator/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.HasPrefix(file, []byte(`{"Format":"drover-snapshot"`)) {
		t.Fatalf("snapshot save = %d %.80q", resp.StatusCode, file)
	}
	if code := putJob(t, follower.base, "c"); code != 200 {
		t.Fatal("register c")
	}
	// A damaged file is refused with 400 and changes nothing.
	damaged := append([]byte(nil), file...)
	damaged[len(damaged)-1] ^= 0xff
	if code := call(t, "PUT", follower.base+"/v1/operator/snapshot", string(damaged), nil); code != 400 {
		t.Errorf("restore damaged snapshot = %d, want 400", code)
	}
	var rr api.SnapshotRestoreResponse
	if code := call(t, "PUT", follower.base+"/v1/operator/snapshot", string(file), &rr); code != 200 || rr.Index == 0 {
		t.Fatalf("restore = %d %+v", code, rr)
	}
	for _, s := range servers {
		waitFor(t, 10*time.Second, "restored jobs on "+s.name, func() (bool, string) {
			ids, _ := jobIDs(t, s.base)
			return slices.Equal(ids, []string{"a", "b"}), fmt.Sprint(ids)
		})
	}
	// The cluster still takes writes after the restore.
	if code := putJob(t, follower.base, "d"); code != 200 {
		t.Fatalf("register after restore = %d", code)
	}

	// Gossip key rotation through the API: install, use, remove the old one.
	newKey, _ := gossip.GenerateKey()
	for _, step := range []struct{ op, key string }{{"install", newKey}, {"use", newKey}, {"remove", key}} {
		var kr api.KeyringResponse
		if code := call(t, "PUT", servers[2].base+"/v1/agent/keyring/"+step.op, fmt.Sprintf(`{"Key":%q}`, step.key), &kr); code != 200 || kr.NumResp != 3 || kr.NumErr != 0 {
			t.Fatalf("keyring %s = %d %+v", step.op, code, kr)
		}
	}
	var kr api.KeyringResponse
	if code, _ := getJSON(servers[0].base+"/v1/agent/keyring/list", &kr); code != 200 || kr.Keys[newKey] != 3 || len(kr.Keys) != 1 {
		t.Fatalf("keyring list = %d %+v, want only the new key on 3 servers", code, kr)
	}
	if code := call(t, "PUT", servers[0].base+"/v1/agent/keyring/install", `{"Key":"short"}`, nil); code != 400 {
		t.Errorf("install a malformed key = %d, want 400", code)
	}
	for _, s := range servers {
		var m api.ServerMembers
		getJSON(s.base+"/v1/agent/members", &m)
		for _, mb := range m.Members {
			if mb.Status != "alive" {
				t.Errorf("after rotation %s sees %s %s", s.name, mb.Name, mb.Status)
			}
		}
	}
	// The rotated keyring is persisted: a restarted server uses it (its
	// -encrypt key is the old one) and rejoins.
	s := servers[0]
	s.stop(t)
	back := startClusterServer(t, s.name, s.cfg.DataDir, s.cfg.Ports, []string{servers[1].gossipAddr()},
		func(c *config.Config) { c.Server.Encrypt, c.Server.DeadServerGrace = key, time.Hour })
	waitFor(t, 15*time.Second, "the restarted server alive in gossip", func() (bool, string) {
		var m api.ServerMembers
		getJSON(servers[1].base+"/v1/agent/members", &m)
		var st []string
		for _, mb := range m.Members {
			st = append(st, mb.Name+"="+mb.Status)
		}
		return strings.Count(strings.Join(st, " "), "=alive") == 3, fmt.Sprint(st)
	})
	waitFor(t, 10*time.Second, "jobs on the restarted server", func() (bool, string) {
		ids, _ := jobIDs(t, back.base)
		return slices.Equal(ids, []string{"a", "b", "d"}), fmt.Sprint(ids)
	})

	// force-leave: a stopped server stays a Raft peer (grace 1 h) until an
	// operator force-leaves it; then the leader removes it at once.
	running := []*clusterServer{back, servers[1], servers[2]}
	leader = waitOneLeader(t, 15*time.Second, running)
	var victim, witness *clusterServer
	for _, s := range running {
		switch {
		case s == leader:
		case victim == nil:
			victim = s
		default:
			witness = s
		}
	}
	if code := call(t, "PUT", witness.base+"/v1/agent/force-leave?node="+leader.name, "", nil); code != 400 {
		t.Errorf("force-leave of an alive server = %d, want 400", code)
	}
	victim.stop(t)
	for _, s := range []*clusterServer{leader, witness} {
		waitFor(t, 15*time.Second, victim.name+" failed in the gossip of "+s.name, func() (bool, string) {
			var m api.ServerMembers
			getJSON(s.base+"/v1/agent/members", &m)
			for _, mb := range m.Members {
				if mb.Name == victim.name+".global" {
					return mb.Status == "failed", mb.Status
				}
			}
			return false, "not listed"
		})
	}
	if c := raftPeers(t, leader.base); c == nil || len(c.Servers) != 3 {
		t.Fatalf("raft peers right after the failure: %+v, want all 3 (grace 1 h)", c)
	}
	if code := call(t, "PUT", witness.base+"/v1/agent/force-leave?node="+victim.name, "", nil); code != 200 {
		t.Fatalf("force-leave %s = %d", victim.name, code)
	}
	waitFor(t, 10*time.Second, victim.name+" removed from raft", func() (bool, string) {
		c := raftPeers(t, leader.base)
		if c == nil {
			return false, "no answer"
		}
		var addrs []string
		for _, sv := range c.Servers {
			addrs = append(addrs, sv.Address)
		}
		return len(addrs) == 2 && !slices.Contains(addrs, victim.raftAddr()), fmt.Sprint(addrs)
	})
}

func TestClusterLeaveOnTerminate(t *testing.T) {
	// A long grace: only the announced leave can remove the server so soon.
	servers := startCluster(t, func(c *config.Config) {
		c.Server.DeadServerGrace, c.Server.LeaveOnTerminate = time.Hour, true
	})
	leader := waitOneLeader(t, 15*time.Second, servers)
	var gone *clusterServer
	for _, s := range servers {
		if s != leader {
			gone = s
			break
		}
	}
	waitFor(t, 10*time.Second, "3 raft peers", func() (bool, string) {
		c := raftPeers(t, leader.base)
		return c != nil && len(c.Servers) == 3, fmt.Sprintf("%+v", c)
	})
	gone.stop(t)
	waitFor(t, 10*time.Second, gone.name+" left and removed from raft", func() (bool, string) {
		var m api.ServerMembers
		getJSON(leader.base+"/v1/agent/members", &m)
		status := "not listed"
		for _, mb := range m.Members {
			if mb.Name == gone.name+".global" {
				status = mb.Status
			}
		}
		c := raftPeers(t, leader.base)
		if c == nil {
			return false, "no answer"
		}
		var addrs []string
		for _, sv := range c.Servers {
			addrs = append(addrs, sv.Address)
		}
		return status == "left" && len(addrs) == 2 && !slices.Contains(addrs, gone.raftAddr()), status + " " + fmt.Sprint(addrs)
	})
}
