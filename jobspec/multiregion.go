package jobspec

import (
	"github.com/drover/drover/api"
	"github.com/hashicorp/hcl/v2"
)

// Nomad's multiregion block: multiregion { strategy { max_parallel
// on_failure } region "eu" { count datacenters node_pool meta } ... }.
var (
	multiregionSchema = schema("", "strategy", "region:name")
	mrStrategySchema  = schema("max_parallel on_failure")
	mrRegionSchema    = schema("count datacenters node_pool meta", "meta")
)

// multiregion decodes a multiregion block: at least one region, each
// named once; regions keep their order (the rollout's).
func (d *decoder) multiregion(b *hcl.Block) *api.Multiregion {
	m := &api.Multiregion{}
	c := d.content(b.Body, multiregionSchema)
	seen := map[string]hcl.Range{}
	for _, blk := range c.Blocks {
		switch blk.Type {
		case "strategy":
			m.Strategy = d.mrStrategy(d.once(m.Strategy != nil, blk))
		case "region":
			name := blk.Labels[0]
			switch prev, dup := seen[name]; {
			case name == "":
				d.errorf(blk.LabelRanges[0], "Invalid region name: must not be empty")
			case dup:
				d.errorf(blk.LabelRanges[0], "Duplicate region %q: already defined at %s", name, prev)
			}
			seen[name] = blk.DefRange
			m.Regions = append(m.Regions, d.mrRegion(blk))
		}
	}
	if len(m.Regions) == 0 {
		d.errorf(b.DefRange, "Missing region: a multiregion block needs at least one region \"name\" { } block")
	}
	return m
}

func (d *decoder) mrStrategy(b *hcl.Block) *api.MultiregionStrategy {
	s := &api.MultiregionStrategy{}
	c := d.content(b.Body, mrStrategySchema)
	d.integer(c, "max_parallel", &s.MaxParallel, 0, anyInt)
	if d.str(c, "on_failure", &s.OnFailure) {
		switch s.OnFailure {
		case api.MultiregionFailAll, api.MultiregionFailLocal, api.MultiregionFailDefault:
		default:
			d.errorf(c.Attributes["on_failure"].Expr.Range(), "Invalid on_failure %q: want %q, %q or \"\" (the failed region and those after it)",
				s.OnFailure, api.MultiregionFailAll, api.MultiregionFailLocal)
		}
	}
	return s
}

func (d *decoder) mrRegion(b *hcl.Block) *api.MultiregionRegion {
	r := &api.MultiregionRegion{Name: b.Labels[0]}
	c := d.content(b.Body, mrRegionSchema)
	d.integer(c, "count", &r.Count, 0, anyInt)
	if d.strs(c, "datacenters", &r.Datacenters) {
		for i, dc := range r.Datacenters {
			if dc == "" {
				d.errorf(c.Attributes["datacenters"].Expr.Range(), "Invalid datacenters: element %d is empty", i)
			}
		}
	}
	d.str(c, "node_pool", &r.NodePool)
	r.Meta = d.kvAttr(c, "meta", r.Meta)
	var metas hcl.Blocks
	for _, blk := range c.Blocks {
		if blk.Type == "meta" {
			metas = append(metas, blk)
		}
	}
	r.Meta = d.mergeKV(r.Meta, metas)
	return r
}
