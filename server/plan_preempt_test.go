package server

import (
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

func TestPreemptionEvalsOnePerJob(t *testing.T) {
	st := state.NewStateStore()
	low := prioJob("low", 20, 100)
	low.Namespace = api.DefaultNamespace
	if err := st.UpsertJob(1, low); err != nil {
		t.Fatal(err)
	}
	snap, _ := st.Snapshot()
	gone := &api.Job{ID: "gone", Namespace: "ops", Type: api.JobTypeBatch, Priority: 30}
	preempted := map[string][]*api.Allocation{
		"n1": {{ID: "a1", JobID: "low", Namespace: api.DefaultNamespace}, {ID: "a2", JobID: "low", Namespace: api.DefaultNamespace}},
		"n2": {{ID: "a3", JobID: "low", Namespace: api.DefaultNamespace}, {ID: "a4", JobID: "gone", Namespace: "ops", Job: gone},
			{ID: "a5", JobID: "nojob", Namespace: api.DefaultNamespace}},
	}
	got := preemptionEvals(snap, preempted, 42)
	if len(got) != 2 {
		t.Fatalf("got %d evals, want 2 (one per job with a job to evaluate): %+v", len(got), got)
	}
	want := []struct {
		ns, job, typ string
		prio         int
	}{{api.DefaultNamespace, "low", api.JobTypeService, 20}, {"ops", "gone", api.JobTypeBatch, 30}}
	for i, w := range want {
		e := got[i]
		if e.Namespace != w.ns || e.JobID != w.job || e.Type != w.typ || e.Priority != w.prio ||
			e.TriggeredBy != api.EvalTriggerPreemption || e.Status != api.EvalStatusPending || e.ID == "" || e.CreateTime != 42 {
			t.Errorf("eval %d: %+v, want %+v pending, triggered by preemption", i, e, w)
		}
	}
	if got := preemptionEvals(snap, nil, 42); len(got) != 0 {
		t.Errorf("no preemptions: %d evals", len(got))
	}
}
