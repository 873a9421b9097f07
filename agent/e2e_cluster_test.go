package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// procServer is one `drover agent -server` process of the e2e cluster;
// restart starts it again with the same data dir and ports.
type procServer struct {
	name               string
	http, raft, gossip int
	dataDir            string
	join               []string
	proc               *agentProc
	killed             bool
	base               string
}

func (s *procServer) raftAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.raft) }

func (s *procServer) start(t *testing.T) {
	t.Helper()
	args := []string{"-server", "-encrypt", testGossipKey, "-bootstrap-expect", "3", "-node", s.name, "-data-dir", s.dataDir, "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(s.http), "-raft-port", strconv.Itoa(s.raft), "-gossip-port", strconv.Itoa(s.gossip)}
	for _, j := range s.join {
		args = append(args, "-join", j)
	}
	s.proc = startAgent(t, args...)
	s.killed = false
}

func (s *procServer) kill(t *testing.T) {
	t.Helper()
	if err := s.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.proc.done
	s.killed = true
}

// writeResult records the writer's registrations: ok ones must exist
// everywhere; failed ones may or may not (unknown, not failures).
type writeResult struct {
	mu      sync.Mutex
	ok      []string
	unknown []string
	why     map[string]int // failure reasons
}

// TestE2EClusterLeaderKill runs 3 servers and 1 client from the built
// binary on loopback. A writer registers jobs continuously through every
// server while the leader is killed with SIGKILL three times (and
// restarted each time, so quorum stays). Every registration that
// succeeded must exist on every server, each election must take a few
// seconds at most, and the client's running allocations must never
// restart.
func TestE2EClusterLeaderKill(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	deadline := time.Now().Add(2 * time.Minute)
	servers := make([]*procServer, 3)
	for i := range servers {
		servers[i] = &procServer{name: fmt.Sprintf("s%d", i+1), http: freePort(t), raft: freePort(t), gossip: freePort(t), dataDir: t.TempDir()}
		servers[i].base = fmt.Sprintf("http://127.0.0.1:%d", servers[i].http)
	}
	for _, s := range servers {
		for _, o := range servers {
			if o != s {
				s.join = append(s.join, fmt.Sprintf("127.0.0.1:%d", o.gossip))
			}
		}
	}
	for _, s := range servers {
		s.start(t)
	}
	leader := waitProcLeader(t, servers, nil, 20*time.Second)

	cfgFile := filepath.Join(t.TempDir(), "client.hcl")
	if err := os.WriteFile(cfgFile, []byte("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The client is told about s1 only: it learns the others from the
	// servers' register/heartbeat answers.
	clientDir := t.TempDir()
	reapLeftovers(t, clientDir)
	startAgent(t, "-client", "-servers", fmt.Sprintf("127.0.0.1:%d", servers[0].http), "-data-dir", clientDir, "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(freePort(t)), "-config", cfgFile, "-node", "e2e-cluster-client")

	job := `{"Job":{"ID":"pinned","TaskGroups":[{"Name":"g","Count":2,"Tasks":[{"Name":"t","Driver":"raw_exec",
"Config":{"command":"/bin/sleep","args":["600"]},"Resources":{"CPU":100,"MemoryMB":32}}]}]}}`
	if code := call(t, "PUT", servers[0].base+"/v1/jobs", job, nil); code != 200 {
		t.Fatalf("register pinned = %d", code)
	}
	running := waitRunning(t, servers, "pinned", 2, 30*time.Second)
	t.Logf("running allocations: %v", running)

	// s1, the only server the client was configured with, dies: the
	// client fails over to the servers it learned and still receives work.
	servers[0].kill(t)
	if leader == servers[0] {
		waitProcLeader(t, servers, servers[0], 10*time.Second) // the next leader is read below, after s1 returns
	}
	probe := strings.Replace(job, `"pinned"`, `"probe"`, 1)
	probe = strings.Replace(probe, `"Count":2`, `"Count":1`, 1)
	if code := call(t, "PUT", servers[1].base+"/v1/jobs", probe, nil); code != 200 {
		t.Fatalf("register probe = %d", code)
	}
	probeAllocs := waitRunning(t, servers, "probe", 1, 30*time.Second)
	servers[0].start(t)
	leader = waitProcLeader(t, servers, nil, 20*time.Second)

	// The writer: one registration after another, round-robin over servers.
	ctx, stopWriter := context.WithCancel(context.Background())
	var res writeResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		hc := &http.Client{Timeout: 5 * time.Second}
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprintf("w-%04d", i)
			s := servers[i%len(servers)]
			body := fmt.Sprintf(`{"Job":{"ID":%q,"Type":"batch","Datacenters":["nowhere"],"TaskGroups":[{"Name":"g",
"Tasks":[{"Name":"t","Driver":"raw_exec","Config":{"command":"/bin/true"},"Resources":{"CPU":10,"MemoryMB":16}}]}]}}`, id)
			req, _ := http.NewRequestWithContext(ctx, "PUT", s.base+"/v1/jobs", strings.NewReader(body))
			r, err := hc.Do(req)
			res.mu.Lock()
			if err == nil && r.StatusCode == 200 {
				res.ok = append(res.ok, id)
			} else {
				res.unknown = append(res.unknown, id)
				why := "transport"
				if err == nil {
					b, _ := io.ReadAll(r.Body)
					why = fmt.Sprintf("%d %.60s", r.StatusCode, b)
				}
				if res.why == nil {
					res.why = map[string]int{}
				}
				res.why[why]++
			}
			res.mu.Unlock()
			if err == nil && r.StatusCode == 200 {
				r.Body.Close()
			} else {
				if err == nil {
					r.Body.Close()
				}
				select { // a dead server refuses at once: do not spin
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
	}()

	for round := 1; round <= 3; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("out of time before round %d", round)
		}
		// Let the writer get some writes in under this leader.
		res.mu.Lock()
		n0 := len(res.ok)
		res.mu.Unlock()
		waitFor(t, 10*time.Second, "writes under the current leader", func() (bool, string) {
			res.mu.Lock()
			defer res.mu.Unlock()
			return len(res.ok) >= n0+5, fmt.Sprint(len(res.ok)-n0, " new writes")
		})
		killedAt := time.Now()
		leader.kill(t)
		newLeader := waitProcLeader(t, servers, leader, 10*time.Second)
		t.Logf("round %d: killed %s, %s elected after %v", round, leader.name, newLeader.name, time.Since(killedAt).Round(time.Millisecond))
		leader.start(t)
		waitProcLeader(t, servers, nil, 20*time.Second) // the restarted one follows again
		leader = newLeader
	}
	stopWriter()
	wg.Wait()
	res.mu.Lock()
	ok, unknown := res.ok, res.unknown
	res.mu.Unlock()
	t.Logf("writes: %d succeeded, %d unknown %v", len(ok), len(unknown), res.why)
	if len(ok) < 20 {
		t.Errorf("only %d registrations succeeded", len(ok))
	}

	// Every successful write is on every server.
	for _, s := range servers {
		waitFor(t, 20*time.Second, "every acknowledged job on "+s.name, func() (bool, string) {
			var stubs []*api.JobListStub
			if code, _ := getJSON(s.base+"/v1/jobs?stale&prefix=w-", &stubs); code != 200 {
				return false, fmt.Sprint("status ", code)
			}
			have := map[string]bool{}
			for _, j := range stubs {
				have[j.ID] = true
			}
			var missing []string
			for _, id := range ok {
				if !have[id] {
					missing = append(missing, id)
				}
			}
			return len(missing) == 0, fmt.Sprintf("%d missing, e.g. %v", len(missing), first(missing, 5))
		})
	}

	// The node never went down: the new leaders rebuilt its heartbeat
	// timer with a grace period and the client followed the leader.
	var nodes []*api.NodeListStub
	if code, _ := getJSON(servers[1].base+"/v1/nodes", &nodes); code != 200 || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
		t.Errorf("nodes after the failovers: %d %+v, want the client node ready", code, nodes)
	}

	// The client's allocations kept running: same IDs, no restart.
	after := waitRunning(t, servers, "pinned", 2, 20*time.Second)
	if !slices.Equal(after, running) {
		t.Errorf("running allocations changed across failovers: %v, then %v", running, after)
	}
	if got := waitRunning(t, servers, "probe", 1, 20*time.Second); !slices.Equal(got, probeAllocs) {
		t.Errorf("probe allocation changed across failovers: %v, then %v", probeAllocs, got)
	}
	for _, id := range append(after, probeAllocs...) {
		var a api.Allocation
		if code, _ := getJSON(servers[0].base+"/v1/allocation/"+id, &a); code != 200 {
			t.Fatalf("GET allocation %s = %d", id, code)
		}
		for name, ts := range a.TaskStates {
			if ts.Restarts != 0 || ts.State != "running" {
				t.Errorf("alloc %s task %s: state %s, %d restarts, want running without restart", id, name, ts.State, ts.Restarts)
			}
		}
	}
}

// waitProcLeader waits until every running server names the same leader,
// which must not be `not`, and returns it.
func waitProcLeader(t *testing.T, servers []*procServer, not *procServer, d time.Duration) *procServer {
	t.Helper()
	var leader *procServer
	waitFor(t, d, "one leader named by every running server", func() (bool, string) {
		var names []string
		for _, s := range servers {
			if !s.killed {
				names = append(names, leaderOf(s.base))
			}
		}
		for _, s := range servers {
			if s.killed || s == not || names[0] != s.raftAddr() {
				continue
			}
			if slices.Equal(names, slices.Repeat([]string{names[0]}, len(names))) {
				leader = s
				return true, ""
			}
		}
		return false, fmt.Sprint(names)
	})
	return leader
}

// waitRunning waits until the job has n running allocations (as any
// live server sees them) and returns their sorted IDs.
func waitRunning(t *testing.T, servers []*procServer, job string, n int, d time.Duration) []string {
	t.Helper()
	var ids []string
	waitFor(t, d, fmt.Sprintf("%d running allocations", n), func() (bool, string) {
		for _, s := range servers {
			if s.killed {
				continue
			}
			var stubs []*api.AllocListStub
			if code, _ := getJSON(s.base+"/v1/job/"+job+"/allocations", &stubs); code != 200 {
				continue
			}
			ids = ids[:0]
			for _, a := range stubs {
				if a.ClientStatus == api.AllocClientStatusRunning {
					ids = append(ids, a.ID)
				}
			}
			sort.Strings(ids)
			return len(ids) == n && len(stubs) == n, fmt.Sprintf("%d running of %d", len(ids), len(stubs))
		}
		return false, "no server answers"
	})
	return ids
}

func first(s []string, n int) []string {
	if len(s) < n {
		return s
	}
	return s[:n]
}
