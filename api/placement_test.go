package api

import (
	"strings"
	"testing"
	"time"
)

func TestPlacementValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Placement
		want string // "" = valid
	}{
		{"none", nil, ""},
		{"spill", &Placement{Regions: []string{"eu", "us"}, Mode: PlacementSpill, SpillAfter: time.Minute}, ""},
		{"mode", &Placement{Regions: []string{"eu"}, Mode: "scatter"}, `mode "scatter"`},
		{"no regions", &Placement{Mode: PlacementSpill}, "name at least one region"},
		{"twice", &Placement{Regions: []string{"eu", "eu"}, Mode: PlacementSpill}, `"eu" is listed twice`},
		{"empty", &Placement{Regions: []string{""}, Mode: PlacementSpill}, "regions[0] is empty"},
		{"negative", &Placement{Regions: []string{"eu"}, Mode: PlacementSpill, SpillAfter: -time.Second}, "negative"},
	} {
		err := tc.p.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if got := (&Placement{}).After(); got != DefaultSpillAfter {
		t.Errorf("After() without spill_after = %s, want %s", got, DefaultSpillAfter)
	}
	j := &Job{ID: "x", Priority: DefaultPriority, TaskGroups: []*TaskGroup{{Name: "g", Count: 1, Tasks: []*Task{{Name: "t", Driver: "exec"}}}},
		Placement: &Placement{Mode: PlacementSpill}}
	if err := j.Validate(); err == nil || !strings.Contains(err.Error(), "placement:") {
		t.Errorf("job with an empty placement: %v, want a placement error", err)
	}
}
