package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// maxSpecFile bounds a small object spec file (node pool, namespace).
const maxSpecFile = 1 << 20

// readSpecFile reads an object spec: JSON content ("{" first) is decoded
// into v, unknown fields refused, and the HCL file is nil; otherwise it
// returns the parsed HCL file. Problems are file:line:col: message.
func readSpecFile(path string, v any) (*hcl.File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(src) > maxSpecFile {
		return nil, fmt.Errorf("%s: over the %d byte limit", path, maxSpecFile)
	}
	if t := strings.TrimSpace(string(src)); strings.HasPrefix(t, "{") {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, nil
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	return f, nil
}

// decodeMeta reads a spec's meta, as a meta = {...} attribute or meta {}
// blocks (the schema declares both).
func decodeMeta(c *hcl.BodyContent) (map[string]string, hcl.Diagnostics) {
	var meta map[string]string
	var diags hcl.Diagnostics
	if a := c.Attributes["meta"]; a != nil {
		diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &meta)...)
	}
	for _, b := range c.Blocks {
		if b.Type != "meta" {
			continue
		}
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for k, a := range attrs {
			var v string
			diags = append(diags, gohcl.DecodeExpression(a.Expr, nil, &v)...)
			if meta == nil {
				meta = map[string]string{}
			}
			meta[k] = v
		}
	}
	return meta, diags
}
