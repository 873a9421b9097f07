package scheduler

import (
	"reflect"
	"testing"

	"github.com/drover/drover/api"
)

// reconciler.group only decides: the plan is untouched until applyGroup
// writes the stops, updates and annotation; the placements come back.
func TestReconcileReturnsResult(t *testing.T) {
	st := newMemState()
	st.addNode(testNode("1", "dc1", 4000, 8192))
	down := testNode("2", "dc1", 4000, 8192)
	down.Status = api.NodeStatusDown
	st.addNode(down)
	job := testJob("web", api.JobTypeService, 2, 100, 64)
	st.upsertJob(job)
	mk := func(id, node string, index int) *api.Allocation {
		return &api.Allocation{ID: id, Namespace: api.DefaultNamespace, JobID: "web", Job: job, TaskGroup: "web",
			Name: api.AllocName("web", "web", index), NodeID: node, DesiredStatus: api.AllocDesiredStatusRun,
			ClientStatus: api.AllocClientStatusRunning}
	}
	allocs := []*api.Allocation{mk("keep", "node-1", 0), mk("extra", "node-1", 0), mk("lost", "node-2", 1)}
	for _, a := range allocs {
		st.upsertAlloc(a)
	}
	s := newPass(st, testEval(job, 1), Options{Now: testNow}, job)
	if err := s.loadNodes(); err != nil {
		t.Fatal(err)
	}
	r := s.rec.group(job.TaskGroups[0], allocs)
	if len(s.out.plan.NodeUpdate) != 0 || len(s.out.plan.NodeAllocation) != 0 || s.out.plan.Annotations != nil || len(s.led.stopped) != 0 {
		t.Fatalf("reconcile wrote the plan: %+v", s.out.plan)
	}
	var stops []string
	for _, st := range r.stops {
		stops = append(stops, st.alloc.ID+":"+st.client)
	}
	if want := []string{"extra:", "lost:lost"}; !reflect.DeepEqual(stops, want) {
		t.Fatalf("stops %v, want %v", stops, want)
	}
	if len(r.places) != 1 || r.places[0].prev == nil || r.places[0].prev.ID != "lost" || r.places[0].index != 1 {
		t.Fatalf("places %+v, want the lost alloc's replacement at index 1", r.places)
	}
	if r.desired.Stop != 1 || r.desired.Place != 1 || r.desired.Ignore != 1 {
		t.Fatalf("desired %+v, want stop 1 place 1 ignore 1", r.desired)
	}
	places := s.applyGroup(r)
	if len(places) != 1 || len(s.out.plan.NodeUpdate["node-2"]) != 1 || len(s.out.plan.NodeUpdate["node-1"]) != 1 ||
		s.out.plan.NodeUpdate["node-2"][0].ClientStatus != api.AllocClientStatusLost || !s.led.stopped["extra"] {
		t.Fatalf("applied plan: %+v", s.out.plan.NodeUpdate)
	}
	if got := *s.out.plan.Annotations.DesiredTGUpdates["web"]; got != r.desired {
		t.Fatalf("annotation %+v, want %+v", got, r.desired)
	}
}

// addDesired sums every field of DesiredUpdates (a new field must be
// added there too).
func TestAddDesiredCoversEveryField(t *testing.T) {
	var add api.DesiredUpdates
	v := reflect.ValueOf(&add).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(i + 1))
	}
	got := api.DesiredUpdates{}
	addDesired(&got, &add)
	addDesired(&got, &add)
	g := reflect.ValueOf(got)
	for i := range g.NumField() {
		if g.Field(i).Uint() != 2*uint64(i+1) {
			t.Errorf("field %s: %d, want %d", g.Type().Field(i).Name, g.Field(i).Uint(), 2*(i+1))
		}
	}
}
