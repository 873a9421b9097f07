package state

import (
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
	"github.com/google/go-cmp/cmp"
)

var _ scheduler.State = (*SchedulerView)(nil)

func TestSchedulerView(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertNode(1, testNode("n1")))
	must(t, s.UpsertJob(2, testJob("web")))
	must(t, s.UpsertAllocs(3, []*api.Allocation{testAlloc("a1", "web", "n1")}))
	must(t, s.UpsertDeployment(4, &api.Deployment{ID: "d1", JobID: "web"}))
	snap, err := s.Snapshot()
	must(t, err)
	var v scheduler.State = snap.Scheduler()
	must(t, s.UpsertAllocs(5, []*api.Allocation{testAlloc("a2", "web", "n1")})) // not in the view

	if v.Index() != 4 {
		t.Errorf("index: got %d, want 4", v.Index())
	}
	nodes, err := v.Nodes()
	must(t, err)
	byNode, err := v.AllocsByNode("n1")
	must(t, err)
	byJob, err := v.AllocsByJob("default", "web")
	must(t, err)
	if diff := cmp.Diff([]string{"a1"}, ids(byNode, allocID)); diff != "" || len(nodes) != 1 {
		t.Errorf("by node (-want +got):\n%s (nodes %d)", diff, len(nodes))
	}
	if diff := cmp.Diff([]string{"a1"}, ids(byJob, allocID)); diff != "" {
		t.Errorf("by job (-want +got):\n%s", diff)
	}
	if d, _ := v.LatestDeploymentByJobID("default", "web"); d == nil || d.ID != "d1" {
		t.Errorf("deployment: %v", d)
	}
	if a, _ := v.AllocByID("a2"); a != nil {
		t.Error("view sees a later write")
	}
	if n, _ := v.NodeByID("n1"); n == nil {
		t.Error("node missing")
	}
}
