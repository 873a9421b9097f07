package state

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// decoded returns an alloc as a decoded plan holds it: every string its
// own copy, plain resources of one task, three score metas.
func decoded(id, jobID, node, name string, nodes ...string) *api.Allocation {
	c := strings.Clone
	a := &api.Allocation{ID: c(id), Namespace: c(api.DefaultNamespace), JobID: c(jobID), NodeID: c(node), NodeName: c(name),
		EvalID: c("eval-1"), TaskGroup: c("web"), Name: api.AllocName(jobID, "web", 0),
		DesiredStatus: c(api.AllocDesiredStatusRun), ClientStatus: c(api.AllocClientStatusPending),
		AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
			c("t"): {Cpu: api.AllocatedCpuResources{CpuShares: 500}, Memory: api.AllocatedMemoryResources{MemoryMB: 256}}},
			Shared: api.AllocatedSharedResources{DiskMB: 300}},
		Metrics: &api.AllocMetric{NodesEvaluated: 3}}
	for _, n := range nodes {
		a.Metrics.ScoreMetaData = append(a.Metrics.ScoreMetaData,
			&api.NodeScoreMeta{NodeID: c(n), Scores: api.Scores{{Name: "binpack", Value: 0.5}}, NormScore: 0.5})
	}
	return a
}

// TestAllocsShareEqualParts: allocs written together hold one copy of
// their node's ID and name, their eval ID, statuses and equal plain
// resources, and keep every value; resources that differ (a port) or
// carry per-alloc parts are not shared.
func TestAllocsShareEqualParts(t *testing.T) {
	s := NewStateStore()
	j := testJob("web")
	must(t, s.Write(1, func(tx *Txn) error {
		for _, id := range []string{"n1", "n2", "n3"} {
			if err := tx.UpsertNode(testNode(id)); err != nil {
				return err
			}
		}
		return tx.UpsertJob(j)
	}))
	n1 := mustGet[api.Node](t)(s.NodeByID(nil, "n1"))
	n2 := mustGet[api.Node](t)(s.NodeByID(nil, "n2"))

	a := decoded("a1", "web", "n1", "n-n1", "n1", "n2", "n3")
	b := decoded("a2", "web", "n1", "n-n1", "n2", "n1")
	other := decoded("a3", "web", "n2", "n-n2", "n2")
	other.AllocatedResources.Tasks["t"].Memory.MemoryMB = 512
	ported := decoded("a4", "web", "n2", "n-n2")
	ported.AllocatedResources.Shared.Ports = []api.AllocatedPort{{Label: "http", Value: 8080}}
	stranger := decoded("a5", "web", "gone", "gone")
	want := []*api.Allocation{a.Copy(), b.Copy(), other.Copy(), ported.Copy(), stranger.Copy()}
	must(t, s.Write(2, func(tx *Txn) error {
		return tx.UpsertPlanResults(&ApplyPlanResultsRequest{Job: j, AllocsPlaced: []*api.Allocation{a, b, other, ported, stranger}})
	}))

	got := func(id string) *api.Allocation { return mustGet[api.Allocation](t)(s.AllocByID(nil, id)) }
	ga, gb, gother, gported, gstranger := got("a1"), got("a2"), got("a3"), got("a4"), got("a5")
	for i, g := range []*api.Allocation{ga, gb, gother, gported, gstranger} {
		w := want[i]
		if diff := cmp.Diff(w, g, cmp.FilterPath(func(p cmp.Path) bool {
			switch p.Last().String() {
			case ".Job", ".CreateIndex", ".ModifyIndex", ".AllocModifyIndex":
				return true
			}
			return false
		}, cmp.Ignore())); diff != "" {
			t.Errorf("%s changed (-want +got):\n%s", w.ID, diff)
		}
	}
	if !same(ga.NodeID, n1.ID) || !same(ga.NodeName, n1.Name) || !same(gb.NodeID, n1.ID) {
		t.Error("allocs on n1 hold their own copies of its ID or name")
	}
	if !same(ga.Metrics.ScoreMetaData[1].NodeID, n2.ID) || !same(gb.Metrics.ScoreMetaData[0].NodeID, n2.ID) {
		t.Error("score metadata holds its own copies of n2's ID")
	}
	if !same(ga.JobID, j.ID) || !same(ga.TaskGroup, j.TaskGroups[0].Name) || !same(ga.EvalID, gb.EvalID) ||
		!same(ga.DesiredStatus, api.AllocDesiredStatusRun) || !same(gb.ClientStatus, api.AllocClientStatusPending) {
		t.Error("job, group, eval or status strings are not shared")
	}
	if ga.AllocatedResources != gb.AllocatedResources {
		t.Error("equal plain resources are two copies")
	}
	if gother.AllocatedResources == ga.AllocatedResources || gported.AllocatedResources == ga.AllocatedResources {
		t.Error("different resources share one copy")
	}
	if gstranger.NodeID != "gone" {
		t.Errorf("alloc on an unregistered node has NodeID %q", gstranger.NodeID)
	}

	// The client's report: its description is shared across the batch.
	must(t, s.Write(3, func(tx *Txn) error {
		return tx.UpdateAllocsFromClient([]*api.Allocation{
			{ID: "a1", ClientStatus: strings.Clone("running"), ClientDescription: strings.Clone("started")},
			{ID: "a2", ClientStatus: strings.Clone("running"), ClientDescription: strings.Clone("started")},
		})
	}))
	ga, gb = got("a1"), got("a2")
	if ga.ClientStatus != api.AllocClientStatusRunning || ga.ClientDescription != "started" {
		t.Fatalf("client update not applied: %q %q", ga.ClientStatus, ga.ClientDescription)
	}
	if !same(ga.ClientStatus, api.AllocClientStatusRunning) || !same(ga.ClientDescription, gb.ClientDescription) {
		t.Error("client status or description strings are not shared")
	}

	// A deregistered node's strings are no longer handed out.
	must(t, s.Write(4, func(tx *Txn) error { return tx.DeleteNode([]string{"n3"}) }))
	if _, ok := s.nodes["n3"]; ok {
		t.Error("deleted node n3 is still in the shared names")
	}
}
