package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

// Queues go through Raft entries (all or none, tree checked) and
// snapshots (record 13); a snapshot without queue records (written before
// queues existed) restores with only the implicit default; queue usage is
// recomputed from the restored allocs.
func TestApplyAndSnapshotQueues(t *testing.T) {
	src := populated(t)
	old := New(Config{})
	if err := old.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	if qs, _ := old.State().Queues(nil, ""); len(qs) != 1 || qs[0].Name != api.DefaultQueue {
		t.Fatalf("queues of a snapshot without queue records: %+v", qs)
	}
	a := &applier{t: t, f: src, index: src.State().LatestIndex()}
	a.mustApply(QueueUpsertType, QueueUpsertRequest{Queues: []*api.Queue{
		{Name: "team-a", Guaranteed: &api.QueueResources{GPUs: 8}, Limit: &api.QueueResources{GPUs: 16}},
		{Name: "team-a/train", Parent: "team-a", Weight: 2, Guaranteed: &api.QueueResources{GPUs: 4}},
		{Name: "spare"}}})
	if err := a.apply(QueueUpsertType, QueueUpsertRequest{Queues: []*api.Queue{{Name: "x"}, {Name: "nope/child"}}}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("upsert with a missing parent: %v", err)
	}
	if q, _ := src.State().QueueByName(nil, "x"); q != nil {
		t.Fatal("a refused upsert stored a queue")
	}
	a.mustApply(QueueDeleteType, QueueDeleteRequest{Names: []string{"spare"}})
	if err := a.apply(QueueDeleteType, QueueDeleteRequest{Names: []string{"spare"}}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if err := a.apply(QueueDeleteType, QueueDeleteRequest{Names: []string{"team-a"}}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("delete a parent: %v", err)
	}
	j := job("train")
	j.Queue = "team-a/train"
	g := alloc("g1", "train", "n1")
	g.AllocatedResources = &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{"t": {
		Cpu: api.AllocatedCpuResources{CpuShares: 500}, Memory: api.AllocatedMemoryResources{MemoryMB: 1024},
		Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100", DeviceIDs: []string{"0", "1"}}}}}}
	a.mustApply(JobRegisterType, JobRegisterRequest{Job: j, Eval: eval("eq", "train")})
	a.mustApply(ApplyPlanResultsType, ApplyPlanResultsRequest{Job: j, AllocsPlaced: []*api.Allocation{g}})
	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	want, _ := src.State().Queues(nil, "")
	got, _ := dst.State().Queues(nil, "")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restored queues (-want +got):\n%s", diff)
	}
	if len(got) != 3 || got[2].Name != "team-a/train" || got[2].Weight != 2 {
		t.Errorf("restored queues %+v", got)
	}
	wu, _ := src.State().QueueUsage(nil)
	gu, _ := dst.State().QueueUsage(nil)
	if diff := cmp.Diff(wu, gu); diff != "" {
		t.Errorf("restored usage (-want +got):\n%s", diff)
	}
	if u := gu["team-a/train"]; u == nil || u.GPUs != 2 || u.GPUsByModel["nvidia/gpu/H100"] != 2 || u.CPU != 500 || u.MemoryMB != 1024 {
		t.Errorf("restored usage of team-a/train %+v", u)
	}
}
