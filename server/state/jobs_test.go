package state

import (
	"errors"
	"fmt"
	"testing"

	"github.com/drover/drover/api"
	"github.com/google/go-cmp/cmp"
)

// jobRev is testJob("web") with a spec change per rev (a new version).
func jobRev(rev int) *api.Job {
	j := testJob("web")
	j.Meta = map[string]string{"rev": fmt.Sprint(rev)}
	return j
}

func TestUpsertJobVersionsAndIndexes(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(10, jobRev(0)))
	must(t, s.UpsertJob(20, jobRev(1)))

	got := mustGet[api.Job](t)(s.JobByID(nil, "", "web"))
	if got == nil {
		t.Fatal("job missing")
	}
	want := struct{ Version, Create, Modify, JobModify uint64 }{1, 10, 20, 20}
	have := struct{ Version, Create, Modify, JobModify uint64 }{got.Version, got.CreateIndex, got.ModifyIndex, got.JobModifyIndex}
	if have != want {
		t.Errorf("got %+v, want %+v", have, want)
	}
	if got.Status != api.JobStatusPending {
		t.Errorf("status: got %q, want pending", got.Status)
	}
	if g := s.Index(TableJobs); g != 20 {
		t.Errorf("jobs index: got %d, want 20", g)
	}
	if g := s.LatestIndex(); g != 20 {
		t.Errorf("latest index: got %d, want 20", g)
	}
	if g := s.Index(TableNodes); g != 0 {
		t.Errorf("nodes index: got %d, want 0", g)
	}
	missing, err := s.JobByID(nil, "default", "nope")
	if err != nil || missing != nil {
		t.Errorf("missing job: got %v, %v; want nil, nil", missing, err)
	}
}

func TestJobVersionsKeepsLastSix(t *testing.T) {
	s := NewStateStore()
	for i := uint64(1); i <= 9; i++ {
		must(t, s.UpsertJob(i, jobRev(int(i))))
	}
	vs, err := s.JobVersionsByID(nil, "default", "web")
	must(t, err)
	got := ids(vs, jobID)
	want := []string{"web@8", "web@7", "web@6", "web@5", "web@4", "web@3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}
	v3 := mustGet[api.Job](t)(s.JobVersionByID(nil, "default", "web", 3))
	if v3 == nil || v3.Version != 3 {
		t.Errorf("version 3: got %+v", v3)
	}
}

func TestJobsListAndPrefix(t *testing.T) {
	s := NewStateStore()
	for i, id := range []string{"web", "web2", "api"} {
		must(t, s.UpsertJob(uint64(i+1), testJob(id)))
	}
	other := testJob("web")
	other.Namespace = "prod"
	must(t, s.UpsertJob(4, other))

	tests := []struct {
		ns, prefix string
		want       []string
	}{
		{"default", "", []string{"api@0", "web@0", "web2@0"}},
		{"default", "web", []string{"web@0", "web2@0"}},
		{"prod", "", []string{"web@0"}},
		{"*", "web", []string{"web@0", "web2@0", "web@0"}},
		{"default", "zzz", []string{}},
	}
	for _, tt := range tests {
		js, err := s.Jobs(nil, tt.ns, tt.prefix)
		must(t, err)
		if diff := cmp.Diff(tt.want, ids(js, jobID)); diff != "" {
			t.Errorf("Jobs(%q, %q) (-want +got):\n%s", tt.ns, tt.prefix, diff)
		}
	}
}

func TestDeleteJobPurgesVersionsAndSummary(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertJob(2, testJob("web")))
	must(t, s.DeleteJob(3, "default", "web"))
	if j := mustGet[api.Job](t)(s.JobByID(nil, "default", "web")); j != nil {
		t.Errorf("job still there: %+v", j)
	}
	vs, err := s.JobVersionsByID(nil, "default", "web")
	must(t, err)
	if len(vs) != 0 {
		t.Errorf("versions left: %v", ids(vs, jobID))
	}
	if sum := mustGet[api.JobSummary](t)(s.JobSummaryByID(nil, "default", "web")); sum != nil {
		t.Errorf("summary left: %+v", sum)
	}
	if err := s.DeleteJob(4, "default", "web"); !errors.Is(err, api.ErrJobNotFound) {
		t.Errorf("delete missing: got %v, want ErrJobNotFound", err)
	}
	if g := s.Index(TableJobs); g != 3 {
		t.Errorf("failed delete moved the index: got %d, want 3", g)
	}
}

func TestStopJobAndStatus(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, testJob("web")))
	must(t, s.UpsertEvals(2, []*api.Evaluation{testEval("e1", "web")}))
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); j.Status != api.JobStatusPending {
		t.Errorf("with pending eval: got %q, want pending", j.Status)
	}
	must(t, s.UpsertAllocs(3, []*api.Allocation{testAlloc("a1", "web", "n1")}))
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); j.Status != api.JobStatusRunning || j.ModifyIndex != 3 {
		t.Errorf("with alloc: got %q@%d, want running@3", j.Status, j.ModifyIndex)
	}
	must(t, s.Write(4, func(tx *Txn) error { return tx.StopJob("default", "web", 1234) }))
	j := mustGet[api.Job](t)(s.JobByID(nil, "", "web"))
	if !j.Stop || j.Version != 1 || j.SubmitTime != 1234 {
		t.Errorf("stopped job: got stop=%v version=%d submit=%d", j.Stop, j.Version, j.SubmitTime)
	}
	stop := testAlloc("a1", "web", "n1")
	stop.DesiredStatus = api.AllocDesiredStatusStop
	done := testEval("e1", "web")
	done.Status = api.EvalStatusComplete
	must(t, s.Write(5, func(tx *Txn) error {
		if err := tx.UpsertAllocs([]*api.Allocation{stop}); err != nil {
			return err
		}
		return tx.UpsertEvals([]*api.Evaluation{done})
	}))
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); j.Status != api.JobStatusDead {
		t.Errorf("all terminal: got %q, want dead", j.Status)
	}
}

func TestSetJobStable(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(1, jobRev(0)))
	must(t, s.UpsertJob(2, jobRev(1)))
	must(t, s.Write(3, func(tx *Txn) error { return tx.SetJobStable("default", "web", 1, true) }))
	if j := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); !j.Stable {
		t.Error("current version not stable")
	}
	if v := mustGet[api.Job](t)(s.JobVersionByID(nil, "", "web", 0)); v.Stable {
		t.Error("version 0 became stable")
	}
	err := s.Write(4, func(tx *Txn) error { return tx.SetJobStable("default", "web", 9, true) })
	if !errors.Is(err, api.ErrJobNotFound) {
		t.Errorf("missing version: got %v", err)
	}
}

func TestUpsertJobRejectsMissingID(t *testing.T) {
	s := NewStateStore()
	if err := s.UpsertJob(1, &api.Job{}); !errors.Is(err, api.ErrInvalidJob) {
		t.Errorf("got %v, want ErrInvalidJob", err)
	}
	if s.LatestIndex() != 0 {
		t.Error("failed write changed the index")
	}
}

func TestChildJobsCountedInParentSummary(t *testing.T) {
	s := NewStateStore()
	parent := testJob("batch")
	parent.Type = api.JobTypeBatch
	parent.Periodic = &api.PeriodicConfig{Enabled: true, Spec: "* * * * *"}
	must(t, s.UpsertJob(1, parent))
	child := func(id string) *api.Job {
		j := testJob(id)
		j.Type, j.ParentID = api.JobTypeBatch, "batch"
		return j
	}
	must(t, s.UpsertJob(2, child("batch/periodic-1")))
	must(t, s.UpsertJob(3, child("batch/periodic-2")))
	must(t, s.UpsertAllocs(4, []*api.Allocation{testAlloc("a1", "batch/periodic-1", "n1")}))
	children := func() api.JobChildrenSummary {
		sum := mustGet[api.JobSummary](t)(s.JobSummaryByID(nil, "", "batch"))
		if sum.Children == nil {
			t.Fatal("no children summary")
		}
		return *sum.Children
	}
	if diff := cmp.Diff(api.JobChildrenSummary{Pending: 1, Running: 1}, children()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	must(t, s.UpdateAllocsFromClient(5, []*api.Allocation{{ID: "a1", ClientStatus: api.AllocClientStatusComplete}}))
	must(t, s.DeleteJob(6, "", "batch/periodic-2"))
	if diff := cmp.Diff(api.JobChildrenSummary{Dead: 1}, children()); diff != "" {
		t.Errorf("after completion and purge (-want +got):\n%s", diff)
	}
}

// Registering the same spec again keeps the version, JobModifyIndex and
// stability (as Nomad); a changed spec makes a new version.
func TestUpsertUnchangedJobKeepsVersion(t *testing.T) {
	s := NewStateStore()
	must(t, s.UpsertJob(10, jobRev(0)))
	must(t, s.Write(11, func(tx *Txn) error { return tx.SetJobStable("default", "web", 0, true) }))
	again := jobRev(0)
	again.SubmitTime = 12345
	must(t, s.UpsertJob(20, again))
	got := mustGet[api.Job](t)(s.JobByID(nil, "", "web"))
	if got.Version != 0 || got.JobModifyIndex != 10 || got.ModifyIndex != 20 || !got.Stable || got.SubmitTime != 12345 {
		t.Errorf("unchanged spec: version %d jobModify %d modify %d stable %v submit %d, want 0 10 20 true 12345",
			got.Version, got.JobModifyIndex, got.ModifyIndex, got.Stable, got.SubmitTime)
	}
	vs, err := s.JobVersionsByID(nil, "default", "web")
	if err != nil || len(vs) != 1 {
		t.Errorf("%d versions stored (%v), want 1", len(vs), err)
	}
	must(t, s.UpsertJob(30, jobRev(1)))
	if got := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); got.Version != 1 || got.JobModifyIndex != 30 || got.Stable {
		t.Errorf("changed spec: version %d jobModify %d stable %v, want 1 30 false", got.Version, got.JobModifyIndex, got.Stable)
	}
	stopped := jobRev(1)
	stopped.Stop = true
	must(t, s.UpsertJob(40, stopped))
	if got := mustGet[api.Job](t)(s.JobByID(nil, "", "web")); got.Version != 2 {
		t.Errorf("stopping is a spec change: version %d, want 2", got.Version)
	}
}
