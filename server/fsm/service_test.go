package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

// Service registrations go through Raft entries and snapshots; only the
// alloc's node may write them, the server fills namespace, job, node and
// datacenter, and they go away with the alloc when its client finishes it
// (a late write does not bring them back).
func TestApplyAndSnapshotServices(t *testing.T) {
	src := populated(t)
	a := &applier{t: t, f: src, index: src.State().LatestIndex()}
	reg := func(id, alloc string, port int) *api.ServiceRegistration {
		return &api.ServiceRegistration{ID: id, ServiceName: "web", AllocID: alloc, Address: "10.0.0.1", Port: port,
			Namespace: "forged", JobID: "forged", NodeID: "forged", Tags: []string{"v1"}}
	}
	a.mustApply(ServiceUpdateType, ServiceUpdateRequest{NodeID: "n1", Upserts: []*api.ServiceRegistration{reg("s1", "a1", 8080), reg("s2", "a2", 8081)}})
	if err := a.apply(ServiceUpdateType, ServiceUpdateRequest{NodeID: "n2", Upserts: []*api.ServiceRegistration{reg("s3", "a1", 9)}}); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("upsert for another node's alloc: %v", err)
	}
	got, err := src.State().ServicesByName(nil, api.DefaultNamespace, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "s1" || got[0].JobID != "web" || got[0].NodeID != "n1" || got[0].Namespace != api.DefaultNamespace || got[0].Port != 8080 {
		t.Fatalf("registrations %+v", got)
	}
	created := got[0].ModifyIndex
	a.mustApply(ServiceUpdateType, ServiceUpdateRequest{NodeID: "n1", Upserts: []*api.ServiceRegistration{reg("s1", "a1", 8080)}})
	if s, _ := src.State().ServicesByAlloc(nil, "a1"); len(s) != 1 || s[0].ModifyIndex != created {
		t.Errorf("an unchanged upsert moved ModifyIndex: %+v", s)
	}

	dst := New(Config{})
	if err := dst.Restore(io.NopCloser(bytes.NewReader(persist(t, src)))); err != nil {
		t.Fatal(err)
	}
	want, _ := src.State().Services(nil, "*")
	restored, _ := dst.State().Services(nil, "*")
	if diff := cmp.Diff(want, restored); diff != "" {
		t.Errorf("restored services (-want +got):\n%s", diff)
	}

	a.mustApply(AllocClientUpdateType, AllocClientUpdateRequest{Allocs: []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusComplete}}})
	a.mustApply(ServiceUpdateType, ServiceUpdateRequest{NodeID: "n1", Upserts: []*api.ServiceRegistration{reg("s1", "a1", 8080)}})
	left, _ := src.State().Services(nil, "")
	if len(left) != 1 || left[0].ID != "s2" {
		t.Errorf("after a1 completed: %+v, want only s2", left)
	}
	a.mustApply(ServiceUpdateType, ServiceUpdateRequest{Deletes: []string{"s2", "unknown"}})
	if left, _ := src.State().Services(nil, ""); len(left) != 0 {
		t.Errorf("after the delete: %+v", left)
	}
}
