package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJobForRegion: Nomad's rules for a region's copy of a multiregion
// job: the region's count replaces only counts of 0, its datacenters and
// node pool replace the job's, its meta is merged over the job's.
func TestJobForRegion(t *testing.T) {
	j := &Job{ID: "docs", Datacenters: []string{"dc1"}, NodePool: "default", Meta: map[string]string{"first": "job", "keep": "job"},
		TaskGroups: []*TaskGroup{{Name: "worker", Count: 0}, {Name: "controller", Count: 1}},
		Multiregion: &Multiregion{Regions: []*MultiregionRegion{
			{Name: "west", Count: 2, Datacenters: []string{"west-1"}, NodePool: "gpu", Meta: map[string]string{"first": "west"}},
			{Name: "east"},
		}}}
	west := j.ForRegion("west")
	if west.Region != "west" || west.TaskGroups[0].Count != 2 || west.TaskGroups[1].Count != 1 ||
		!cmp.Equal(west.Datacenters, []string{"west-1"}) || west.NodePool != "gpu" ||
		!cmp.Equal(west.Meta, map[string]string{"first": "west", "keep": "job"}) || west.Multiregion == nil {
		t.Errorf("west copy = region %q counts %d/%d dcs %v pool %q meta %v", west.Region, west.TaskGroups[0].Count,
			west.TaskGroups[1].Count, west.Datacenters, west.NodePool, west.Meta)
	}
	east := j.ForRegion("east")
	if east.TaskGroups[0].Count != 0 || !cmp.Equal(east.Datacenters, []string{"dc1"}) || east.NodePool != "default" || east.Meta["first"] != "job" {
		t.Errorf("east copy = count %d dcs %v pool %q meta %v, want the job's", east.TaskGroups[0].Count, east.Datacenters, east.NodePool, east.Meta)
	}
	if j.TaskGroups[0].Count != 0 || j.Meta["first"] != "job" || j.Region != "" {
		t.Errorf("ForRegion changed the job itself: %+v", j)
	}
}

func TestMultiregionValidate(t *testing.T) {
	for _, tc := range []struct {
		m    *Multiregion
		want string // "" valid
	}{
		{nil, ""},
		{&Multiregion{Regions: []*MultiregionRegion{{Name: "a"}, {Name: "b"}}, Strategy: &MultiregionStrategy{MaxParallel: 1, OnFailure: "fail_local"}}, ""},
		{&Multiregion{}, "name at least one region"},
		{&Multiregion{Regions: []*MultiregionRegion{{Name: "a"}, {Name: "a"}}}, `region "a" is listed twice`},
		{&Multiregion{Regions: []*MultiregionRegion{{Name: "a", Count: -1}}}, "must not be negative"},
		{&Multiregion{Regions: []*MultiregionRegion{{}}}, "has no name"},
		{&Multiregion{Regions: []*MultiregionRegion{{Name: "a"}}, Strategy: &MultiregionStrategy{OnFailure: "sometimes"}}, `on_failure "sometimes"`},
	} {
		err := tc.m.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.m, err, tc.want)
		}
	}
}
