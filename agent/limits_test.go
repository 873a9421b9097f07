package agent_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/internal/testproc"
)

// The agent config's limits block reaches the HTTP server: with
// http_max_conns_per_client = 2 a third connection from 127.0.0.1 is
// answered 429, and a snapshot restore over snapshot_restore_max_bytes is
// a 413 that leaves the jobs in place.
func TestAgentLimitsSnapshotAndConns(t *testing.T) {
	s := startClusterServer(t, "s1", t.TempDir(), config.Ports{}, nil, func(c *config.Config) {
		c.Server.BootstrapExpect = 1
		c.Limits.HTTPMaxConnsPerClient = 2
		c.Limits.SnapshotRestoreMaxBytes = 4096
	})
	waitOneLeader(t, 15*time.Second, []*clusterServer{s})
	if code := putJob(t, s.base, "a"); code != 200 {
		t.Fatalf("register a = %d", code)
	}
	if code := call(t, "PUT", s.base+"/v1/operator/snapshot", strings.Repeat("x", 8192), nil); code != 413 {
		t.Errorf("restore of 8 KiB over a 4 KiB limit = %d, want 413", code)
	}
	if code := call(t, "GET", s.base+"/v1/job/a", "", nil); code != 200 {
		t.Errorf("job a after the refused restore = %d, want 200", code)
	}
	// Two held connections (each served once), then a third is refused.
	http.DefaultClient.CloseIdleConnections()
	addr := strings.TrimPrefix(s.base, "http://")
	status := func(c net.Conn) string {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return err.Error()
		}
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err.Error()
		}
		defer r.Body.Close()
		_, _ = io.Copy(io.Discard, r.Body)
		return r.Status
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The earlier requests' connections are released when the server sees
	// them close, which is asynchronous: a 429 for one of the first two
	// means that has not happened yet, so poll with a deadline.
	for i := range 2 {
		var c net.Conn
		// No close notification to wait on: poll.
		testproc.Eventually(t, 10*time.Second, fmt.Sprintf("connection %d served (200)", i+1), func() bool {
			c = dial()
			got := status(c)
			if strings.HasPrefix(got, "200") {
				return true
			}
			c.Close()
			if !strings.HasPrefix(got, "429") {
				t.Fatalf("connection %d: %q, want 200", i+1, got)
			}
			return false
		})
		defer c.Close()
	}
	c := dial()
	defer c.Close()
	if got := status(c); !strings.HasPrefix(got, "429") {
		t.Errorf("third connection with two held: %q, want 429", got)
	}
}

// On a cluster, servers forward to the leader over HTTP, one connection
// per request: the limit does not count Raft peers' IPs, so blocking
// queries through a follower beyond the limit are all answered (here the
// servers share 127.0.0.1, so loopback is a peer's IP too).
func TestAgentLimitsClusterForwarding(t *testing.T) {
	servers := startCluster(t, func(c *config.Config) { c.Limits.HTTPMaxConnsPerClient = 2 })
	leader := waitOneLeader(t, 15*time.Second, servers)
	follower := servers[0]
	if follower == leader {
		follower = servers[1]
	}
	waitFor(t, 10*time.Second, "the follower knows the three peers", func() (bool, string) {
		var rc struct{ Servers []struct{ Address string } }
		code := call(t, "GET", follower.base+"/v1/operator/raft/configuration?stale", "", &rc)
		return code == 200 && len(rc.Servers) == 3, fmt.Sprint(code, rc)
	})
	r, err := http.Get(follower.base + "/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	idx := r.Header.Get("X-Nomad-Index")
	const n = 5
	codes := make(chan string, n)
	for range n {
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			r, err := c.Get(follower.base + "/v1/jobs?wait=1s&index=" + idx)
			if err != nil {
				codes <- err.Error()
				return
			}
			r.Body.Close()
			codes <- r.Status
		}()
	}
	for range n {
		if st := <-codes; !strings.HasPrefix(st, "200") {
			t.Errorf("blocking query through a follower: %s, want 200", st)
		}
	}
}
