package jobspec

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
)

// Nomad jobspec attributes and blocks that drover parses but does not run
// yet: a job using them is accepted, with a warning naming each one at its
// place (Options.Warn), and the item is ignored. Everything else of Nomad's
// grammar is either decoded or an error.

// accepted maps a schema to its accepted-but-ignored names.
var accepted = map[*hcl.BodySchema]map[string]bool{}

// accept adds accepted-but-ignored attributes (space-separated) and block
// types ("name:label" takes one label) to s and returns it.
func accept(s *hcl.BodySchema, attrs string, blocks ...string) *hcl.BodySchema {
	extra := schema(attrs, blocks...)
	names := map[string]bool{}
	for _, a := range extra.Attributes {
		s.Attributes = append(s.Attributes, a)
		names[a.Name] = true
	}
	for _, b := range extra.Blocks {
		s.Blocks = append(s.Blocks, b)
		names[b.Type] = true
	}
	accepted[s] = names
	return s
}

// warnf records a warning for Options.Warn.
func (d *decoder) warnf(r hcl.Range, format string, a ...any) {
	*d.warns = append(*d.warns, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: fmt.Sprintf(format, a...), Subject: r.Ptr()})
}

// dropAccepted warns about and removes the accepted-but-ignored items of s
// from c, so the decoders never see them.
func (d *decoder) dropAccepted(c *hcl.BodyContent, s *hcl.BodySchema) {
	names := accepted[s]
	if names == nil {
		return
	}
	for name, a := range c.Attributes {
		if names[name] {
			d.warnf(a.NameRange, "%q is not supported by drover yet: accepted and ignored", name)
			delete(c.Attributes, name)
		}
	}
	c.Blocks = slices.DeleteFunc(c.Blocks, func(b *hcl.Block) bool {
		if !names[b.Type] {
			return false
		}
		d.warnf(b.DefRange, "%q block is not supported by drover yet: accepted and ignored", b.Type)
		return true
	})
}
