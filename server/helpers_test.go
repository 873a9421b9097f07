package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

var testT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type serverOpt func(*Config)

// newTestServer starts an in-memory single server and waits until it
// leads.
func newTestServer(t *testing.T, opts ...serverOpt) *Server {
	t.Helper()
	cfg := &Config{DevMode: true, NumSchedulers: 2, Logger: testLogger()}
	for _, o := range opts {
		o(cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	waitLeader(t, s)
	return s
}

func testLogger() *slog.Logger {
	if os.Getenv("DROVER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func withClock(c clock.Clock) serverOpt { return func(cfg *Config) { cfg.Clock = c } }

// waitLeader waits on the server's ready signal: it leads and its leader
// duties run.
func waitLeader(t testing.TB, s *Server) {
	t.Helper()
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("server never became leader")
	}
}

// waitIdle waits on the broker's idle signal: every eval enqueued so far
// was acked (its plan and eval updates applied, blocked evals handed to
// the tracker) or waits on the clock.
func waitIdle(t testing.TB, s *Server) {
	t.Helper()
	select {
	case <-s.BrokerIdle():
	case <-time.After(15 * time.Second):
		t.Fatalf("broker not idle: %+v", s.broker.Stats())
	}
}

// waitState blocks until cond (reading state with the watch set) holds,
// woken by state changes (memdb watches), or fails after 15 s.
func waitState(t *testing.T, s *Server, what string, cond func(ws memdb.WatchSet) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var last error
	for {
		ws := memdb.NewWatchSet()
		ok, err := cond(ws)
		if ok {
			return
		}
		last = err
		if err := ws.WatchCtx(ctx); err != nil {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, last)
		}
	}
}

func testNode(id string, cpu, memMB int64) *api.Node {
	return &api.Node{
		ID: id, SecretID: "secret-" + id, Datacenter: "dc1", Name: id, NodePool: api.DefaultNodePool,
		ComputedClass: "class-a",
		Attributes:    map[string]string{"kernel.name": "linux", "driver.exec": "1", "unique.hostname": id},
		NodeResources: &api.NodeResources{
			Cpu: api.NodeCpuResources{CpuShares: cpu, TotalCpuCores: 4}, Memory: api.NodeMemoryResources{MemoryMB: memMB},
			Disk: api.NodeDiskResources{DiskMB: 100000}, MinDynamicPort: 20000, MaxDynamicPort: 32000,
		},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true}},
	}
}

func registerNode(t *testing.T, s *Server, n *api.Node) *api.NodeRegisterResponse {
	t.Helper()
	resp, err := s.Nodes().RegisterNode(context.Background(), n, api.NodeIntro{})
	if err != nil {
		t.Fatalf("register node %s: %v", n.ID, err)
	}
	return resp
}

func testJob(id string, count, cpu, memMB int) *api.Job {
	return &api.Job{
		ID: id, Type: api.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{
			Name: "web", Count: count,
			Tasks: []*api.Task{{Name: "srv", Driver: "exec", Config: map[string]any{"command": "/bin/sleep", "args": []any{"1000"}},
				Resources: &api.Resources{CPU: cpu, MemoryMB: memMB}}},
		}},
	}
}

func registerJob(t *testing.T, s *Server, j *api.Job) *api.JobRegisterResponse {
	t.Helper()
	resp, err := s.Jobs().RegisterJob(context.Background(), &api.JobRegisterRequest{Job: j})
	if err != nil {
		t.Fatalf("register job %s: %v", j.ID, err)
	}
	return resp
}

// liveAllocs returns the job's allocs that are neither desired-stopped
// nor client-terminal.
func liveAllocs(s *Server, ws memdb.WatchSet, jobID string) ([]*api.Allocation, error) {
	all, err := s.State().AllocsByJob(ws, api.DefaultNamespace, jobID, true)
	if err != nil {
		return nil, err
	}
	var out []*api.Allocation
	for _, a := range all {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out, nil
}

// waitLive waits until the job has exactly n live allocs and returns them.
func waitLive(t *testing.T, s *Server, jobID string, n int) []*api.Allocation {
	t.Helper()
	var got []*api.Allocation
	waitState(t, s, fmt.Sprintf("%d live allocs of %s", n, jobID), func(ws memdb.WatchSet) (bool, error) {
		var err error
		got, err = liveAllocs(s, ws, jobID)
		return len(got) == n, err
	})
	return got
}

func waitEvalStatus(t *testing.T, s *Server, evalID, status string) *api.Evaluation {
	t.Helper()
	var e *api.Evaluation
	waitState(t, s, "eval "+evalID+" "+status, func(ws memdb.WatchSet) (bool, error) {
		var err error
		e, err = s.State().EvalByID(ws, evalID)
		return e != nil && e.Status == status, err
	})
	return e
}

// reportAllocs plays the client: sets the allocs' client status.
func reportAllocs(t *testing.T, s *Server, nodeID, status string, allocs ...*api.Allocation) {
	t.Helper()
	var ups []*api.Allocation
	for _, a := range allocs {
		ups = append(ups, &api.Allocation{ID: a.ID, ClientStatus: status})
	}
	if _, err := s.Nodes().UpdateAllocsFromClient(context.Background(), nodeID, "secret-"+nodeID, ups); err != nil {
		t.Fatalf("update allocs from client: %v", err)
	}
}
