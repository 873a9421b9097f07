package allocrunner

// GPU shares in MPS mode through the runners, on the real drivers/mock
// driver and the real agent/gpushare Manager driving a stand-in
// nvidia-cuda-mps-control on PATH (gpusharetest).

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/agent/gpushare"
	"github.com/drover/drover/agent/gpushare/gpusharetest"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/logging"
	"github.com/drover/drover/drivers/mock"
	"github.com/drover/drover/internal/testproc"
)

// mpsNode has two H100s of 81559 MiB.
func mpsNode() *api.Node {
	mem := int64(81559)
	return &api.Node{ID: "n", NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "NVIDIA H100 80GB HBM3",
		Attributes: map[string]*api.Attribute{"memory": {IntVal: &mem, Unit: "MiB"}},
		Instances:  []*api.NodeDevice{{ID: "GPU-0", Healthy: true}, {ID: "GPU-1", Healthy: true}}}}}}
}

// mpsAlloc is a service alloc whose task holds share of gpu in MPS mode
// and prints its MPS env.
func mpsAlloc(id, gpu string, share *api.AllocatedShare) *api.Allocation {
	tk := mockTask("train", map[string]any{"run_for": "1h",
		"stdout_string": "pipe=${CUDA_MPS_PIPE_DIRECTORY} pct=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE} mem=${CUDA_MPS_PINNED_DEVICE_MEM_LIMIT} share=${DROVER_GPU_SHARE}\n"})
	a := newAlloc(api.JobTypeService, nil, tk)
	a.ID = id
	a.AllocatedResources.Tasks["train"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu",
		Name: "NVIDIA H100 80GB HBM3", DeviceIDs: []string{gpu}, Share: share}}
	return a
}

type mpsHarness struct {
	t   *testing.T
	dir string
	db  *clientstate.DB
	mgr *gpushare.Manager
}

func newMPSHarness(t *testing.T) *mpsHarness {
	dir := t.TempDir()
	db, err := clientstate.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &mpsHarness{t: t, dir: dir, db: db, mgr: gpushare.New(gpushare.Config{Dir: filepath.Join(dir, "mps")})}
}

func (h *mpsHarness) run(a *api.Allocation) *AllocRunner {
	h.t.Helper()
	d, err := mock.New(drivers.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(h.dir, "alloc", a.ID), Node: mpsNode(),
		Drivers: map[string]drivers.Driver{d.Name(): d}, Store: h.db, MPS: h.mgr})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go ar.Run(ctx)
	h.t.Cleanup(func() {
		ar.Kill()
		<-ar.WaitCh()
		cancel()
	})
	return ar
}

func (h *mpsHarness) stdout(a *api.Allocation) string {
	b, _ := logging.ReadAll(filepath.Join(h.dir, "alloc", a.ID, "alloc", "logs"), "train.stdout")
	return string(b)
}

func stop(ar *AllocRunner) {
	ar.Kill()
	<-ar.WaitCh()
}

// Two MPS tasks on one GPU share one daemon, a task on a second GPU gets
// that GPU's own; each daemon runs with its GPU's pipe and log dirs and
// only its GPU visible, each task gets its daemon and limits, and a
// daemon quits when the last task on its GPU is gone.
func TestMPSDaemonLifecycle(t *testing.T) {
	s := gpusharetest.New(t)
	s.OnPath(t)
	h := newMPSHarness(t)
	a1 := mpsAlloc("a1000000-0000-4000-8000-000000000001", "GPU-0", &api.AllocatedShare{Milli: 250, LimitMilli: 500, Mode: api.ShareModeMPS})
	a2 := mpsAlloc("a2000000-0000-4000-8000-000000000002", "GPU-0", &api.AllocatedShare{Milli: 500, MemoryMB: 40000, Mode: api.ShareModeMPS})
	a3 := mpsAlloc("a3000000-0000-4000-8000-000000000003", "GPU-1", &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS})
	runners := map[*api.Allocation]*AllocRunner{}
	for _, a := range []*api.Allocation{a1, a2, a3} {
		runners[a] = h.run(a)
	}
	pipe0, pipe1 := h.mgr.PipeDir("GPU-0"), h.mgr.PipeDir("GPU-1")
	want := map[*api.Allocation]string{
		a1: "pipe=" + pipe0 + " pct=50 mem=GPU-0=20389M share=0.25\n",
		a2: "pipe=" + pipe0 + " pct=50 mem=GPU-0=40000M share=0.5\n",
		a3: "pipe=" + pipe1 + " pct=25 mem=GPU-1=20389M share=0.25\n",
	}
	testproc.Eventually(t, 20*time.Second, "the three tasks running and printing their MPS env", func() bool {
		for a, ar := range runners {
			if ar.Alloc().ClientStatus != api.AllocClientStatusRunning || h.stdout(a) == "" {
				return false
			}
		}
		return true
	})
	for a, w := range want {
		if got := h.stdout(a); got != w {
			t.Errorf("alloc %s task env: %q, want %q", a.ID[:2], got, w)
		}
	}
	starts := s.Starts(t)
	if len(starts) != 2 {
		t.Fatalf("%d daemons started for 3 tasks on 2 GPUs, want 2: %+v", len(starts), starts)
	}
	daemon := map[string]int{}
	for _, c := range starts {
		gpu := c.Visible
		daemon[gpu] = c.Daemon
		if c.PipeDir != h.mgr.PipeDir(gpu) || c.LogDir != h.mgr.LogDir(gpu) || !strings.HasPrefix(c.PipeDir, filepath.Join(h.dir, "mps")) {
			t.Errorf("daemon of %q: pipe %q log %q, want its GPU's dirs under the data dir", gpu, c.PipeDir, c.LogDir)
		}
	}
	if daemon["GPU-0"] == 0 || daemon["GPU-1"] == 0 {
		t.Fatalf("daemons by GPU %v, want one each for GPU-0 and GPU-1", daemon)
	}

	quits := func(gpu string) int {
		n := 0
		for _, c := range s.Quits(t) {
			if c.PipeDir == h.mgr.PipeDir(gpu) {
				n++
			}
		}
		return n
	}
	stop(runners[a1])
	if quits("GPU-0") != 0 || !gpusharetest.Alive(daemon["GPU-0"]) {
		t.Fatalf("GPU-0's daemon quit with a2 still on it")
	}
	stop(runners[a2])
	if quits("GPU-0") != 1 || gpusharetest.Alive(daemon["GPU-0"]) {
		t.Errorf("GPU-0's daemon: %d quits, alive %v after its last task stopped; want quit", quits("GPU-0"), gpusharetest.Alive(daemon["GPU-0"]))
	}
	if quits("GPU-1") != 0 || !gpusharetest.Alive(daemon["GPU-1"]) {
		t.Errorf("GPU-1's daemon stopped with its task still running")
	}
	stop(runners[a3])
	if quits("GPU-1") != 1 || gpusharetest.Alive(daemon["GPU-1"]) {
		t.Errorf("GPU-1's daemon alive after its last task stopped")
	}
	if n := len(s.Starts(t)); n != 2 {
		t.Errorf("%d daemons started in all, want 2", n)
	}
}

// Without the control program on PATH a task asking for MPS fails with
// a setup event that says why; it never runs unisolated.
func TestMPSMissingProgramFailsTask(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	h := newMPSHarness(t)
	a := mpsAlloc("a4000000-0000-4000-8000-000000000004", "GPU-0", &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS})
	ar := h.run(a)
	<-ar.WaitCh()
	got := ar.Alloc()
	st := got.TaskStates["train"]
	if got.ClientStatus != api.AllocClientStatusFailed || contains(eventTypes(st), api.TaskStarted) {
		t.Fatalf("client status %s, events %v; want failed, never started", got.ClientStatus, eventTypes(st))
	}
	found := false
	for _, e := range st.Events {
		if e.Type == api.TaskSetupFailure && strings.Contains(e.DisplayMessage, "nvidia-cuda-mps-control is not on this client's PATH") {
			found = true
		}
	}
	if !found {
		t.Errorf("events %v, want a setup failure naming the missing program", st.Events)
	}
}

// An agent restart keeps an MPS task's daemon: the old runner ends with
// the task running and lets nothing go; the new agent's Manager adopts
// the daemon when the task reattaches (no second start) and quits it
// when the task is stopped.
func TestMPSDaemonSurvivesAgentRestart(t *testing.T) {
	s := gpusharetest.New(t)
	s.OnPath(t)
	h := newMPSHarness(t)
	a := mpsAlloc("a5000000-0000-4000-8000-000000000005", "GPU-0", &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS})
	d, err := mock.New(drivers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(h.dir, "alloc", a.ID), Node: mpsNode(),
		Drivers: map[string]drivers.Driver{d.Name(): d}, Store: h.db, MPS: h.mgr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, shutdown := context.WithCancel(context.Background())
	go ar.Run(ctx)
	testproc.Eventually(t, 20*time.Second, "the task running", func() bool { return ar.Alloc().ClientStatus == api.AllocClientStatusRunning })
	shutdown() // agent shutdown: the task keeps running
	<-ar.WaitCh()
	starts := s.Starts(t)
	if len(starts) != 1 || len(s.Quits(t)) != 0 || !gpusharetest.Alive(starts[0].Daemon) {
		t.Fatalf("after the agent shut down: starts %+v, quits %d; want the one daemon still running", starts, len(s.Quits(t)))
	}

	// The next agent: a new Manager, the alloc restored from the store.
	h.mgr = gpushare.New(gpushare.Config{Dir: filepath.Join(h.dir, "mps")})
	allocs, err := h.db.Allocs()
	if err != nil || len(allocs) != 1 {
		t.Fatalf("restored allocs %d, %v", len(allocs), err)
	}
	restored := h.runRestored(allocs[0])
	testproc.Eventually(t, 20*time.Second, "the task reattached", func() bool {
		return contains(eventTypes(restored.Alloc().TaskStates["train"]), api.TaskReattached)
	})
	if n := len(s.Starts(t)); n != 1 || h.mgr.Holders("GPU-0") != 1 {
		t.Errorf("after the restart: %d starts, %d holders; want the daemon adopted (1 start) and held by the task", n, h.mgr.Holders("GPU-0"))
	}
	stop(restored)
	if len(s.Quits(t)) != 1 || gpusharetest.Alive(starts[0].Daemon) {
		t.Errorf("daemon alive %v, %d quits after the task stopped; want it quit", gpusharetest.Alive(starts[0].Daemon), len(s.Quits(t)))
	}
}

func (h *mpsHarness) runRestored(a *api.Allocation) *AllocRunner {
	h.t.Helper()
	d, err := mock.New(drivers.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	ar, err := New(Config{Alloc: a, AllocDir: filepath.Join(h.dir, "alloc", a.ID), Node: mpsNode(),
		Drivers: map[string]drivers.Driver{d.Name(): d}, Store: h.db, MPS: h.mgr, Restore: true})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go ar.Run(ctx)
	h.t.Cleanup(func() {
		ar.Kill()
		<-ar.WaitCh()
		cancel()
	})
	return ar
}
