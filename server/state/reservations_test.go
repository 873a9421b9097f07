package state

import (
	"testing"

	"github.com/drover/drover/api"
)

// Reservations lists the reservations of blocked evals only, one per job
// (the newest eval's), and none for jobs gone or stopped; an eval that
// leaves blocked status drops out of the index.
func TestReservations(t *testing.T) {
	s := NewStateStore()
	job := func(id string, stop bool) *api.Job {
		return &api.Job{ID: id, Namespace: api.DefaultNamespace, Type: api.JobTypeBatch, Priority: 50, Stop: stop,
			TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: "exec"}}}}}
	}
	for i, j := range []*api.Job{job("a", false), job("b", false), job("stopped", true)} {
		if err := s.UpsertJob(uint64(1+i), j); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(id, jobID, status string) *api.Evaluation {
		return &api.Evaluation{ID: id, Namespace: api.DefaultNamespace, JobID: jobID, Status: status, Type: api.JobTypeBatch,
			Reservation: &api.Reservation{Namespace: api.DefaultNamespace, JobID: jobID, Groups: []string{id}}}
	}
	if err := s.UpsertEvals(10, []*api.Evaluation{ev("a-old", "a", api.EvalStatusBlocked), ev("b-done", "b", api.EvalStatusComplete),
		ev("s", "stopped", api.EvalStatusBlocked), ev("gone", "gone", api.EvalStatusBlocked)}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertEvals(11, []*api.Evaluation{ev("a-new", "a", api.EvalStatusBlocked),
		{ID: "plain", Namespace: api.DefaultNamespace, JobID: "b", Status: api.EvalStatusBlocked}}); err != nil {
		t.Fatal(err)
	}
	snap, _ := s.Snapshot()
	rs, err := snap.Scheduler().Reservations()
	if err != nil || len(rs) != 1 || rs[0].JobID != "a" || rs[0].Groups[0] != "a-new" {
		t.Fatalf("reservations %+v, %v: want a-new's only", rs, err)
	}
	done := ev("a-new", "a", api.EvalStatusComplete)
	if err := s.UpsertEvals(12, []*api.Evaluation{done}); err != nil {
		t.Fatal(err)
	}
	snap, _ = s.Snapshot()
	if rs, err := snap.Scheduler().Reservations(); err != nil || len(rs) != 1 || rs[0].Groups[0] != "a-old" {
		t.Fatalf("after a-new completed: %+v, %v; want a-old's (still blocked)", rs, err)
	}
}
