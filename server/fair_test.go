package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
	"github.com/drover/drover/server/scheduler"
)

// fairState is a scheduler.State with queues for the fair-share tests.
type fairState struct {
	scheduler.State // unused methods panic
	index           uint64
	nodes           []*api.Node
	jobs            map[string]*api.Job
	allocs          map[string][]*api.Allocation
	queues          []*api.Queue
	usage           map[string]*api.QueueResources
}

func (f *fairState) Index() uint64                 { return f.index }
func (f *fairState) Nodes() ([]*api.Node, error)   { return f.nodes, nil }
func (f *fairState) Queues() ([]*api.Queue, error) { return f.queues, nil }
func (f *fairState) QueueUsage() (map[string]*api.QueueResources, error) {
	return f.usage, nil
}
func (f *fairState) JobByID(ns, id string) (*api.Job, error) { return f.jobs[id], nil }
func (f *fairState) AllocsByJob(ns, id string) ([]*api.Allocation, error) {
	return f.allocs[id], nil
}

type fakeBlocked []*api.Evaluation

func (b fakeBlocked) Each(fn func(*api.Evaluation)) {
	for _, e := range b {
		fn(e)
	}
}

func gpuNodeFair(id string, gpus int) *api.Node {
	var inst []*api.NodeDevice
	for i := 0; i < gpus; i++ {
		inst = append(inst, &api.NodeDevice{ID: fmt.Sprintf("%s-%d", id, i), Healthy: true})
	}
	return &api.Node{ID: id, Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingEligible,
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 64000}, Memory: api.NodeMemoryResources{MemoryMB: 512000},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", Instances: inst}}}}
}

func gpuJobFair(id, queue string, count, gpus int) *api.Job {
	return &api.Job{ID: id, Namespace: api.DefaultNamespace, Queue: queue, Type: api.JobTypeBatch,
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: count, Tasks: []*api.Task{{Name: "t",
			Resources: &api.Resources{CPU: 1000, MemoryMB: 1024, Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: uint64(gpus)}}}}}}}}
}

func TestFairSharesFromState(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := &fairState{index: 10, nodes: []*api.Node{gpuNodeFair("n1", 8), gpuNodeFair("n2", 8)},
		jobs: map[string]*api.Job{}, allocs: map[string][]*api.Allocation{}}
	f := newFairShares(fairshare.Config{}, fakeBlocked(nil))

	// Only the default queue: no shares, the broker keeps the priority order.
	st.queues = []*api.Queue{{Name: api.DefaultQueue}}
	if fs, err := f.forJob(st, gpuJobFair("j", "", 1, 1), now); err != nil || fs != nil {
		t.Fatalf("no queues: shares %v err %v, want nil", fs, err)
	}
	if f.deficits() != nil {
		t.Fatal("no queues: the broker got a deficit order")
	}

	// a holds all 16 GPUs; b has a blocked eval for 2 more allocs of 4
	// GPUs; c's job being scheduled asks 1 alloc of 8.
	st.index = 11
	st.queues = []*api.Queue{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	st.usage = map[string]*api.QueueResources{"a": {GPUs: 16, CPU: 4000, MemoryMB: 4096}}
	st.jobs["jb"] = gpuJobFair("jb", "b", 2, 4)
	st.jobs["jc"] = gpuJobFair("jc", "c", 1, 8)
	f.blocked = fakeBlocked{{ID: "e1", Namespace: api.DefaultNamespace, JobID: "jb", Status: api.EvalStatusBlocked,
		QueuedAllocations: map[string]int{"g": 2}}}
	fs, err := f.forJob(st, st.jobs["jc"], now)
	if err != nil || fs == nil {
		t.Fatalf("shares %v err %v", fs, err)
	}
	// Demands a 16, b 8, c 8 on 16 GPUs: water-filled 16/3 each, rounded
	// down to thousandths (the grain of GPU shares).
	for _, q := range []string{"a", "b", "c"} {
		if got := fs.Share(q).GPUs; got != 5.333 {
			t.Errorf("%s: share %v GPUs, want 5.333 (16/3 rounded down to thousandths)", q, got)
		}
	}
	// The base (without c's own ask) is what the broker orders by: b
	// (blocked, 8 asked, none held) is below, a above.
	d := f.deficits()
	if d == nil {
		t.Fatal("queues: no deficit order")
	}
	da := d(&api.Evaluation{Namespace: api.DefaultNamespace, JobID: "ja"})
	db := d(&api.Evaluation{Namespace: api.DefaultNamespace, JobID: "jb"})
	if da != 0 || db <= 0 {
		t.Errorf("deficits: unknown job %v (want 0), b %v (want > 0)", da, db)
	}
	if f.share("b").GPUs != 8 {
		t.Errorf("base share of b: %v GPUs, want 8 (a 8, b 8)", f.share("b").GPUs)
	}
	// Same index: the base is cached.
	base := f.base
	if _, err := f.forJob(st, st.jobs["jc"], now); err != nil || f.base != base {
		t.Errorf("same index: base recomputed")
	}
}

// End to end through the worker, the applier and the reactor: queue a
// borrows the whole node with high-priority work while b is idle; b's
// low-priority job then reclaims its fair share (half) by preempting a's
// allocs (the scheduler tests show a cannot take it back).
func TestQueueReclaimEndToEnd(t *testing.T) {
	s := newTestServer(t)
	ctx := context.Background()
	registerNode(t, s, testNode("n", 4000, 8192))
	if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{{Name: "a"}, {Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	borrow := testJob("borrow", 4, 1000, 128)
	borrow.Queue, borrow.Priority = "a", 90
	registerJob(t, s, borrow)
	waitLive(t, s, "borrow", 4)
	own := testJob("own", 2, 1000, 128)
	own.Queue, own.Priority = "b", 10
	registerJob(t, s, own)
	waitLive(t, s, "own", 2)
	live := waitLive(t, s, "borrow", 2)
	if len(live) != 2 {
		t.Fatalf("a kept %d allocs, want 2", len(live))
	}
	st, err := s.State().QueueStatus(nil, "b")
	if err != nil || st.Allocated.CPU != 2000 {
		t.Fatalf("b status %+v (%v), want 2000 MHz", st, err)
	}
}
