package api

import (
	"slices"
	"testing"
)

func TestNodeClientAllocsChanged(t *testing.T) {
	r := &NodeClientAllocsResponse{Allocs: map[string]uint64{"same": 3, "moved": 7, "new": 9}}
	fetched := map[string]uint64{"same": 3, "moved": 5, "gone": 2}
	got := r.Changed(fetched)
	slices.Sort(got)
	if !slices.Equal(got, []string{"moved", "new"}) {
		t.Errorf("Changed = %v, want [moved new]", got)
	}
	if _, ok := fetched["gone"]; ok || len(fetched) != 2 {
		t.Errorf("fetched after Changed = %v, want gone dropped", fetched)
	}
}
