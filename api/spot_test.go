package api

import (
	"errors"
	"strings"
	"testing"
)

// Spot is allow, never or prefer at job and group level; the group's
// choice wins.
func TestSpotChoice(t *testing.T) {
	j := minimalJob()
	j.Canonicalize()
	if err := j.Validate(); err != nil {
		t.Fatal(err)
	}
	tg := j.TaskGroups[0]
	if got := j.SpotChoice(tg); got != SpotAllow {
		t.Errorf("default spot %q, want allow", got)
	}
	j.Spot, tg.Spot = SpotNever, SpotPrefer
	if err := j.Validate(); err != nil || j.SpotChoice(tg) != SpotPrefer {
		t.Errorf("group prefer under job never: %v, choice %q", err, j.SpotChoice(tg))
	}
	tg.Spot = ""
	if j.SpotChoice(tg) != SpotNever {
		t.Errorf("group inherits: %q, want never", j.SpotChoice(tg))
	}
	for _, bad := range []func(){func() { j.Spot = "sometimes" }, func() { j.Spot, tg.Spot = "", "always" }} {
		bad()
		if err := j.Validate(); !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), "want allow, never or prefer") {
			t.Errorf("bad spot: %v", err)
		}
	}
}
