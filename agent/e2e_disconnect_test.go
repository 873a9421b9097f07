package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// cutTransport carries a client's calls to the servers until cut: then
// every new call fails and calls in flight (blocking queries) are
// cancelled, as if the network between them had gone.
type cutTransport struct {
	cut  atomic.Bool
	done atomic.Pointer[chan struct{}]
}

var errCut = errors.New("cut off from the servers (test)")

func newCutTransport() *cutTransport {
	t := &cutTransport{}
	ch := make(chan struct{})
	t.done.Store(&ch)
	return t
}

func (t *cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.cut.Load() {
		return nil, errCut
	}
	ctx, cancel := context.WithCancel(r.Context())
	done := *t.done.Load()
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	resp, err := http.DefaultTransport.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func (t *cutTransport) setCut(cut bool) {
	if cut {
		t.cut.Store(true)
		close(*t.done.Load())
		return
	}
	ch := make(chan struct{})
	t.done.Store(&ch)
	t.cut.Store(false)
}

// disconnectCluster is one server agent (1 s heartbeat TTL, 1 s grace)
// and two in-process clients running real raw_exec tasks.
type disconnectCluster struct {
	base    string
	api     *api.Client
	clients []*testClient
	marker  string // the sleep argument of this test's tasks
}

type testClient struct {
	c    *client.Client
	dir  string
	link *cutTransport
}

func startDisconnectCluster(t *testing.T) *disconnectCluster {
	t.Helper()
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	bin := droverBin(t)
	cfg := config.Default()
	cfg.Name, cfg.BindAddr, cfg.DataDir = "srv", "127.0.0.1", t.TempDir()
	cfg.Server.Enabled, cfg.Server.BootstrapExpect, cfg.Server.NumSchedulers, cfg.Server.Encrypt = true, 1, 2, testGossipKey
	cfg.Server.MinHeartbeatTTL, cfg.Server.HeartbeatGrace = time.Second, time.Second
	a, err := agent.New(cfg, clusterLogger().With("agent", "srv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	})
	dc := &disconnectCluster{base: "http://" + a.HTTPAddr(), marker: fmt.Sprintf("86400.%d", os.Getpid()%100000+int(time.Now().UnixNano()%1000))}
	dc.api = api.NewClient(dc.base)
	testcluster.WaitReady(t, a.Server())
	for i := range 2 {
		tc := &testClient{dir: t.TempDir(), link: newCutTransport()}
		c, err := client.New(&client.Config{
			DataDir: tc.dir, Servers: []string{a.HTTPAddr()}, NodeName: fmt.Sprintf("c%d", i), Datacenter: "dc1",
			HTTPAddr: "127.0.0.1:1", BindAddr: "127.0.0.1", Drivers: agent.Drivers,
			PluginConfig: map[string]map[string]any{"raw_exec": {"executor_path": bin}},
			Options:      map[string]string{"driver.raw_exec.enable": "true"},
			Logger:       clusterLogger().With("agent", fmt.Sprintf("c%d", i)), StopAllocsOnShutdown: true,
			HTTPClient: &http.Client{Transport: tc.link}, UpdateCoalesce: 50 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		tc.c = c
		t.Cleanup(func() {
			tc.link.setCut(false) // let it report its stops
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = c.Shutdown(ctx)
		})
		dc.clients = append(dc.clients, tc)
	}
	// Whatever a failed test leaves behind: only this test's own tasks.
	t.Cleanup(func() {
		for _, pids := range dc.copies() {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	testcluster.WaitState(t, a.Server(), 15*time.Second, "both clients ready", func() bool {
		nodes, _, err := dc.api.Nodes(context.Background(), &api.QueryOptions{})
		ready := 0
		for _, n := range nodes {
			if n.Status == api.NodeStatusReady {
				ready++
			}
		}
		return err == nil && ready == 2
	})
	return dc
}

// registerJob registers web: count 4 of `sleep <marker>` with
// max_client_disconnect w.
func (dc *disconnectCluster) registerJob(t *testing.T, w time.Duration) {
	t.Helper()
	job := &api.Job{ID: "web", Type: api.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: "web", Count: 4, MaxClientDisconnect: w,
			Tasks: []*api.Task{{Name: "sleep", Driver: "raw_exec", KillTimeout: time.Second,
				Config:    map[string]any{"command": "/bin/sleep", "args": []any{dc.marker}},
				Resources: &api.Resources{CPU: 20, MemoryMB: 16}}},
		}}}
	if _, err := dc.api.RegisterJob(context.Background(), &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatal(err)
	}
}

// copies returns the pids of this test's running tasks by client index
// (found by the task's working directory under the client's data dir).
func (dc *disconnectCluster) copies() map[int][]int {
	out := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) != 2 || filepath.Base(args[0]) != "sleep" || args[1] != dc.marker {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				continue // exited, not yet reaped
			}
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		for i, c := range dc.clients {
			if strings.HasPrefix(cwd, c.dir+string(filepath.Separator)) {
				out[i] = append(out[i], pid)
			}
		}
	}
	return out
}

func (dc *disconnectCluster) allocs(t *testing.T) []*api.AllocListStub {
	t.Helper()
	stubs, _, err := dc.api.JobAllocations(context.Background(), "web", &api.QueryOptions{})
	if err != nil {
		t.Logf("job allocations: %v", err)
	}
	return stubs
}

// running counts the job's allocs the server sees running, by node.
func running(stubs []*api.AllocListStub) map[string]int {
	out := map[string]int{}
	for _, a := range stubs {
		if a.ClientStatus == api.AllocClientStatusRunning && a.DesiredStatus == api.AllocDesiredStatusRun {
			out[a.NodeID]++
		}
	}
	return out
}

func (dc *disconnectCluster) nodeStatus(t *testing.T, id string) string {
	n, _, err := dc.api.Node(context.Background(), id, &api.QueryOptions{})
	if err != nil {
		return "error: " + err.Error()
	}
	return n.Status
}

// startCount4 registers the job and waits for 4 running copies; it
// returns the index of the client with the most (the one to cut off).
func (dc *disconnectCluster) startCount4(t *testing.T, w time.Duration) int {
	t.Helper()
	dc.registerJob(t, w)
	waitFor(t, 30*time.Second, "4 running copies", func() (bool, string) {
		cp := dc.copies()
		r := running(dc.allocs(t))
		total := 0
		for _, n := range r {
			total += n
		}
		return len(cp[0])+len(cp[1]) == 4 && total == 4, fmt.Sprintf("processes %d+%d, server %v", len(cp[0]), len(cp[1]), r)
	})
	cp := dc.copies()
	if len(cp[1]) > len(cp[0]) {
		return 1
	}
	return 0
}

// TestE2EDisconnectedClientStopsAndIsReplaced: a client with half or more
// of a count-4 job (max_client_disconnect 3s) is cut off from the
// servers. The server marks its node disconnected and places
// replacements on the other client; the cut client stops its own copies
// within the window, so once the server declares the node down there are
// never more than 4 copies running; after the reconnect there still are
// exactly 4, none on the returning client.
func TestE2EDisconnectedClientStopsAndIsReplaced(t *testing.T) {
	dc := startDisconnectCluster(t)
	cut := dc.startCount4(t, 3*time.Second)
	other := 1 - cut
	cutNode, otherNode := dc.clients[cut].c.NodeID(), dc.clients[other].c.NodeID()
	before := len(dc.copies()[cut])
	dc.clients[cut].link.setCut(true)
	cutAt := time.Now()

	// Until the node is down (window over): the cut client's copies must
	// be gone by then, and the replacements must run on the other client.
	sawDisconnected := false
	waitFor(t, 30*time.Second, "node down, 4 copies on the other client", func() (bool, string) {
		st := dc.nodeStatus(t, cutNode)
		cp := dc.copies()
		if st == api.NodeStatusDisconnected {
			sawDisconnected = true
		}
		if st == api.NodeStatusDown {
			if n := len(cp[cut]); n > 0 {
				t.Fatalf("%v after the cut the node is down (window over) but the cut client still runs %d copies", time.Since(cutAt), n)
			}
		}
		r := running(dc.allocs(t))
		return st == api.NodeStatusDown && len(cp[other]) == 4 && r[otherNode] == 4,
			fmt.Sprintf("node %s, processes cut=%d other=%d, server running %v", st, len(cp[cut]), len(cp[other]), r)
	})
	t.Logf("cut client had %d copies; node down and 4 copies on the other client after %v", before, time.Since(cutAt).Round(time.Millisecond))
	if !sawDisconnected {
		t.Error("the node went down without being disconnected first (max_client_disconnect ignored)")
	}
	// The cut allocs are lost on the server, never stopped into complete.
	for _, a := range dc.allocs(t) {
		if a.NodeID == cutNode && a.ClientStatus != api.AllocClientStatusLost {
			t.Errorf("alloc %s on the cut node is %s/%s, want lost", a.ID, a.ClientStatus, a.DesiredStatus)
		}
	}

	// The client comes back: nothing restarts there, 4 copies stay.
	dc.clients[cut].link.setCut(false)
	waitFor(t, 15*time.Second, "the node ready again", func() (bool, string) {
		st := dc.nodeStatus(t, cutNode)
		return st == api.NodeStatusReady, st
	})
	deadline := time.Now().Add(3 * time.Second) // several heartbeats and a scheduling round
	for time.Now().Before(deadline) {
		cp := dc.copies()
		if n := len(cp[cut]) + len(cp[other]); n > 4 || len(cp[other]) != 4 {
			t.Fatalf("after the reconnect: %d copies on the returning client, %d on the other; want 0 and 4", len(cp[cut]), len(cp[other]))
		}
		<-time.After(50 * time.Millisecond)
	}
}

// TestE2EReconnectStopsOlderCopies: cut off within a long window (60s),
// the client keeps its copies while replacements start elsewhere; when
// it reconnects, the older copies (its own) stop and exactly 4 remain.
func TestE2EReconnectStopsOlderCopies(t *testing.T) {
	dc := startDisconnectCluster(t)
	cut := dc.startCount4(t, time.Minute)
	other := 1 - cut
	cutNode, otherNode := dc.clients[cut].c.NodeID(), dc.clients[other].c.NodeID()
	orig := dc.copies()[cut]
	dc.clients[cut].link.setCut(true)
	waitFor(t, 30*time.Second, "node disconnected, replacements on the other client", func() (bool, string) {
		st := dc.nodeStatus(t, cutNode)
		cp := dc.copies()
		r := running(dc.allocs(t))
		return st == api.NodeStatusDisconnected && len(cp[other]) == 4 && r[otherNode] == 4,
			fmt.Sprintf("node %s, processes cut=%d other=%d, server running %v", st, len(cp[cut]), len(cp[other]), r)
	})
	unknown := 0
	for _, a := range dc.allocs(t) {
		if a.NodeID == cutNode && a.DesiredStatus == api.AllocDesiredStatusRun {
			if a.ClientStatus != api.AllocClientStatusUnknown {
				t.Errorf("alloc %s on the disconnected node is %s, want unknown", a.ID, a.ClientStatus)
			}
			unknown++
		}
	}
	if unknown != len(orig) {
		t.Errorf("%d unknown allocs on the disconnected node, want %d", unknown, len(orig))
	}
	if n := len(dc.copies()[cut]); n != len(orig) {
		t.Fatalf("the cut client runs %d copies within the window, want its %d (not stopped yet)", n, len(orig))
	}

	dc.clients[cut].link.setCut(false)
	waitFor(t, 30*time.Second, "the older copies stopped, 4 left", func() (bool, string) {
		cp := dc.copies()
		r := running(dc.allocs(t))
		return len(cp[cut]) == 0 && len(cp[other]) == 4 && r[otherNode] == 4 && r[cutNode] == 0,
			fmt.Sprintf("processes cut=%d other=%d, server running %v", len(cp[cut]), len(cp[other]), r)
	})
	if st := dc.nodeStatus(t, cutNode); st != api.NodeStatusReady {
		t.Errorf("node after the reconnect = %s, want ready", st)
	}
	evals, _, err := dc.api.JobEvaluations(context.Background(), "web", &api.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reconnect := false
	for _, e := range evals {
		reconnect = reconnect || e.TriggeredBy == api.EvalTriggerReconnect
	}
	if !reconnect {
		t.Errorf("no eval triggered by %q", api.EvalTriggerReconnect)
	}
}
