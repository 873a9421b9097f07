package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/agent/sim"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/jobspec"
	"github.com/drover/drover/server"
)

// startServer runs a real server-only dev agent on a free port and
// returns its address and server once it is ready.
func startServer(t *testing.T, tune func(*config.Config)) (string, *server.Server) {
	t.Helper()
	cfg := config.Dev()
	cfg.Client.Enabled = false
	cfg.Ports.HTTP = 0
	cfg.Name = "sim-test"
	if tune != nil {
		tune(cfg)
	}
	a := testcluster.StartAgent(t, cfg)
	testcluster.WaitReady(t, a.Server())
	return "http://" + a.HTTPAddr(), a.Server()
}

func startSim(t *testing.T, cfg sim.Config) *sim.Sim {
	t.Helper()
	s, err := sim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("sim start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func registerJob(t *testing.T, c *api.Client, hcl string) {
	t.Helper()
	job, err := jobspec.Parse("job.hcl", []byte(hcl), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterJob(context.Background(), &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatalf("register job: %v", err)
	}
}

func jobAllocs(t *testing.T, c *api.Client, job string) []*api.AllocListStub {
	t.Helper()
	out, _, err := c.JobAllocations(context.Background(), job, nil)
	if err != nil {
		t.Fatalf("job allocations: %v", err)
	}
	return out
}

func countStatus(allocs []*api.AllocListStub, status string) int {
	n := 0
	for _, a := range allocs {
		if a.ClientStatus == status {
			n++
		}
	}
	return n
}

const serviceHCL = `job "web" {
  datacenters = ["dc1", "dc2"]
  group "web" {
    count = 40
    task "srv" {
      driver = "mock"
      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
`

// TestSimRunsServiceAllocs: simulated nodes register with their
// datacenters, topology meta and GPUs, take a job's allocs and report them
// running; stopping the job has them report complete.
func TestSimRunsServiceAllocs(t *testing.T) {
	addr, srv := startServer(t, nil)
	s := startSim(t, sim.Config{Servers: []string{addr}, Nodes: 20, NodePool: api.DefaultNodePool, GPUs: "dgxh100", Datacenters: []string{"dc1", "dc2"},
		RunDelay: 20 * time.Millisecond, UpdateCoalesce: 20 * time.Millisecond})
	c := api.NewClient(addr)
	ctx := context.Background()

	nodes, _, err := c.Nodes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 20 {
		t.Fatalf("server knows %d nodes, want 20", len(nodes))
	}
	dcs := map[string]int{}
	for _, n := range nodes {
		dcs[n.Datacenter]++
		if n.Status != api.NodeStatusReady {
			t.Errorf("node %s is %s, want ready", n.Name, n.Status)
		}
	}
	if dcs["dc1"] != 10 || dcs["dc2"] != 10 {
		t.Errorf("datacenters %v, want 10 each in dc1 and dc2", dcs)
	}
	n5, _, err := c.Node(ctx, s.NodeIDs()[5], nil)
	if err != nil {
		t.Fatal(err)
	}
	if n5.Name != "sim-5" || n5.Meta["topology.rack"] != "rack-1" || n5.Meta["topology.block"] != "block-0" {
		t.Errorf("node 5: name %q meta %v; want sim-5 in rack-1, block-0", n5.Name, n5.Meta)
	}
	gpus := 0
	for _, d := range n5.NodeResources.Devices {
		if d.Type == "gpu" {
			gpus += len(d.Instances)
		}
	}
	if gpus != 8 {
		t.Errorf("node 5 has %d GPUs, want the 8 of a DGX H100", gpus)
	}

	registerJob(t, c, serviceHCL)
	testcluster.WaitState(t, srv, 20*time.Second, "40 running allocs", func() bool {
		return countStatus(jobAllocs(t, c, "web"), api.AllocClientStatusRunning) == 40
	})
	if st := s.Stats(); st.Running != 40 || st.Started != 40 || st.Registered != 20 {
		t.Errorf("sim stats %+v: want 40 running and started, 20 registered", st)
	}
	// Each alloc's task reports its state, as a real client's does.
	for _, a := range jobAllocs(t, c, "web") {
		if ts := a.TaskStates["srv"]; ts == nil || ts.State != api.TaskStateRunning || ts.StartedAt.IsZero() || len(ts.Events) == 0 {
			t.Fatalf("alloc %s: task states %+v, want srv running with its start", a.ID, a.TaskStates)
		}
	}
	if _, err := c.DeregisterJob(ctx, "web", false, nil); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitState(t, srv, 20*time.Second, "40 complete allocs", func() bool {
		return countStatus(jobAllocs(t, c, "web"), api.AllocClientStatusComplete) == 40
	})
	for _, a := range jobAllocs(t, c, "web") {
		if ts := a.TaskStates["srv"]; ts == nil || ts.State != api.TaskStateDead || ts.Failed || ts.FinishedAt.Before(ts.StartedAt) || ts.StartedAt.IsZero() {
			t.Fatalf("alloc %s: task states %+v, want srv dead, not failed, finished after its start", a.ID, a.TaskStates)
		}
	}
	testproc.Eventually(t, 5*time.Second, "the sim's running gauge at 0", func() bool { return s.Stats().Running == 0 })
}

const batchHCL = `job "crunch" {
  type = "batch"
  group "work" {
    count = 30
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "mock"
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// TestSimCompletesAndFails: with CompleteAfter every alloc ends, and with
// a fail rate of 1 every one fails.
func TestSimCompletesAndFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rate   float64
		status string
	}{{"complete", 0, api.AllocClientStatusComplete}, {"failed", 1, api.AllocClientStatusFailed}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, srv := startServer(t, nil)
			s := startSim(t, sim.Config{Servers: []string{addr}, Nodes: 5, NodePool: api.DefaultNodePool, CompleteAfter: 30 * time.Millisecond,
				FailRate: tc.rate, UpdateCoalesce: 20 * time.Millisecond})
			c := api.NewClient(addr)
			registerJob(t, c, batchHCL)
			testcluster.WaitState(t, srv, 20*time.Second, "30 "+tc.status+" allocs", func() bool {
				return countStatus(jobAllocs(t, c, "crunch"), tc.status) == 30
			})
			st := s.Stats()
			if got := map[string]int64{api.AllocClientStatusComplete: st.Completed, api.AllocClientStatusFailed: st.Failed}[tc.status]; got < 30 {
				t.Errorf("sim counted %d %s, want 30 or more (stats %+v)", got, tc.status, st)
			}
		})
	}
}

// TestSimKilledNodesGoDown: nodes the simulator stops heartbeating are
// marked down by the server once their TTL runs out; the others stay
// ready.
func TestSimKilledNodesGoDown(t *testing.T) {
	addr, srv := startServer(t, func(c *config.Config) { c.Server.MinHeartbeatTTL, c.Server.HeartbeatGrace = time.Second, time.Second })
	s := startSim(t, sim.Config{Servers: []string{addr}, Nodes: 10})
	s.Kill(0, 1, 2)
	c := api.NewClient(addr)
	testcluster.WaitState(t, srv, 20*time.Second, "3 down nodes", func() bool {
		nodes, _, err := c.Nodes(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		down := 0
		for _, n := range nodes {
			if n.Status == api.NodeStatusDown {
				down++
			}
		}
		return down == 3
	})
	nodes, _, _ := c.Nodes(context.Background(), nil)
	for _, n := range nodes {
		killed := n.Name == "sim-0" || n.Name == "sim-1" || n.Name == "sim-2"
		if !killed && n.Status != api.NodeStatusReady {
			t.Errorf("live node %s is %s, want ready", n.Name, n.Status)
		}
	}
	if st := s.Stats(); st.Heartbeats == 0 || st.MissedHeartbeats != 0 {
		t.Errorf("stats %+v: want heartbeats sent and none missed by live nodes", st)
	}
}

// TestSimNodesOwnPool: by default simulated nodes join pool "sim", which
// the simulator creates: a job that names no pool never lands on them
// (its placement fails: no node of its pool), while a job that asks for
// pool "sim" runs there.
func TestSimNodesOwnPool(t *testing.T) {
	addr, srv := startServer(t, nil)
	startSim(t, sim.Config{Servers: []string{addr}, Nodes: 3, RunDelay: 10 * time.Millisecond, UpdateCoalesce: 20 * time.Millisecond})
	c := api.NewClient(addr)
	ctx := context.Background()
	nodes, _, err := c.Nodes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.NodePool != sim.DefaultNodePool {
			t.Errorf("node %s in pool %q, want %q", n.Name, n.NodePool, sim.DefaultNodePool)
		}
	}

	registerJob(t, c, serviceHCL) // no node_pool: "default"
	testcluster.WaitState(t, srv, 20*time.Second, "the default-pool job's placement failure", func() bool {
		evals, _, err := c.JobEvaluations(ctx, "web", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evals {
			if e.FailedTGAllocs["web"] != nil {
				return true
			}
		}
		return false
	})
	if got := jobAllocs(t, c, "web"); len(got) != 0 {
		t.Errorf("the job of pool default has %d allocs on simulated nodes, want none", len(got))
	}

	registerJob(t, c, strings.Replace(strings.Replace(serviceHCL, `job "web"`, `job "simweb"`, 1), "  group", "  node_pool = \"sim\"\n  group", 1))
	testcluster.WaitState(t, srv, 20*time.Second, "the sim-pool job's 40 allocs running", func() bool {
		return countStatus(jobAllocs(t, c, "simweb"), api.AllocClientStatusRunning) == 40
	})
}
