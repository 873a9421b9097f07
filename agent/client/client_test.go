package client

import (
	"context"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/testproc"
)

func testConfig(dir string, servers ...string) *Config {
	return &Config{DataDir: dir, Servers: servers, NodeName: "n1", Datacenter: "dc1", HTTPAddr: "127.0.0.1:4646",
		Meta: map[string]string{"rack": "r1"}, DevMode: false,
		Drivers: map[string]drivers.Factory{"fake": fakeFactory, "raw_exec": fakeFactory}, UpdateCoalesce: 20 * time.Millisecond}
}

func startClientF(tb testing.TB) *Client { return startClient(tb, testConfig(tb.TempDir())) }

func startClient(t testing.TB, cfg *Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Shutdown(ctx)
	})
	return c
}

func testAlloc(nodeID, id string, cfg map[string]any) *api.Allocation {
	job := &api.Job{ID: "j", Name: "j", Type: api.JobTypeService, TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1,
		Tasks: []*api.Task{{Name: "web", Driver: "fake", Config: cfg}}}}}
	return &api.Allocation{ID: id, Name: "j.g[0]", NodeID: nodeID, JobID: "j", Job: job, TaskGroup: "g", Namespace: "default",
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusPending}
}

func TestRegisterHeartbeatAndRunAlloc(t *testing.T) {
	srv := newFakeServer(t)
	srv.ttl = 100 * time.Millisecond
	dir := t.TempDir()
	c := startClient(t, testConfig(dir, srv.addr()))
	testproc.Eventually(t, 15*time.Second, "registration and heartbeats", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.registers == 1 && srv.heartbeats >= 2
	})
	srv.mu.Lock()
	n := srv.node
	for _, s := range srv.secrets {
		if s != n.SecretID {
			t.Errorf("heartbeat secret %q, want the node's", s)
		}
	}
	srv.mu.Unlock()
	if n.ID != c.NodeID() || n.Name != "n1" || n.HTTPAddr != "127.0.0.1:4646" || n.Meta["rack"] != "r1" {
		t.Errorf("registered node = %s %s %s %v", n.ID, n.Name, n.HTTPAddr, n.Meta)
	}
	if n.Attributes["kernel.name"] != "linux" || n.Attributes["driver.fake"] != "1" || n.Attributes["driver.fake.version"] != "1.0" {
		t.Errorf("attributes missing kernel/driver entries: %v", n.Attributes)
	}
	if _, ok := n.Drivers["raw_exec"]; ok {
		t.Error("raw_exec enabled outside dev mode without driver.raw_exec.enable")
	}
	if n.NodeResources == nil || n.NodeResources.Cpu.CpuShares <= 0 {
		t.Errorf("node resources = %+v", n.NodeResources)
	}

	a := testAlloc(n.ID, "aaaaaaaa-0000-4000-8000-000000000001", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "alloc running on the server", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
	if !c.HasAlloc(a.ID) {
		t.Error("HasAlloc = false for a running alloc")
	}
	// Stop it from the server.
	stop := *a
	stop.DesiredStatus = api.AllocDesiredStatusStop
	srv.putAlloc(&stop)
	testproc.Eventually(t, 15*time.Second, "alloc complete on the server", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusComplete })
	// GC on the server removes the alloc dir and state.
	srv.deleteAlloc(a.ID)
	testproc.Eventually(t, 15*time.Second, "alloc forgotten", func() bool { return !c.HasAlloc(a.ID) })
}

// TestLaggingServerListNotApplied: client-allocs is read stale (any
// server); an answer from a server behind what the client already saw
// (no allocs, a lower index) does not stop the client's alloc, and the
// next read goes to the leader.
func TestLaggingServerListNotApplied(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(t.TempDir(), srv.addr()))
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	a := testAlloc(c.NodeID(), "aaaaaaaa-0000-4000-8000-000000000011", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "alloc running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
	if srv.staleReads.Load() == 0 {
		t.Fatal("client-allocs never read stale")
	}
	srv.lagStale.Store(true)
	leader := srv.leaderReads.Load()
	srv.mu.Lock()
	srv.bump() // ends the client's poll; its next stale read lags
	srv.mu.Unlock()
	testproc.Eventually(t, 15*time.Second, "read from the leader after the lagging answer", func() bool { return srv.leaderReads.Load() > leader })
	if !c.HasAlloc(a.ID) || srv.lastStatus(a.ID) != api.AllocClientStatusRunning {
		t.Fatalf("alloc after a lagging server's answer: on client %v, status %s", c.HasAlloc(a.ID), srv.lastStatus(a.ID))
	}
}

// TestStaleNodeNotFoundAsksLeader: a stale read that does not know the
// node yet sends the next read to the leader rather than registering the
// node again.
func TestStaleNodeNotFoundAsksLeader(t *testing.T) {
	srv := newFakeServer(t)
	srv.staleNotFound.Store(true)
	c := startClient(t, testConfig(t.TempDir(), srv.addr()))
	testproc.Eventually(t, 15*time.Second, "a stale read, then one from the leader", func() bool {
		return srv.staleReads.Load() > 0 && srv.leaderReads.Load() > 0
	})
	a := testAlloc(c.NodeID(), "aaaaaaaa-0000-4000-8000-000000000013", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "alloc running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.registers != 1 {
		t.Fatalf("registered %d times, want once", srv.registers)
	}
}

// TestFetchBehindListRetried: a fetch that answers fewer allocs than the
// list named (the list came from a follower ahead of the leader) is
// asked again; the alloc runs without any further change on the server.
func TestFetchBehindListRetried(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(t.TempDir(), srv.addr()))
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	srv.emptyFetches.Store(1)
	a := testAlloc(c.NodeID(), "aaaaaaaa-0000-4000-8000-000000000012", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "alloc running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
	if n := srv.emptyFetches.Load(); n >= 0 {
		t.Fatalf("the empty fetch was never asked (left %d)", n)
	}
}

// TestStoppedBeforeStartReportedComplete: an alloc the server stopped
// before this client ran it is reported complete (never started), so the
// server stops counting it as starting.
func TestStoppedBeforeStartReportedComplete(t *testing.T) {
	srv := newFakeServer(t)
	c := startClient(t, testConfig(t.TempDir(), srv.addr()))
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	a := testAlloc(c.NodeID(), "cccccccc-0000-4000-8000-000000000001", nil)
	a.DesiredStatus = api.AllocDesiredStatusStop
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "never-run alloc reported complete", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusComplete })
	if c.HasAlloc(a.ID) {
		t.Error("HasAlloc = true for an alloc stopped before it ran, want no runner")
	}
}

func TestUpdatesAreCoalesced(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(t.TempDir(), srv.addr())
	cfg.UpdateCoalesce = 300 * time.Millisecond
	c := startClient(t, cfg)
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	ids := []string{"bbbbbbbb-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002", "bbbbbbbb-0000-4000-8000-000000000003"}
	srv.mu.Lock()
	for _, id := range ids {
		a := testAlloc(c.NodeID(), id, nil)
		a.AllocModifyIndex = srv.index + 1
		srv.allocs[id] = a
	}
	srv.bump()
	srv.mu.Unlock()
	testproc.Eventually(t, 15*time.Second, "all running", func() bool {
		for _, id := range ids {
			if srv.lastStatus(id) != api.AllocClientStatusRunning {
				return false
			}
		}
		return true
	})
	srv.mu.Lock()
	defer srv.mu.Unlock()
	// Three allocs, each with several task events: far fewer requests than events.
	if len(srv.updates) > 3 {
		t.Errorf("%d update requests for 3 allocs started together, want them coalesced", len(srv.updates))
	}
	if got := len(srv.updates[0]); got != 3 {
		t.Errorf("first batch has %d allocs, want all 3", got)
	}
}

func TestServerFailover(t *testing.T) {
	bad, good := newFakeServer(t), newFakeServer(t)
	bad.fail.Store(true)
	c := startClient(t, testConfig(t.TempDir(), bad.addr(), good.addr()))
	testproc.Eventually(t, 15*time.Second, "registered with the healthy server", func() bool {
		good.mu.Lock()
		defer good.mu.Unlock()
		return good.node != nil && good.node.ID == c.NodeID()
	})
	if got := c.servers.current(); got != good.addr() {
		t.Errorf("current server = %s, want %s", got, good.addr())
	}
}

func TestServerListRefreshedFromResponses(t *testing.T) {
	a, b := newFakeServer(t), newFakeServer(t)
	a.others = []string{b.addr()}
	c := startClient(t, testConfig(t.TempDir(), a.addr()))
	testproc.Eventually(t, 15*time.Second, "server list learned", func() bool {
		list, _, _ := c.servers.snapshot()
		return len(list) == 2
	})
	a.fail.Store(true)
	a.srv.CloseClientConnections()
	testproc.Eventually(t, 15*time.Second, "heartbeats move to the other server", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.registers+b.heartbeats > 0
	})
}

func TestIdentityPersistsAndAllocsReattach(t *testing.T) {
	srv := newFakeServer(t)
	dir := t.TempDir()
	c1, err := New(testConfig(dir, srv.addr()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 15*time.Second, "registered", func() bool { srv.mu.Lock(); defer srv.mu.Unlock(); return srv.node != nil })
	a := testAlloc(c1.NodeID(), "cccccccc-0000-4000-8000-000000000001", nil)
	srv.putAlloc(a)
	testproc.Eventually(t, 15*time.Second, "running", func() bool { return srv.lastStatus(a.ID) == api.AllocClientStatusRunning })
	id := c1.NodeID()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	c2 := startClient(t, testConfig(dir, srv.addr()))
	if c2.NodeID() != id {
		t.Errorf("node ID after restart = %s, want %s", c2.NodeID(), id)
	}
	if !c2.HasAlloc(a.ID) {
		t.Fatal("alloc not restored")
	}
	testproc.Eventually(t, 15*time.Second, "reattached", func() bool {
		ar, _ := c2.runner(a.ID)
		for _, e := range ar.Alloc().TaskStates["web"].Events {
			if e.Type == api.TaskReattached {
				return true
			}
		}
		return false
	})
	ar, _ := c2.runner(a.ID)
	if s := ar.Alloc().TaskStates["web"]; s.State != api.TaskStateRunning || s.Restarts != 0 {
		t.Errorf("after reattach: %s restarts=%d", s.State, s.Restarts)
	}
}

func TestDiffAllocs(t *testing.T) {
	run := func(id string, idx uint64) *api.Allocation {
		return &api.Allocation{ID: id, AllocModifyIndex: idx, DesiredStatus: api.AllocDesiredStatusRun}
	}
	stopped := run("s", 5)
	stopped.DesiredStatus = api.AllocDesiredStatusStop
	stopped.ClientStatus = api.AllocClientStatusPending
	done := run("done", 6)
	done.DesiredStatus = api.AllocDesiredStatusStop
	done.ClientStatus = api.AllocClientStatusComplete
	have := map[string]uint64{"a": 3, "b": 3, "gone": 1}
	// a is unchanged, so not fetched, but still on the server.
	d := diffAllocs(have, []*api.Allocation{run("b", 4), run("new", 9), stopped, done},
		map[string]uint64{"a": 3, "b": 4, "new": 9, "s": 5, "done": 6})
	if len(d.added) != 1 || d.added[0].ID != "new" {
		t.Errorf("added = %v, want [new] (terminal allocs never started)", d.added)
	}
	if len(d.neverRun) != 1 || d.neverRun[0].ID != "s" {
		t.Errorf("neverRun = %v, want [s] (stopped while pending; done is already complete)", d.neverRun)
	}
	if len(d.updated) != 1 || d.updated[0].ID != "b" {
		t.Errorf("updated = %v, want [b]", d.updated)
	}
	if len(d.removed) != 1 || d.removed[0] != "gone" {
		t.Errorf("removed = %v, want [gone]", d.removed)
	}
}

func TestRawExecGate(t *testing.T) {
	for _, tc := range []struct {
		dev  bool
		opt  string
		want bool
	}{{false, "", false}, {true, "", true}, {false, "true", true}, {false, "1", true}, {false, "false", false}} {
		cfg := testConfig(t.TempDir())
		cfg.DevMode = tc.dev
		cfg.Options = map[string]string{"driver.raw_exec.enable": tc.opt}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, got := c.drivers["raw_exec"]
		if got != tc.want {
			t.Errorf("dev=%v option=%q: raw_exec enabled = %v, want %v", tc.dev, tc.opt, got, tc.want)
		}
		c.Shutdown(context.Background())
	}
}

func TestNewNeedsDataDir(t *testing.T) {
	if _, err := New(&Config{}); err == nil {
		t.Fatal("want an error without a data dir")
	}
}
