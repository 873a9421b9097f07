package jobspec

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns src in canonical HCL layout (`drover fmt`, as `nomad
// fmt`): the same limits as Parse apply first, then a syntax check, so a
// broken file gives file:line:col diagnostics and is never rewritten.
func Format(filename string, src []byte) ([]byte, error) {
	p := &parser{filename: filename, src: src}
	if d := checkSource(filename, src); d != nil {
		p.diags = hcl.Diagnostics{d}
		return nil, p.diagnostics()
	}
	if _, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos); diags.HasErrors() {
		p.diags = diags
		return nil, p.diagnostics()
	}
	return hclwrite.Format(src), nil
}
