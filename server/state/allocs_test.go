package state

import (
	"fmt"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

func summaryOf(t *testing.T, s *StateStore, job, tg string) api.TaskGroupSummary {
	t.Helper()
	sum := mustGet[api.JobSummary](t)(s.JobSummaryByID(nil, "default", job))
	if sum == nil {
		t.Fatalf("no summary for %s", job)
	}
	return sum.Summary[tg]
}

func TestUpsertAllocsAndLookups(t *testing.T) {
	s := NewStateStore()
	job := testJob("web")
	must(t, s.UpsertJob(1, job))
	a1, a2, a3 := testAlloc("a1", "web", "n1"), testAlloc("a2", "web", "n2"), testAlloc("b1", "other", "n1")
	a3.EvalID = "eval-2"
	a2.DeploymentID = "d1"
	must(t, s.UpsertAllocs(2, []*api.Allocation{a1, a2, a3}))
	must(t, s.UpsertEvals(3, []*api.Evaluation{testEval("eval-1", "web")}))

	got := mustGet[api.Allocation](t)(s.AllocByID(nil, "a1"))
	if got.CreateIndex != 2 || got.ModifyIndex != 2 || got.AllocModifyIndex != 2 || got.Job != job {
		t.Errorf("a1: create %d modify %d alloc-modify %d job %p (want %p)", got.CreateIndex, got.ModifyIndex,
			got.AllocModifyIndex, got.Job, job)
	}
	tests := []struct {
		name string
		read func() ([]*api.Allocation, error)
		want []string
	}{
		{"by job", func() ([]*api.Allocation, error) { return s.AllocsByJob(nil, "default", "web", false) }, []string{"a1", "a2"}},
		{"by node", func() ([]*api.Allocation, error) { return s.AllocsByNode(nil, "n1") }, []string{"a1", "b1"}},
		{"by eval", func() ([]*api.Allocation, error) { return s.AllocsByEval(nil, "eval-1") }, []string{"a1", "a2"}},
		{"by an eval not stored", func() ([]*api.Allocation, error) { return s.AllocsByEval(nil, "eval-2") }, []string{}},
		{"by deployment", func() ([]*api.Allocation, error) { return s.AllocsByDeployment(nil, "d1") }, []string{"a2"}},
		{"by prefix", func() ([]*api.Allocation, error) { return s.AllocsByIDPrefix(nil, "default", "a") }, []string{"a1", "a2"}},
		{"all", func() ([]*api.Allocation, error) { return s.Allocs(nil, "*", "") }, []string{"a1", "a2", "b1"}},
		{"other namespace", func() ([]*api.Allocation, error) { return s.Allocs(nil, "prod", "") }, []string{}},
	}
	for _, tt := range tests {
		as, err := tt.read()
		must(t, err)
		if diff := cmp.Diff(tt.want, ids(as, allocID)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestAllocsByJobSkipsEarlierIncarnation(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertAllocs(2, []*api.Allocation{testAlloc("old", "web", "n1")}))
	must(t, s.DeleteJob(3, "default", "web"))
	must(t, s.UpsertJob(4, testJob("web")))
	must(t, s.UpsertAllocs(5, []*api.Allocation{testAlloc("new", "web", "n1")}))
	cur, err := s.AllocsByJob(nil, "default", "web", false)
	must(t, err)
	all, err := s.AllocsByJob(nil, "default", "web", true)
	must(t, err)
	if diff := cmp.Diff([]string{"new"}, ids(cur, allocID)); diff != "" {
		t.Errorf("current (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"new", "old"}, ids(all, allocID)); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
}

func TestClientUpdateOnlyClientFieldsAndSummary(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertEvals(2, []*api.Evaluation{{ID: "e1", JobID: "web", Status: api.EvalStatusComplete,
		QueuedAllocations: map[string]int{"web": 2}}}))
	if g := summaryOf(t, s, "web", "web"); g.Queued != 2 {
		t.Fatalf("queued after eval: got %d, want 2", g.Queued)
	}
	must(t, s.UpsertAllocs(3, []*api.Allocation{testAlloc("a1", "web", "n1")}))
	if diff := cmp.Diff(api.TaskGroupSummary{Queued: 1, Starting: 1}, summaryOf(t, s, "web", "web")); diff != "" {
		t.Errorf("after placement (-want +got):\n%s", diff)
	}

	upd := &api.Allocation{ID: "a1", ClientStatus: api.AllocClientStatusRunning, ClientDescription: "up",
		TaskStates:    map[string]*api.TaskState{"t": {State: api.TaskStateRunning}},
		DesiredStatus: api.AllocDesiredStatusStop, NodeID: "evil", ModifyTime: 77}
	must(t, s.UpdateAllocsFromClient(4, []*api.Allocation{upd, {ID: "gone"}}))
	got := mustGet[api.Allocation](t)(s.AllocByID(nil, "a1"))
	if got.ClientStatus != api.AllocClientStatusRunning || got.ClientDescription != "up" || got.TaskStates["t"] == nil ||
		got.ModifyTime != 77 || got.ModifyIndex != 4 {
		t.Errorf("client fields not applied: %+v", got)
	}
	if got.DesiredStatus != api.AllocDesiredStatusRun || got.NodeID != "n1" || got.AllocModifyIndex != 3 {
		t.Errorf("server fields changed by client: desired %q node %q alloc-modify %d", got.DesiredStatus, got.NodeID, got.AllocModifyIndex)
	}
	if diff := cmp.Diff(api.TaskGroupSummary{Queued: 1, Running: 1}, summaryOf(t, s, "web", "web")); diff != "" {
		t.Errorf("after running (-want +got):\n%s", diff)
	}
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); j.Status != api.JobStatusRunning {
		t.Errorf("job status: got %q", j.Status)
	}

	// A server-side re-upsert keeps client fields.
	re := testAlloc("a1", "web", "n1")
	re.Job = nil
	must(t, s.UpsertAllocs(5, []*api.Allocation{re}))
	got = mustGet[api.Allocation](t)(s.AllocByID(nil, "a1"))
	if got.ClientStatus != api.AllocClientStatusRunning || got.TaskStates["t"] == nil || got.CreateIndex != 3 || got.Job == nil {
		t.Errorf("server upsert lost client state: %+v", got)
	}

	must(t, s.UpdateAllocsFromClient(6, []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusFailed}}))
	if diff := cmp.Diff(api.TaskGroupSummary{Queued: 1, Failed: 1}, summaryOf(t, s, "web", "web")); diff != "" {
		t.Errorf("after failure (-want +got):\n%s", diff)
	}
}

func TestDesiredTransitions(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertAllocs(2, []*api.Allocation{testAlloc("a1", "web", "n1")}))
	yes := true
	must(t, s.UpdateAllocsDesiredTransitions(3, map[string]*api.DesiredTransition{"a1": {Migrate: &yes}, "gone": {Migrate: &yes}},
		[]*api.Evaluation{testEval("e2", "web")}))
	a := mustGet[api.Allocation](t)(s.AllocByID(nil, "a1"))
	if !a.DesiredTransition.ShouldMigrate() || a.ModifyIndex != 3 {
		t.Errorf("transition: got %+v at %d", a.DesiredTransition, a.ModifyIndex)
	}
	if e := mustGet[api.Evaluation](t)(s.EvalByID(nil, "e2")); e == nil || e.CreateIndex != 3 {
		t.Errorf("eval not stored with the transition: %+v", e)
	}
}

func TestUpsertPlanResults(t *testing.T) {
	s := NewStateStore()
	job := testJob("web")
	must(t, s.UpsertJob(1, job))
	must(t, s.UpsertAllocs(2, []*api.Allocation{testAlloc("old", "web", "n1"), testAlloc("victim", "other", "n2")}))
	must(t, s.UpsertDeployment(3, &api.Deployment{ID: "d0", JobID: "web", Status: api.DeploymentStatusRunning}))

	placed := testAlloc("new", "web", "n2")
	placed.Job = nil
	stop := testAlloc("old", "web", "n1")
	stop.DesiredStatus = api.AllocDesiredStatusStop
	stop.DesiredDescription = "replaced"
	stop.ClientStatus = api.AllocClientStatusLost
	pre := &api.Allocation{ID: "victim", PreemptedByAllocation: "new", DesiredDescription: "preempted"}
	planEval := testEval("e1", "web")
	planEval.Status = api.EvalStatusComplete
	res := &ApplyPlanResultsRequest{Job: job, AllocsPlaced: []*api.Allocation{placed},
		AllocsStopped: []*api.Allocation{stop}, AllocsPreempted: []*api.Allocation{pre},
		Deployment:        &api.Deployment{ID: "d1", JobID: "web", Status: api.DeploymentStatusRunning},
		DeploymentUpdates: []*api.DeploymentStatusUpdate{{DeploymentID: "d0", Status: api.DeploymentStatusCancelled}},
		Evals:             []*api.Evaluation{planEval}}
	must(t, s.UpsertPlanResults(4, res))

	n := mustGet[api.Allocation](t)(s.AllocByID(nil, "new"))
	if n.Job != job || n.CreateIndex != 4 {
		t.Errorf("placed: job %p (want %p), create %d", n.Job, job, n.CreateIndex)
	}
	o := mustGet[api.Allocation](t)(s.AllocByID(nil, "old"))
	if o.DesiredStatus != api.AllocDesiredStatusStop || o.DesiredDescription != "replaced" ||
		o.ClientStatus != api.AllocClientStatusLost || o.ModifyIndex != 4 {
		t.Errorf("stopped: %+v", o)
	}
	v := mustGet[api.Allocation](t)(s.AllocByID(nil, "victim"))
	if v.DesiredStatus != api.AllocDesiredStatusEvict || v.PreemptedByAllocation != "new" {
		t.Errorf("preempted: %+v", v)
	}
	if d := mustGet[api.Deployment](t)(s.DeploymentByID(nil, "d0")); d.Status != api.DeploymentStatusCancelled {
		t.Errorf("deployment update: %q", d.Status)
	}
	if d := mustGet[api.Deployment](t)(s.LatestDeploymentByJobID(nil, "", "web")); d == nil || d.ID != "d1" {
		t.Errorf("latest deployment: %+v", d)
	}
	if e := mustGet[api.Evaluation](t)(s.EvalByID(nil, "e1")); e == nil || e.ModifyIndex != 4 {
		t.Errorf("plan eval: %+v", e)
	}
	for _, tbl := range []string{TableAllocs, TableDeployments, TableEvals} {
		if g := s.Index(tbl); g != 4 {
			t.Errorf("index %s: got %d, want 4", tbl, g)
		}
	}
	if diff := cmp.Diff(api.TaskGroupSummary{Starting: 1, Lost: 1}, summaryOf(t, s, "web", "web")); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}

	// A plan that fails part-way commits nothing.
	bad := &ApplyPlanResultsRequest{AllocsPlaced: []*api.Allocation{testAlloc("x", "web", "n1")},
		DeploymentUpdates: []*api.DeploymentStatusUpdate{{DeploymentID: "nope"}}}
	if err := s.UpsertPlanResults(5, bad); err == nil {
		t.Fatal("plan with unknown deployment: no error")
	}
	if a := mustGet[api.Allocation](t)(s.AllocByID(nil, "x")); a != nil {
		t.Error("failed plan left an alloc")
	}
}

func TestEvalsWritesAndDelete(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertEvals(2, []*api.Evaluation{testEval("e1", "web"), testEval("e2", "web"), testEval("f1", "api")}))
	e1 := testEval("e1", "web")
	e1.Status = api.EvalStatusComplete
	must(t, s.UpsertEvals(3, []*api.Evaluation{e1}))
	got := mustGet[api.Evaluation](t)(s.EvalByID(nil, "e1"))
	if got.CreateIndex != 2 || got.ModifyIndex != 3 || got.Status != api.EvalStatusComplete {
		t.Errorf("e1: %+v", got)
	}
	byJob, err := s.EvalsByJob(nil, "default", "web")
	must(t, err)
	if len(byJob) != 2 {
		t.Errorf("by job: got %d, want 2", len(byJob))
	}
	pre, err := s.EvalsByIDPrefix(nil, "default", "e")
	must(t, err)
	if len(pre) != 2 {
		t.Errorf("by prefix: got %d, want 2", len(pre))
	}
	must(t, s.UpsertAllocs(4, []*api.Allocation{testAlloc("a1", "web", "n1")}))
	must(t, s.DeleteEvals(5, []string{"e1", "e2", "missing"}, []string{"a1"}))
	if rest, _ := s.Evals(nil, "", ""); len(rest) != 1 || rest[0].ID != "f1" {
		t.Errorf("left: %v", rest)
	}
	if a := mustGet[api.Allocation](t)(s.AllocByID(nil, "a1")); a != nil {
		t.Error("alloc not deleted")
	}
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); j.Status != api.JobStatusDead {
		t.Errorf("job after GC of everything: got %q, want dead", j.Status)
	}
}

func TestDeploymentsByJob(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertDeployment(1, &api.Deployment{ID: "d1", JobID: "web"}))
	must(t, s.UpsertDeployment(2, &api.Deployment{ID: "d2", JobID: "web"}))
	must(t, s.UpsertDeployment(3, &api.Deployment{ID: "d1", JobID: "web", Status: api.DeploymentStatusSuccessful}))
	ds, err := s.DeploymentsByJobID(nil, "", "web")
	must(t, err)
	if len(ds) != 2 || ds[0].ID != "d2" || ds[1].CreateIndex != 1 || ds[1].ModifyIndex != 3 {
		t.Errorf("got %+v", ds)
	}
	if d := mustGet[api.Deployment](t)(s.LatestDeploymentByJobID(nil, "", "none")); d != nil {
		t.Errorf("latest of none: %+v", d)
	}
	if err := s.UpsertDeployment(4, &api.Deployment{ID: "x"}); err == nil {
		t.Error("deployment without job: no error")
	}
}

// TestSummaryStoppedBeforeClientRan follows an alloc the server stops while
// the client has not reported it yet: pending (starting) -> stop desired
// (still starting: the client may be starting it) -> the client reports it
// complete. The counts must be right at every step.
func TestSummaryStoppedBeforeClientRan(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertEvals(2, []*api.Evaluation{{ID: "e1", JobID: "web", Status: api.EvalStatusComplete,
		QueuedAllocations: map[string]int{"web": 1}}}))
	must(t, s.UpsertAllocs(3, []*api.Allocation{testAlloc("a1", "web", "n1")}))
	steps := []struct {
		name  string
		write func(idx uint64) error
		want  api.TaskGroupSummary
	}{
		{"job stopped", func(i uint64) error {
			j := testJob("web")
			j.Stop = true
			return s.UpsertJob(i, j)
		}, api.TaskGroupSummary{Starting: 1}},
		{"plan stops the pending alloc", func(i uint64) error {
			stop := &api.Allocation{ID: "a1", DesiredStatus: api.AllocDesiredStatusStop, DesiredDescription: "job stopped"}
			ev := testEval("e2", "web")
			ev.Status, ev.QueuedAllocations = api.EvalStatusComplete, map[string]int{"web": 0}
			return s.UpsertPlanResults(i, &ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{stop}, Evals: []*api.Evaluation{ev}})
		}, api.TaskGroupSummary{Starting: 1}},
		{"client reports it complete", func(i uint64) error {
			return s.UpdateAllocsFromClient(i, []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusComplete, ClientDescription: "stopped before it started"}})
		}, api.TaskGroupSummary{Complete: 1}},
		{"a repeated report changes nothing", func(i uint64) error {
			return s.UpdateAllocsFromClient(i, []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusComplete}})
		}, api.TaskGroupSummary{Complete: 1}},
		{"a late server re-upsert keeps the client's status", func(i uint64) error {
			a := testAlloc("a1", "web", "n1")
			a.DesiredStatus = api.AllocDesiredStatusStop
			return s.UpsertAllocs(i, []*api.Allocation{a})
		}, api.TaskGroupSummary{Complete: 1}},
	}
	for i, st := range steps {
		must(t, st.write(uint64(10+i)))
		if diff := cmp.Diff(st.want, summaryOf(t, s, "web", "web")); diff != "" {
			t.Errorf("after %s (-want +got):\n%s", st.name, diff)
		}
	}
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); j.Status != api.JobStatusDead {
		t.Errorf("job status after its only alloc completed: %q, want dead", j.Status)
	}
}

// TestNodeAllocsByID: a node's batch of IDs finds the node's allocs and
// nothing else (missing IDs, other nodes' allocs), by lookups and by the
// walk of the node index alike.
func TestNodeAllocsByID(t *testing.T) {
	s := NewStateStore()
	must(t, s.Write(1, func(tx *Txn) error {
		var allocs []*api.Allocation
		for i := range 2 * nodeWalkMin {
			node := "n1"
			if i%3 == 0 {
				node = "n2"
			}
			allocs = append(allocs, testAlloc(fmt.Sprintf("a%02d", i), "web", node))
		}
		return tx.UpsertAllocs(allocs)
	}))
	for _, n := range []int{1, nodeWalkMin - 1, nodeWalkMin, 2 * nodeWalkMin} {
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("a%02d", i))
		}
		ids = append(ids, "missing")
		got, err := s.NodeAllocsByID("n1", ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ids) {
			t.Fatalf("%d IDs: got %d answers", len(ids), len(got))
		}
		for i, id := range ids {
			want := i < n && i%3 != 0
			if (got[i] != nil) != want || got[i] != nil && got[i].ID != id {
				t.Errorf("%d IDs: %s: got %v, want found=%v", len(ids), id, got[i], want)
			}
		}
	}
}

// TestAllocReadsInOneTxn: the alloc writes of one transaction see what it
// wrote before (they read the state before it, not the write
// transaction's index, see Txn.allocByID): a client update of an alloc
// placed in the same transaction keeps its placement, a plan's stop of it
// stops that version, and once the transaction deleted an alloc the same
// ID is new again.
func TestAllocReadsInOneTxn(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.Write(2, func(tx *Txn) error {
		a := testAlloc("a1", "web", "n1")
		a.DesiredDescription = "placed"
		if err := tx.UpsertAllocs([]*api.Allocation{a}); err != nil {
			return err
		}
		if err := tx.UpdateAllocsFromClient([]*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusRunning}}); err != nil {
			return err
		}
		return tx.UpsertPlanResults(&ApplyPlanResultsRequest{AllocsStopped: []*api.Allocation{{ID: "a1", DesiredDescription: "stopped"}}})
	}))
	a := mustGet[api.Allocation](t)(s.AllocByID(nil, "a1"))
	if a == nil || a.ClientStatus != api.AllocClientStatusRunning || a.DesiredStatus != api.AllocDesiredStatusStop ||
		a.DesiredDescription != "stopped" || a.CreateIndex != 2 || a.Job == nil {
		t.Fatalf("alloc after one transaction: %+v", a)
	}

	must(t, s.Write(3, func(tx *Txn) error {
		if err := tx.DeleteEvals(nil, []string{"a1"}); err != nil {
			return err
		}
		return tx.UpsertAllocs([]*api.Allocation{testAlloc("a1", "web", "n2")})
	}))
	a = mustGet[api.Allocation](t)(s.AllocByID(nil, "a1"))
	if a == nil || a.CreateIndex != 3 || a.ClientStatus != api.AllocClientStatusPending || a.NodeID != "n2" {
		t.Fatalf("alloc deleted and placed again in one transaction: %+v", a)
	}
}
