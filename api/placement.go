package api

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Placement modes.
const (
	// PlacementSpill moves a job whose work has waited spill_after in its
	// home region to another listed region where it fits.
	PlacementSpill = "spill"
)

// DefaultSpillAfter is how long a job's work waits at home before it may
// spill, when spill_after is not set.
const DefaultSpillAfter = 5 * time.Minute

// Meta keys a spill sets. The moved job carries MetaSpilledFrom (its home
// region: it never spills again); the job stopped at home carries
// MetaSpilledTo and MetaSpillReason, shown by `job status` and the UI.
const (
	MetaSpilledFrom = "drover.spilled_from"
	MetaSpilledTo   = "drover.spilled_to"
	MetaSpillReason = "drover.spill_reason"
)

// Placement is a job's placement { regions, mode, spill_after } block
// (drover's addition; Nomad has none): with mode "spill", the leader of
// the job's home region moves it, whole, to the first region of Regions
// where it fits soonest once none of its work has been placed for
// SpillAfter. Work that runs is never moved.
type Placement struct {
	// Regions are the regions the job may run in, in order of preference
	// (the tie-break between regions where it fits as soon); the home
	// region may be one of them.
	Regions    []string      `json:"Regions"`
	Mode       string        `json:"Mode,omitempty"`
	SpillAfter time.Duration `json:"SpillAfter,omitempty"`
}

// Validate checks a placement block (nil is valid: no placement).
func (p *Placement) Validate() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.Mode != PlacementSpill {
		errs = append(errs, fmt.Errorf("mode %q: want %q", p.Mode, PlacementSpill))
	}
	if len(p.Regions) == 0 {
		errs = append(errs, errors.New("regions: name at least one region"))
	}
	for i, r := range p.Regions {
		switch {
		case r == "":
			errs = append(errs, fmt.Errorf("regions[%d] is empty", i))
		case slices.Index(p.Regions, r) != i:
			errs = append(errs, fmt.Errorf("region %q is listed twice", r))
		}
	}
	if p.SpillAfter < 0 {
		errs = append(errs, errors.New("spill_after must not be negative"))
	}
	return errors.Join(errs...)
}

// After is how long the job's work waits at home before it may spill.
func (p *Placement) After() time.Duration {
	if p == nil || p.SpillAfter <= 0 {
		return DefaultSpillAfter
	}
	return p.SpillAfter
}

// SpilledTo is the region a job stopped at home was moved to, and why
// ("" when it was not).
func (j *Job) SpilledTo() (region, reason string) {
	if j == nil {
		return "", ""
	}
	return j.Meta[MetaSpilledTo], j.Meta[MetaSpillReason]
}
