package jobspec

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// decoder turns HCL bodies into api values, collecting every diagnostic.
type decoder struct {
	src     []byte
	ctx     *hcl.EvalContext
	diags   *hcl.Diagnostics
	warns   *hcl.Diagnostics         // accepted-but-ignored items (unsupported.go)
	blocks  map[int]*hclsyntax.Block // syntax blocks by DefRange start byte, for config
	jobType string
	bodies  int // bodies decoded so far, bounded by maxBodies
}

// maxBodies bounds the blocks one job may expand to (dynamic blocks can
// multiply them), so a hostile file cannot make a parse run for long.
const maxBodies = 10000

// schema builds a body schema from a space-separated attribute list and
// block types; a block type written "name:label" takes one label.
func schema(attrs string, blocks ...string) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, a := range strings.Fields(attrs) {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: a})
	}
	for _, b := range blocks {
		t, label, ok := strings.Cut(b, ":")
		h := hcl.BlockHeaderSchema{Type: t}
		if ok {
			h.LabelNames = []string{label}
		}
		s.Blocks = append(s.Blocks, h)
	}
	return s
}

func (d *decoder) errorf(r hcl.Range, format string, a ...any) { errorf(d.diags, r, format, a...) }

// content decodes a body against a schema, reporting unknown items.
func (d *decoder) content(body hcl.Body, s *hcl.BodySchema) *hcl.BodyContent {
	d.bodies++
	if d.bodies > maxBodies {
		if d.bodies == maxBodies+1 {
			d.errorf(body.MissingItemRange(), "Job too large: more than %d blocks", maxBodies)
		}
		return &hcl.BodyContent{}
	}
	c, diags := body.Content(s)
	*d.diags = append(*d.diags, diags...)
	if c == nil {
		c = &hcl.BodyContent{}
	}
	d.dropAccepted(c, s)
	return c
}

// isRuntimeRoot reports whether a variable root is one of the names
// resolved on the client at run time: node, attr, meta, device, env,
// unique, secret (a task's secret block) and upper-case environment
// names such as NOMAD_TASK_DIR. Any other root that names no variable is
// kept literally too (unknownRoots), as Nomad does, but with a warning:
// it is more likely a typo.
func isRuntimeRoot(name string) bool {
	switch name {
	case "node", "attr", "meta", "device", "env", "unique", "secret":
		return true
	}
	if strings.HasPrefix(name, "NOMAD_") || strings.HasPrefix(name, "DROVER_") {
		return true
	}
	if name == "" || name[0] < 'A' || name[0] > 'Z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// definedIn reports whether ctx or a parent defines the variable name
// (var, local, a dynamic block's iterator).
func definedIn(ctx *hcl.EvalContext, name string) bool {
	for c := ctx; c != nil; c = c.Parent() {
		if _, ok := c.Variables[name]; ok {
			return true
		}
	}
	return false
}

// unknownRoots returns the references of expr whose root ctx does not
// define: Nomad keeps each as its own ${...} text for the client to
// interpolate (its parser's unknown-variable rule), and so does drover.
func unknownRoots(ctx *hcl.EvalContext, expr hcl.Expression) []hcl.Traversal {
	var out []hcl.Traversal
	for _, t := range expr.Variables() {
		if !definedIn(ctx, t.RootName()) {
			out = append(out, t)
		}
	}
	return out
}

// srcText returns the source of r, if it lies in src.
func srcText(src []byte, r hcl.Range) (string, bool) {
	if r.Start.Byte < 0 || r.End.Byte > len(src) || r.Start.Byte > r.End.Byte {
		return "", false
	}
	return string(src[r.Start.Byte:r.End.Byte]), true
}

// value evaluates expr. Strings that interpolate runtime variables keep
// those interpolations as literal ${...} text.
func (d *decoder) value(expr hcl.Expression) (cty.Value, bool) {
	// Fast paths for the common constant forms.
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return e.Val, true
	case *hclsyntax.TemplateExpr:
		if len(e.Parts) == 1 {
			if lit, ok := e.Parts[0].(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String {
				return lit.Val, true
			}
		}
	}
	ctx := d.ctx
	if refs := unknownRoots(ctx, expr); len(refs) > 0 {
		warnUnknown(d.warns, refs)
		ctx = runtimeCtx(ctx, d.src, refs)
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		if undeclared := d.undeclared(expr); len(undeclared) > 0 {
			diags = undeclared
		}
	}
	*d.diags = append(*d.diags, diags...)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	return v, true
}

// warnUnknown warns about each kept reference whose root is not a
// runtime name: Nomad keeps ${foo} as text too, but it is most often a
// misspelt variable or a shell ${x} that wants $${x}.
func warnUnknown(warns *hcl.Diagnostics, refs []hcl.Traversal) {
	for _, t := range refs {
		if isRuntimeRoot(t.RootName()) {
			continue
		}
		*warns = append(*warns, &hcl.Diagnostic{Severity: hcl.DiagWarning, Subject: t.SourceRange().Ptr(),
			Summary: fmt.Sprintf("Unknown name %q: kept as the literal text ${%s} for the client, as Nomad does (a variable is var.%s; $${ writes a literal ${)",
				t.RootName(), traversalText(t), t.RootName())})
	}
}

// undeclared explains references to variables or locals that do not
// exist better than HCL's "object does not have an attribute".
func (d *decoder) undeclared(expr hcl.Expression) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, t := range expr.Variables() {
		root := t.RootName()
		if (root != "var" && root != "local") || len(t) < 2 {
			continue
		}
		a, ok := t[1].(hcl.TraverseAttr)
		obj, known := d.ctx.Variables[root]
		if !ok || !known || !obj.Type().IsObjectType() || obj.Type().HasAttribute(a.Name) {
			continue
		}
		kind, hint := "variable", "declare it in a variable block"
		if root == "local" {
			kind, hint = "local", "define it in a locals block"
		}
		out = append(out, &hcl.Diagnostic{Severity: hcl.DiagError,
			Summary: fmt.Sprintf("Undeclared %s %q", kind, a.Name), Detail: hint, Subject: t.SourceRange().Ptr()})
	}
	return out
}

// runtimeCtx returns a child of ctx in which every reference of refs
// (node.unique.name, env["HOME"], NOMAD_TASK_DIR...) resolves to its own
// source text in src wrapped in ${...}, so that evaluation, including
// inside functions, conditionals and dynamic blocks, keeps it literally.
func runtimeCtx(ctx *hcl.EvalContext, src []byte, refs []hcl.Traversal) *hcl.EvalContext {
	roots := map[string]*rtNode{}
	for _, t := range refs {
		root := t.RootName()
		n := roots[root]
		if n == nil {
			n = &rtNode{}
			roots[root] = n
		}
		for _, step := range t[1:] {
			var key string
			switch st := step.(type) {
			case hcl.TraverseAttr:
				key = st.Name
			case hcl.TraverseIndex:
				k, err := convert.Convert(st.Key, cty.String)
				if err != nil || k.IsNull() || !k.IsKnown() {
					break
				}
				key = k.AsString()
			}
			if key == "" || n.leaf != "" {
				break
			}
			if n.kids == nil {
				n.kids = map[string]*rtNode{}
			}
			child := n.kids[key]
			if child == nil {
				child = &rtNode{}
				n.kids[key] = child
			}
			n = child
		}
		if len(n.kids) == 0 && n.leaf == "" {
			text, ok := srcText(src, t.SourceRange())
			if !ok {
				text = traversalText(t)
			}
			n.leaf = "${" + text + "}"
		}
	}
	child := ctx.NewChild()
	child.Variables = make(map[string]cty.Value, len(roots))
	for name, n := range roots {
		child.Variables[name] = n.value()
	}
	return child
}

// rtNode is one step of the runtime references seen in an expression.
type rtNode struct {
	leaf string
	kids map[string]*rtNode
}

func (n *rtNode) value() cty.Value {
	if len(n.kids) == 0 {
		return cty.StringVal(n.leaf)
	}
	m := make(map[string]cty.Value, len(n.kids))
	for k, c := range n.kids {
		m[k] = c.value()
	}
	return cty.ObjectVal(m)
}

// traversalText renders a traversal when its source is not at hand.
func traversalText(t hcl.Traversal) string {
	var b strings.Builder
	for _, step := range t {
		switch st := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(st.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + st.Name)
		case hcl.TraverseIndex:
			if st.Key.Type() == cty.String && st.Key.IsKnown() && !st.Key.IsNull() {
				fmt.Fprintf(&b, "[%q]", st.Key.AsString())
			}
		}
	}
	return b.String()
}

// typed evaluates an attribute and converts it to want.
func (d *decoder) typed(a *hcl.Attribute, want cty.Type) (cty.Value, bool) {
	v, ok := d.value(a.Expr)
	if !ok {
		return cty.NilVal, false
	}
	cv, err := convert.Convert(v, want)
	if err != nil {
		d.errorf(a.Expr.Range(), "Invalid value for %q: %s", a.Name, err)
		return cty.NilVal, false
	}
	if cv.IsNull() {
		return cty.NilVal, false
	}
	return cv, true
}

func (d *decoder) str(c *hcl.BodyContent, name string, dst *string) bool {
	a := c.Attributes[name]
	if a == nil {
		return false
	}
	v, ok := d.typed(a, cty.String)
	if ok {
		*dst = v.AsString()
	}
	return ok
}

// enum is str for an attribute with a fixed set of values: one outside
// allowed is an error "Invalid <what> "x": want a, b or c" at the value.
func (d *decoder) enum(c *hcl.BodyContent, name, what string, dst *string, allowed ...string) {
	if !d.str(c, name, dst) || slices.Contains(allowed, *dst) {
		return
	}
	want := strings.Join(allowed[:len(allowed)-1], ", ") + " or " + allowed[len(allowed)-1]
	d.errorf(c.Attributes[name].Expr.Range(), "Invalid %s %q: want %s", what, *dst, want)
}

func (d *decoder) boolean(c *hcl.BodyContent, name string, dst *bool) bool {
	a := c.Attributes[name]
	if a == nil {
		return false
	}
	v, ok := d.typed(a, cty.Bool)
	if ok {
		*dst = v.True()
	}
	return ok
}

// integer decodes a whole number within [lo, hi].
func (d *decoder) integer(c *hcl.BodyContent, name string, dst *int, lo, hi int64) bool {
	a := c.Attributes[name]
	if a == nil {
		return false
	}
	v, ok := d.typed(a, cty.Number)
	if !ok {
		return false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		d.errorf(a.Expr.Range(), "Invalid value for %q: a whole number is required", name)
		return false
	}
	n, acc := bf.Int64()
	if acc == big.Exact && n < lo && hi == anyInt {
		d.errorf(a.Expr.Range(), "Invalid value for %q: %d must be at least %d", name, n, lo)
		return false
	}
	if acc != big.Exact || n < lo || n > hi {
		d.errorf(a.Expr.Range(), "Invalid value for %q: %s must be within [%d, %d]", name, bf.Text('f', -1), lo, hi)
		return false
	}
	*dst = int(n)
	return true
}

const anyInt = math.MaxInt32

// number decodes a number (a fraction, a limit).
func (d *decoder) number(c *hcl.BodyContent, name string, dst *float64) bool {
	a := c.Attributes[name]
	if a == nil {
		return false
	}
	v, ok := d.typed(a, cty.Number)
	if !ok {
		return false
	}
	f, _ := v.AsBigFloat().Float64()
	*dst = f
	return true
}

func (d *decoder) dur(c *hcl.BodyContent, name string, dst *time.Duration) bool {
	a := c.Attributes[name]
	if a == nil {
		return false
	}
	v, ok := d.typed(a, cty.String)
	if !ok {
		return false
	}
	t, err := time.ParseDuration(v.AsString())
	if err != nil {
		d.errorf(a.Expr.Range(), "Invalid duration for %q: %q is not a duration such as \"30s\" or \"5m\"", name, v.AsString())
		return false
	}
	if t < 0 {
		d.errorf(a.Expr.Range(), "Invalid duration for %q: must not be negative", name)
		return false
	}
	*dst = t
	return true
}

func (d *decoder) strs(c *hcl.BodyContent, name string, dst *[]string) bool {
	a := c.Attributes[name]
	if a == nil {
		return false
	}
	v, ok := d.typed(a, cty.List(cty.String))
	if !ok {
		return false
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			d.errorf(a.Expr.Range(), "Invalid value for %q: null element", name)
			return false
		}
		out = append(out, e.AsString())
	}
	*dst = out
	return true
}

// kv decodes a block of arbitrary name = value pairs (meta, env, options)
// into strings.
func (d *decoder) kv(b *hcl.Block) map[string]string {
	attrs := d.attrs(b.Body)
	out := make(map[string]string, len(attrs))
	for name, a := range attrs {
		v, ok := d.typed(a, cty.String)
		if ok {
			out[name] = v.AsString()
		}
	}
	return out
}

// kvAttr merges the map attribute name = { k = "v" } (the attribute
// form of meta and env) into dst.
func (d *decoder) kvAttr(c *hcl.BodyContent, name string, dst map[string]string) map[string]string {
	a := c.Attributes[name]
	if a == nil {
		return dst
	}
	v, ok := d.typed(a, cty.Map(cty.String))
	if !ok {
		return dst
	}
	for k, e := range v.AsValueMap() {
		if e.IsNull() {
			continue
		}
		if dst == nil {
			dst = make(map[string]string, v.LengthInt())
		}
		dst[k] = e.AsString()
	}
	return dst
}

// mergeKV merges every block's pairs into dst.
func (d *decoder) mergeKV(dst map[string]string, blocks hcl.Blocks) map[string]string {
	for _, b := range blocks {
		for k, v := range d.kv(b) {
			if dst == nil {
				dst = map[string]string{}
			}
			dst[k] = v
		}
	}
	return dst
}

// attrs returns every attribute of a body of arbitrary names. The names
// come from JustAttributes; the attributes are then fetched through
// Content so that a body inside a dynamic block sees its iterator.
func (d *decoder) attrs(body hcl.Body) hcl.Attributes {
	raw, diags := body.JustAttributes()
	*d.diags = append(*d.diags, diags...)
	if len(raw) == 0 {
		return raw
	}
	s := &hcl.BodySchema{Attributes: make([]hcl.AttributeSchema, 0, len(raw))}
	for name := range raw {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: name})
	}
	c, diags := body.Content(s)
	if diags.HasErrors() || c == nil {
		return raw
	}
	return c.Attributes
}

// goValue converts a known cty value to plain Go values (string, bool,
// int64/float64, []any, map[string]any).
func goValue(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if n, acc := bf.Int64(); acc == big.Exact {
				return n
			}
		}
		f, _ := bf.Float64()
		return f
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, goValue(e))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = goValue(e)
		}
		return out
	}
	return fmt.Sprint(v.GoString())
}

// config decodes a driver config block without a schema: attributes keep
// their values, nested blocks become lists of maps under their type name
// (a labelled block nests one more map level under its label). The shape
// comes from the syntax tree; the values are read through the (possibly
// dynamic-expanded) body so that iterators stay in scope.
func (d *decoder) config(b *hcl.Block) map[string]any {
	sb := d.blocks[b.DefRange.Start.Byte]
	if sb == nil {
		d.errorf(b.DefRange, "Unsupported config block here")
		return nil
	}
	return d.configBody(b.Body, sb.Body)
}

func (d *decoder) configBody(body hcl.Body, syn *hclsyntax.Body) map[string]any {
	s := &hcl.BodySchema{Attributes: make([]hcl.AttributeSchema, 0, len(syn.Attributes))}
	for name := range syn.Attributes {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: name})
	}
	labels := map[string]int{}
	for _, blk := range syn.Blocks {
		if blk.Type == "dynamic" {
			d.errorf(blk.DefRange(), "Unsupported dynamic block inside config")
			continue
		}
		if syn.Attributes[blk.Type] != nil {
			d.errorf(blk.DefRange(), "Duplicate config key %q: defined as an attribute and a block", blk.Type)
			continue
		}
		if n, seen := labels[blk.Type]; seen {
			if n != len(blk.Labels) {
				d.errorf(blk.DefRange(), "Inconsistent %q blocks: each needs %d labels", blk.Type, n)
			}
			continue
		}
		labels[blk.Type] = len(blk.Labels)
		h := hcl.BlockHeaderSchema{Type: blk.Type}
		for i := range blk.Labels {
			h.LabelNames = append(h.LabelNames, fmt.Sprintf("label%d", i))
		}
		s.Blocks = append(s.Blocks, h)
	}
	c, diags := body.Content(s)
	if diags.HasErrors() {
		*d.diags = append(*d.diags, diags...)
		return nil
	}
	out := make(map[string]any, len(c.Attributes)+len(c.Blocks))
	for name, a := range c.Attributes {
		if v, ok := d.value(a.Expr); ok {
			out[name] = goValue(v)
		}
	}
	for _, blk := range c.Blocks {
		nested := d.blocks[blk.DefRange.Start.Byte]
		if nested == nil {
			d.errorf(blk.DefRange, "Unsupported config block here")
			continue
		}
		var item any = d.configBody(blk.Body, nested.Body)
		for i := len(blk.Labels) - 1; i >= 0; i-- {
			item = map[string]any{blk.Labels[i]: item}
		}
		list, _ := out[blk.Type].([]any)
		out[blk.Type] = append(list, item)
	}
	return out
}

// indexBlocks records every syntax block by its start byte.
func indexBlocks(body *hclsyntax.Body, idx map[int]*hclsyntax.Block) {
	for _, b := range body.Blocks {
		idx[b.DefRange().Start.Byte] = b
		indexBlocks(b.Body, idx)
	}
}
