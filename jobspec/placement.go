package jobspec

import (
	"slices"

	"github.com/drover/drover/api"
	"github.com/hashicorp/hcl/v2"
)

// placementSchema is drover's job-level placement block (Nomad has
// none): placement { regions = ["eu", "us"]  mode = "spill"
// spill_after = "5m" }.
var placementSchema = schema("regions mode spill_after")

// placement decodes a placement block; mode defaults to "spill" (the only
// one) and spill_after to api.DefaultSpillAfter.
func (d *decoder) placement(b *hcl.Block) *api.Placement {
	p := &api.Placement{Mode: api.PlacementSpill}
	c := d.content(b.Body, placementSchema)
	if a := c.Attributes["regions"]; a == nil {
		d.errorf(b.DefRange, "Missing regions: placement needs regions = [\"eu\", \"us\"] (the regions the job may run in)")
	} else if d.strs(c, "regions", &p.Regions) {
		for i, r := range p.Regions {
			switch {
			case r == "":
				d.errorf(a.Expr.Range(), "Invalid regions: element %d is empty", i)
			case slices.Index(p.Regions, r) != i:
				d.errorf(a.Expr.Range(), "Invalid regions: %q is listed twice", r)
			}
		}
		if len(p.Regions) == 0 {
			d.errorf(a.Expr.Range(), "Invalid regions: name at least one region")
		}
	}
	if d.str(c, "mode", &p.Mode) && p.Mode != api.PlacementSpill {
		d.errorf(c.Attributes["mode"].Expr.Range(), "Invalid placement mode %q: want %q", p.Mode, api.PlacementSpill)
	}
	if d.dur(c, "spill_after", &p.SpillAfter) && p.SpillAfter <= 0 {
		d.errorf(c.Attributes["spill_after"].Expr.Range(), "Invalid spill_after: %s must be positive", p.SpillAfter)
	}
	if p.SpillAfter == 0 {
		p.SpillAfter = api.DefaultSpillAfter
	}
	return p
}
