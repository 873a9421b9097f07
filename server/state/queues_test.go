package state

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/drover/drover/api"
)

func gpuAlloc(id, jobID, nodeID string, cpu, mem int64, model string, gpus ...string) *api.Allocation {
	a := testAlloc(id, jobID, nodeID)
	tr := &api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: cpu},
		Memory: api.AllocatedMemoryResources{MemoryMB: mem}}
	if len(gpus) > 0 {
		tr.Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: model, DeviceIDs: gpus}}
	}
	a.AllocatedResources = &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": tr}}
	return a
}

// Queues: "default" is implicit; the tree is checked on upsert (parent
// exists, child guarantee within the parent's, sibling sum within it);
// delete refuses default, unknown, parents and queues with live jobs;
// refused writes change nothing.
func TestQueuesTree(t *testing.T) {
	s := NewStateStore()
	qs, err := s.Queues(nil, "")
	must(t, err)
	if len(qs) != 1 || qs[0].Name != api.DefaultQueue {
		t.Fatalf("queues %v, want the implicit default", qs)
	}
	g := func(gpu float64) *api.QueueResources { return &api.QueueResources{GPUs: gpu} }
	if err := s.UpsertQueues(1, []*api.Queue{{Name: "team-a/train"}}); !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("child without parent: %v", err)
	}
	// A batch may hold parent and child in any order.
	must(t, s.UpsertQueues(2, []*api.Queue{{Name: "team-a/train", Parent: "team-a", Guaranteed: g(4)}, {Name: "team-a", Guaranteed: g(8)}}))
	for name, q := range map[string]*api.Queue{
		"child above parent":   {Name: "team-a/big", Parent: "team-a", Guaranteed: g(9)},
		"siblings above":       {Name: "team-a/eval", Parent: "team-a", Guaranteed: g(5)},
		"parent below kids":    {Name: "team-a", Guaranteed: g(3)},
		"model above parent":   {Name: "team-a/m", Parent: "team-a", Guaranteed: &api.QueueResources{GPUsByModel: map[string]float64{"nvidia/gpu/H100": 9}}},
		"cpu without parent's": {Name: "team-a/c", Parent: "team-a", Guaranteed: &api.QueueResources{CPU: 1}},
	} {
		if err := s.UpsertQueues(3, []*api.Queue{q}); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%s: %v, want bad request", name, err)
		}
	}
	must(t, s.UpsertQueues(4, []*api.Queue{{Name: "team-a/eval", Parent: "team-a", Guaranteed: g(4)}, {Name: "team-a", Guaranteed: g(8), Weight: 2}}))
	q, err := s.QueueByName(nil, "team-a")
	must(t, err)
	if q.CreateIndex != 2 || q.ModifyIndex != 4 || q.Weight != 2 {
		t.Errorf("team-a %+v, want created 2, modified 4, weight 2", q)
	}
	sub, err := s.Queues(nil, "team-a/")
	must(t, err)
	if got := ids(sub, func(q *api.Queue) string { return q.Name }); !reflect.DeepEqual(got, []string{"team-a/eval", "team-a/train"}) {
		t.Errorf("prefix list %v", got)
	}
	j := testJob("train")
	j.Queue = "team-a/train"
	must(t, s.UpsertJob(5, j))
	for name, want := range map[string]error{"default": api.ErrBadRequest, "nope": api.ErrNotFound,
		"team-a": api.ErrBadRequest, "team-a/train": api.ErrBadRequest} {
		if err := s.DeleteQueues(6, []string{name}); !errors.Is(err, want) {
			t.Errorf("delete %s: %v, want %v", name, err, want)
		}
	}
	must(t, s.DeleteQueues(7, []string{"team-a/eval"}))
	if q, _ := s.QueueByName(nil, "team-a/eval"); q != nil {
		t.Error("deleted queue still there")
	}
	if q, _ := s.QueueByName(nil, "team-a/train"); q == nil {
		t.Error("refused delete removed a queue")
	}
}

// Usage follows every alloc write: new allocs, client updates, stops,
// lost (node down), deletion (GC) and a job moving queue in place; it is
// the same as a scan after each step, and a restore recomputes it.
func TestQueueUsageIncremental(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertQueues(1, []*api.Queue{{Name: "a"}, {Name: "b"}}))
	ja, jb := testJob("ja"), testJob("jb")
	ja.Queue = "a"
	must(t, s.UpsertJob(2, ja))
	must(t, s.UpsertJob(3, jb))
	rng := rand.New(rand.NewSource(1))
	var live []string
	idx := uint64(10)
	seen := map[string]bool{}
	for step := 0; step < 300; step++ {
		idx++
		switch op := rng.Intn(6); {
		case op <= 1 || len(live) == 0:
			id := fmt.Sprintf("a%d", step)
			job := []string{"ja", "jb"}[rng.Intn(2)]
			var gpus []string
			for i := 0; i < rng.Intn(4); i++ {
				gpus = append(gpus, fmt.Sprintf("g%d", i))
			}
			model := []string{"H100", "A100"}[rng.Intn(2)]
			must(t, s.UpsertAllocs(idx, []*api.Allocation{gpuAlloc(id, job, "n1", int64(100*(1+rng.Intn(5))), 256, model, gpus...)}))
			live = append(live, id)
		case op == 2:
			a := mustGet[api.Allocation](t)(s.AllocByID(nil, live[rng.Intn(len(live))]))
			st := []string{api.AllocClientStatusRunning, api.AllocClientStatusComplete, api.AllocClientStatusFailed}[rng.Intn(3)]
			must(t, s.UpdateAllocsFromClient(idx, []*api.Allocation{{ID: a.ID, ClientStatus: st}}))
		case op == 3:
			c := *mustGet[api.Allocation](t)(s.AllocByID(nil, live[rng.Intn(len(live))]))
			if rng.Intn(2) == 0 {
				c.DesiredStatus = api.AllocDesiredStatusStop
			} else {
				c.ClientStatus = api.AllocClientStatusLost
			}
			must(t, s.UpsertAllocs(idx, []*api.Allocation{&c}))
		case op == 4:
			i := rng.Intn(len(live))
			must(t, s.DeleteEvals(idx, nil, []string{live[i]}))
			live = append(live[:i], live[i+1:]...)
		case op == 5: // an in-place update moving the alloc's job to the other queue
			c := *mustGet[api.Allocation](t)(s.AllocByID(nil, live[rng.Intn(len(live))]))
			j := *c.Job
			j.Queue = map[string]string{"a": "b", "": "a", "b": ""}[j.Queue]
			c.Job = &j
			must(t, s.UpsertAllocs(idx, []*api.Allocation{&c}))
		}
		got, err := s.QueueUsage(nil)
		must(t, err)
		if want := scanUsage(t, s); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: usage %v, scan %v", step, fmtUsage(got), fmtUsage(want))
		}
		for q, u := range got {
			seen[q] = seen[q] || u.GPUs > 0
		}
	}
	if !seen["a"] || !seen["b"] || !seen[api.DefaultQueue] {
		t.Fatalf("queues that held GPUs: %v, want a, b and default", seen)
	}
	snap, err := s.Snapshot()
	must(t, err)
	r := NewStateStore()
	res := r.Restore()
	must(t, snap.Persist(func(table string, obj any) error {
		switch table {
		case TableJobs:
			return res.Job(obj.(*api.Job))
		case TableAllocs:
			return res.Alloc(obj.(*api.Allocation))
		case TableQueues:
			return res.Queue(obj.(*api.Queue))
		}
		return nil
	}))
	res.Commit()
	before, _ := s.QueueUsage(nil)
	after, _ := r.QueueUsage(nil)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("restored usage %v, want %v", fmtUsage(after), fmtUsage(before))
	}
}

func scanUsage(t *testing.T, s *StateStore) map[string]*api.QueueResources {
	allocs, err := s.Allocs(nil, "", "")
	must(t, err)
	out := map[string]*api.QueueResources{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		q := api.JobQueue(a.Job)
		if out[q] == nil {
			out[q] = &api.QueueResources{}
		}
		out[q].Add(a.QueueUsage(), 1)
	}
	return out
}

func fmtUsage(m map[string]*api.QueueResources) string {
	s := ""
	for k, v := range m {
		s += fmt.Sprintf("%s=%+v ", k, *v)
	}
	return s
}
