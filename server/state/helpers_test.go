package state

import (
	"fmt"
	"testing"

	"github.com/drover/drover/api"
)

func testJob(id string, groups ...string) *api.Job {
	if len(groups) == 0 {
		groups = []string{"web"}
	}
	j := &api.Job{ID: id, Name: id, Namespace: api.DefaultNamespace, Type: api.JobTypeService,
		Priority: 50, Datacenters: []string{"dc1"}}
	for _, g := range groups {
		j.TaskGroups = append(j.TaskGroups, &api.TaskGroup{Name: g, Count: 1})
	}
	return j
}

func testNode(id string) *api.Node {
	return &api.Node{ID: id, SecretID: "secret-" + id, Name: "n-" + id, Datacenter: "dc1",
		Status: api.NodeStatusReady, Attributes: map[string]string{"kernel.name": "linux"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000},
			Memory: api.NodeMemoryResources{MemoryMB: 8192}}}
}

func testAlloc(id, jobID, nodeID string) *api.Allocation {
	return &api.Allocation{ID: id, Namespace: api.DefaultNamespace, JobID: jobID, NodeID: nodeID,
		EvalID: "eval-1", TaskGroup: "web", Name: api.AllocName(jobID, "web", 0),
		DesiredStatus: api.AllocDesiredStatusRun, ClientStatus: api.AllocClientStatusPending}
}

func testEval(id, jobID string) *api.Evaluation {
	return &api.Evaluation{ID: id, Namespace: api.DefaultNamespace, JobID: jobID, Priority: 50,
		Type: api.JobTypeService, TriggeredBy: api.EvalTriggerJobRegister, Status: api.EvalStatusPending}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustGet[T any](t testing.TB) func(v *T, err error) *T {
	return func(v *T, err error) *T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ids[T any](objs []*T, id func(*T) string) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, id(o))
	}
	return out
}

func allocID(a *api.Allocation) string { return a.ID }
func jobID(j *api.Job) string          { return fmt.Sprintf("%s@%d", j.ID, j.Version) }
