package jobspec

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
)

// Environment prefixes that set variables.
const (
	EnvVarPrefix      = "DROVER_VAR_"
	NomadEnvVarPrefix = "NOMAD_VAR_"
)

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}, {Name: "sensitive"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

type variable struct {
	name        string
	typ         cty.Type
	val         cty.Value
	set         bool
	rng         hcl.Range
	validations []*hcl.Block
}

// evalContext evaluates variables and locals and returns the context job
// expressions are evaluated in.
func (p *parser) evalContext(varBlocks, localBlocks hcl.Blocks) *hcl.EvalContext {
	funcs := p.functions()
	base := &hcl.EvalContext{Functions: funcs}
	vars := make(map[string]*variable, len(varBlocks))
	for _, b := range varBlocks {
		if b.Type == "variables" {
			p.variablesBlock(b, base, vars)
			continue
		}
		name := b.Labels[0]
		if prev, dup := vars[name]; dup {
			errorf(&p.diags, b.LabelRanges[0], "Duplicate variable %q: already declared at %s", name, prev.rng)
			continue
		}
		if !hclsyntax.ValidIdentifier(name) {
			errorf(&p.diags, b.LabelRanges[0], "Invalid variable name %q: must be a valid identifier", name)
			continue
		}
		v := &variable{name: name, typ: cty.DynamicPseudoType, rng: b.DefRange}
		vars[name] = v
		c, diags := b.Body.Content(variableSchema)
		p.diags = append(p.diags, diags...)
		if a := c.Attributes["type"]; a != nil {
			t, diags := typeexpr.TypeConstraint(a.Expr)
			p.diags = append(p.diags, diags...)
			if !diags.HasErrors() {
				v.typ = t
			}
		}
		if a := c.Attributes["default"]; a != nil {
			val, diags := a.Expr.Value(base)
			p.diags = append(p.diags, diags...)
			if !diags.HasErrors() {
				p.assign(v, val, a.Expr.Range())
			}
		}
		for _, k := range []string{"description", "sensitive"} {
			if a := c.Attributes[k]; a != nil {
				_, diags := a.Expr.Value(base)
				p.diags = append(p.diags, diags...)
			}
		}
		v.validations = c.Blocks
	}
	p.applyInputs(vars, base)

	varVals := make(map[string]cty.Value, len(vars))
	for name, v := range vars {
		if !v.set {
			errorf(&p.diags, v.rng, "Unset variable %q: give it a value with -var, -var-file, %s%s or a default", name, EnvVarPrefix, name)
			v.val = cty.UnknownVal(v.typ)
		}
		varVals[name] = v.val
	}
	ctx := &hcl.EvalContext{Functions: funcs, Variables: map[string]cty.Value{"var": cty.ObjectVal(varVals)}}
	for _, name := range sortedKeys(vars) {
		v := vars[name]
		if !v.set {
			continue
		}
		for _, vb := range v.validations {
			p.checkValidation(ctx, v, vb)
		}
	}
	ctx.Variables["local"] = p.locals(ctx, localBlocks)
	return ctx
}

// variablesBlock declares each name = default of a variables block (the
// short form Nomad accepts beside variable blocks): a variable of any
// type with that default.
func (p *parser) variablesBlock(b *hcl.Block, base *hcl.EvalContext, vars map[string]*variable) {
	attrs, diags := b.Body.JustAttributes()
	p.diags = append(p.diags, diags...)
	for _, name := range sortedKeys(attrs) {
		a := attrs[name]
		if prev, dup := vars[name]; dup {
			errorf(&p.diags, a.NameRange, "Duplicate variable %q: already declared at %s", name, prev.rng)
			continue
		}
		v := &variable{name: name, typ: cty.DynamicPseudoType, rng: a.NameRange}
		vars[name] = v
		val, diags := a.Expr.Value(base)
		p.diags = append(p.diags, diags...)
		if !diags.HasErrors() {
			p.assign(v, val, a.Expr.Range())
		}
	}
}

func (p *parser) checkValidation(ctx *hcl.EvalContext, v *variable, b *hcl.Block) {
	c, diags := b.Body.Content(validationSchema)
	p.diags = append(p.diags, diags...)
	if diags.HasErrors() {
		return
	}
	cond, diags := c.Attributes["condition"].Expr.Value(ctx)
	p.diags = append(p.diags, diags...)
	msg, mdiags := c.Attributes["error_message"].Expr.Value(ctx)
	p.diags = append(p.diags, mdiags...)
	if diags.HasErrors() || mdiags.HasErrors() {
		return
	}
	cond, err := convert.Convert(cond, cty.Bool)
	if err != nil || cond.IsNull() {
		errorf(&p.diags, c.Attributes["condition"].Expr.Range(), "Invalid validation condition: must be a bool")
		return
	}
	if !cond.IsKnown() || cond.True() {
		return
	}
	text := "invalid value"
	if msg.Type() == cty.String && msg.IsKnown() && !msg.IsNull() {
		text = msg.AsString()
	}
	errorf(&p.diags, c.Attributes["condition"].Expr.Range(), "Invalid value for variable %q: %s", v.name, text)
}

// assign converts val to v's type and records it.
func (p *parser) assign(v *variable, val cty.Value, rng hcl.Range) {
	cv, err := convert.Convert(val, v.typ)
	if err != nil {
		errorf(&p.diags, rng, "Invalid value for variable %q: %s", v.name, err)
		return
	}
	v.val, v.set = cv, true
}

// applyInputs applies, in increasing precedence, the environment, the var
// files and the -var flags.
func (p *parser) applyInputs(vars map[string]*variable, base *hcl.EvalContext) {
	env := p.opts.Env
	if env == nil {
		env = os.Environ()
	}
	for _, prefix := range []string{NomadEnvVarPrefix, EnvVarPrefix} {
		for _, kv := range env {
			k, val, ok := strings.Cut(kv, "=")
			if !ok || !strings.HasPrefix(k, prefix) {
				continue
			}
			if v := vars[strings.TrimPrefix(k, prefix)]; v != nil {
				p.assignString(v, val, "environment variable "+k)
			}
		}
	}
	for _, path := range p.opts.VarFiles {
		src, d, err := readSource(path)
		if err != nil {
			p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Cannot read variable file: %s", err)})
			continue
		}
		if d != nil {
			p.diags = append(p.diags, d)
			continue
		}
		p.applyVarFile(vars, base, path, src)
	}
	if p.opts.VarText != "" {
		p.applyVarFile(vars, base, "<variables>", []byte(p.opts.VarText))
	}
	for _, name := range sortedKeys(p.opts.Vars) {
		v := vars[name]
		if v == nil {
			p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("Undefined -var variable %q: it is not declared in the job file", name)})
			continue
		}
		p.assignString(v, p.opts.Vars[name], "-var "+name)
	}
}

// applyVarFile applies name = value lines from a var file.
func (p *parser) applyVarFile(vars map[string]*variable, base *hcl.EvalContext, name string, src []byte) {
	if d := checkSource(name, src); d != nil {
		p.diags = append(p.diags, d)
		return
	}
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	p.diags = append(p.diags, diags...)
	if diags.HasErrors() {
		return
	}
	bound(f.Body.(*hclsyntax.Body))
	attrs, diags := f.Body.JustAttributes()
	p.diags = append(p.diags, diags...)
	for _, name := range sortedKeys(attrs) {
		a := attrs[name]
		v := vars[name]
		if v == nil {
			errorf(&p.diags, a.NameRange, "Undefined variable %q: it is not declared in the job file", name)
			continue
		}
		val, diags := a.Expr.Value(base)
		p.diags = append(p.diags, diags...)
		if !diags.HasErrors() {
			p.assign(v, val, a.Expr.Range())
		}
	}
}

// assignString sets a variable from text: verbatim for string (and any)
// types, as an HCL expression otherwise.
func (p *parser) assignString(v *variable, s, origin string) {
	if v.typ == cty.String || v.typ == cty.DynamicPseudoType {
		v.val, v.set = cty.StringVal(s), true
		return
	}
	if d := checkSource(origin, []byte(s)); d != nil {
		p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError,
			Summary: fmt.Sprintf("Invalid value for variable %q from %s: %s: %s", v.name, origin, d.Summary, d.Detail)})
		return
	}
	expr, diags := hclsyntax.ParseExpression([]byte(s), origin, hcl.InitialPos)
	var val cty.Value
	if !diags.HasErrors() {
		// Only literals are allowed, but for expressions over them can
		// still build much: bound them as the job file.
		bound(expr)
		ctx := &hcl.EvalContext{Functions: p.budget.register(map[string]function.Function{chargeFuncName: p.budget.chargeFunc()})}
		val, diags = expr.Value(ctx)
	}
	if diags = p.budget.tidy(diags); diags.HasErrors() {
		msg := diags[0].Summary
		if e := budgetErrorOf(diags[0]); e != nil {
			msg += ": " + e.msg
		}
		p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError,
			Summary: fmt.Sprintf("Invalid value for variable %q from %s: %s", v.name, origin, msg)})
		return
	}
	cv, err := convert.Convert(val, v.typ)
	if err != nil {
		p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError,
			Summary: fmt.Sprintf("Invalid value for variable %q from %s: %s", v.name, origin, err)})
		return
	}
	v.val, v.set = cv, true
}

// locals evaluates every locals block in dependency order.
func (p *parser) locals(ctx *hcl.EvalContext, blocks hcl.Blocks) cty.Value {
	pending := map[string]*hcl.Attribute{}
	for _, b := range blocks {
		attrs, diags := b.Body.JustAttributes()
		p.diags = append(p.diags, diags...)
		for name, a := range attrs {
			if prev, dup := pending[name]; dup {
				errorf(&p.diags, a.NameRange, "Duplicate local %q: already defined at %s", name, prev.NameRange)
				continue
			}
			pending[name] = a
		}
	}
	// Kahn's order: each local is evaluated once, after the locals it
	// references, with only those in scope (building the whole local
	// object per local, pass after pass, was quadratic: a chain of
	// 12,000 locals took 25 s).
	done := make(map[string]cty.Value, len(pending))
	waits := make(map[string]int, len(pending))
	dependents := make(map[string][]string)
	for _, name := range sortedKeys(pending) {
		for dep := range localRefs(pending[name].Expr) {
			if _, ok := pending[dep]; ok {
				waits[name]++
				dependents[dep] = append(dependents[dep], name)
			}
		}
	}
	var ready []string
	for _, name := range sortedKeys(pending) {
		if waits[name] == 0 {
			ready = append(ready, name)
		}
	}
	for len(ready) > 0 {
		name := ready[0]
		ready = ready[1:]
		a := pending[name]
		ctx.Variables["local"] = localScope(a.Expr, done)
		lctx := ctx
		if refs := unknownRoots(ctx, a.Expr); len(refs) > 0 {
			warnUnknown(&p.warns, refs)
			lctx = runtimeCtx(ctx, p.src, refs)
		}
		val, diags := a.Expr.Value(lctx)
		p.diags = append(p.diags, diags...)
		if diags.HasErrors() {
			val = cty.DynamicVal
		}
		done[name] = val
		delete(pending, name)
		for _, d := range dependents[name] {
			if waits[d]--; waits[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	for _, name := range sortedKeys(pending) {
		errorf(&p.diags, pending[name].NameRange, "Cyclic local %q: it depends on itself", name)
		done[name] = cty.DynamicVal
	}
	return cty.ObjectVal(done)
}

// localRefs is the set of X that expr references as local.X.
func localRefs(expr hcl.Expression) map[string]bool {
	refs := map[string]bool{}
	for _, t := range expr.Variables() {
		if t.RootName() != "local" || len(t) < 2 {
			continue
		}
		if a, ok := t[1].(hcl.TraverseAttr); ok {
			refs[a.Name] = true
		}
	}
	return refs
}

// localScope is the local object expr is evaluated with: the evaluated
// locals it references, or every evaluated local where it uses local
// whole or names one that does not exist (so errors suggest names as
// before).
func localScope(expr hcl.Expression, done map[string]cty.Value) cty.Value {
	scope := map[string]cty.Value{}
	for _, t := range expr.Variables() {
		if t.RootName() != "local" {
			continue
		}
		a, ok := hcl.TraverseAttr{}, len(t) >= 2
		if ok {
			a, ok = t[1].(hcl.TraverseAttr)
		}
		v, found := done[a.Name]
		if !ok || !found {
			return cty.ObjectVal(done)
		}
		scope[a.Name] = v
	}
	return cty.ObjectVal(scope)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
