package jobspec

import (
	"errors"
	"fmt"
	"math"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// budgetError is every budget error, so that the diagnostics of calls
// that failed on the budget are found by type, not text. summary heads
// the diagnostic.
type budgetError struct{ summary, msg string }

func (e *budgetError) Error() string { return e.msg }

// budget is what one parse may still build: bytes of strings and values
// (collection elements and scalars), charged by the function wrappers
// (funcbudget.go) and by the expressions bound rewrites. The first excess is
// kept: every later charge fails with it, so try() and can() cannot turn
// an excess into success. A parse evaluates on one goroutine, so budget
// needs no lock.
type budget struct {
	bytes, values       int64 // charged so far
	maxBytes, maxValues int64
	steps               int64 // work of regular expressions and distinct so far (maxSteps)
	err                 error
	// tables are the function tables of the parse's eval contexts. The
	// first excess empties them, so that every later call fails before
	// evaluating its arguments: the rest of the parse costs next to
	// nothing (HCL evaluates on after errors).
	tables []map[string]function.Function
	// pre is the cost a function wrapper charged before a call (its
	// Type step), taken back after the call from what the call built.
	// No expression is evaluated between the two steps of one call.
	pre cost
}

// cost is an amount of building: bytes of strings and values.
type cost struct{ bytes, values int64 }

func newBudget() *budget { return &budget{maxBytes: MaxValueBytes, maxValues: MaxValues} }

// register makes fns a table the first excess empties.
func (b *budget) register(fns map[string]function.Function) map[string]function.Function {
	b.tables = append(b.tables, fns)
	return fns
}

// libraryFunc reports whether name is one of the functions a parse's
// tables hold.
func libraryFunc(name string) bool {
	_, std := stdFuncs[name]
	return std || name == "file" || name == "fileexists" || name == chargeFuncName
}

// left is what may still be built; a size walk stops just past it.
func (b *budget) left() cost {
	return cost{max(b.maxBytes-b.bytes, 0), max(b.maxValues-b.values, 0)}
}

// take charges c for what (a function name, or "" for expressions);
// pre says c is an estimate made before building anything.
func (b *budget) take(c cost, what string, pre bool) error {
	if b.err != nil {
		return b.err
	}
	overBytes := satAdd(b.bytes, c.bytes) > b.maxBytes
	overValues := satAdd(b.values, c.values) > b.maxValues
	b.bytes, b.values = satAdd(b.bytes, c.bytes), satAdd(b.values, c.values)
	if !overBytes && !overValues {
		return nil
	}
	unit, limit, name, n := "bytes of strings", b.maxBytes, "MaxValueBytes", c.bytes
	if !overBytes {
		unit, limit, name, n = "values", b.maxValues, "MaxValues", c.values
	}
	if pre {
		return b.fail("Value too large", fmt.Sprintf("%s would build at least %d %s, and a job's functions and expressions may build at most %d in all (jobspec.%s)",
			what, n, unit, limit, name))
	}
	return b.fail("Value too large", fmt.Sprintf("the job's functions and expressions built more than %d %s (jobspec.%s)", limit, unit, name))
}

// fail records the first excess and empties the function tables.
func (b *budget) fail(summary, msg string) error {
	for _, t := range b.tables {
		clear(t)
	}
	b.err = &budgetError{summary, msg}
	return b.err
}

// charge charges the size of a built value.
func (b *budget) charge(v cty.Value) error {
	if b.err != nil {
		return b.err
	}
	return b.take(sizeOf(v, b.left()), "", false)
}

// sizeOf is v's size: string bytes (map keys and attribute names
// included) and values (every element and scalar, v itself included),
// counted until either passes limit. Values shared within v count each
// time they appear, as they would once copied out of it (goValue, JSON).
func sizeOf(v cty.Value, limit cost) cost {
	s := sizer{limit: limit}
	s.walk(v)
	return s.cost
}

type sizer struct {
	cost
	limit cost
}

func (s *sizer) over() bool { return s.bytes > s.limit.bytes || s.values > s.limit.values }

func (s *sizer) walk(v cty.Value) {
	if s.over() {
		return
	}
	v, _ = v.Unmark()
	s.values++
	if !v.IsKnown() || v.IsNull() {
		return
	}
	t := v.Type()
	switch {
	case t == cty.String:
		s.bytes += int64(len(v.AsString()))
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		keyed := t.IsMapType() || t.IsObjectType()
		for it := v.ElementIterator(); it.Next() && !s.over(); {
			k, e := it.Element()
			if keyed {
				s.bytes += int64(len(k.AsString()))
			}
			s.walk(e)
		}
	}
}

// chargeFuncName names the function bound wraps expressions in; it is no
// HCL identifier, so a job file cannot call it.
const chargeFuncName = "jobspec value"

// chargeFunc passes its argument through, charging its size. (cty walks
// the argument for marks before Impl runs: as much work as was charged
// before, and none after an excess, which removes the function.)
func (b *budget) chargeFunc() function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType,
			AllowNull: true, AllowUnknown: true, AllowDynamicType: true, AllowMarked: true}},
		Type: func(args []cty.Value) (cty.Type, error) { return args[0].Type(), nil },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if err := b.charge(args[0]); err != nil {
				return cty.NilVal, err
			}
			return args[0], nil
		},
	})
}

// bound rewrites n in place so that evaluating it charges the budget for
// the values HCL builds without a function: each for-expression iteration
// (its key, value and condition), each non-literal part of a template,
// element of a tuple or object constructor, splat item, operand of == and
// != (deep comparisons) and result of a conditional (type unification
// converts), and each argument of a function call. Each such expression
// is wrapped in a call of chargeFuncName, a real syntax node, so
// Variables() and source ranges are unchanged. As every value is charged
// where it is built, a value's size (shared parts counted each time) was
// charged once before it can be walked or copied. Literals are left
// alone: the source limits bound them. Expressions that HCL reads as
// syntax, not values (a variable's type), must not be rewritten.
func bound(n hclsyntax.Node) {
	hclsyntax.Walk(n, bounder{})
}

type bounder struct{}

func (bounder) Enter(hclsyntax.Node) hcl.Diagnostics { return nil }

// Exit rewrites after the children were walked, so wrappers are never
// walked themselves.
func (bounder) Exit(n hclsyntax.Node) hcl.Diagnostics {
	switch e := n.(type) {
	case *hclsyntax.ForExpr:
		e.ValExpr = charged(e.ValExpr) // even a literal: it counts the iteration
		if e.KeyExpr != nil {
			e.KeyExpr = charged(e.KeyExpr)
		}
		if e.CondExpr != nil {
			e.CondExpr = charged(e.CondExpr)
		}
	case *hclsyntax.TemplateExpr:
		for i, p := range e.Parts {
			e.Parts[i] = chargedUnlessLiteral(p)
		}
	case *hclsyntax.TupleConsExpr:
		for i, x := range e.Exprs {
			e.Exprs[i] = chargedUnlessLiteral(x)
		}
	case *hclsyntax.ObjectConsExpr:
		for i := range e.Items {
			e.Items[i].ValueExpr = chargedUnlessLiteral(e.Items[i].ValueExpr)
		}
	case *hclsyntax.SplatExpr:
		e.Each = charged(e.Each)
	case *hclsyntax.BinaryOpExpr:
		if e.Op == hclsyntax.OpEqual || e.Op == hclsyntax.OpNotEqual {
			e.LHS, e.RHS = chargedUnlessLiteral(e.LHS), chargedUnlessLiteral(e.RHS)
		}
	case *hclsyntax.ConditionalExpr:
		e.TrueResult, e.FalseResult = chargedUnlessLiteral(e.TrueResult), chargedUnlessLiteral(e.FalseResult)
	case *hclsyntax.FunctionCallExpr:
		// cty walks every argument deeply before a function runs (for
		// marks): f(l, l, l, ...) costs the arguments' whole size.
		for i, a := range e.Args {
			e.Args[i] = chargedUnlessLiteral(a)
		}
	}
	return nil
}

func chargedUnlessLiteral(e hclsyntax.Expression) hclsyntax.Expression {
	switch x := e.(type) {
	case *hclsyntax.LiteralValueExpr:
		return e
	case *hclsyntax.TemplateExpr:
		if x.IsStringLiteral() {
			return e
		}
	}
	return charged(e)
}

// boundJobFile applies bound to a job file, except to the type of each
// variable block (typeexpr reads it as syntax).
func boundJobFile(body *hclsyntax.Body) {
	for _, a := range body.Attributes {
		bound(a)
	}
	for _, blk := range body.Blocks {
		if blk.Type != "variable" {
			bound(blk)
			continue
		}
		for name, a := range blk.Body.Attributes {
			if name != "type" {
				bound(a)
			}
		}
		for _, nested := range blk.Body.Blocks {
			bound(nested)
		}
	}
}

// charged wraps e in a call of chargeFuncName; an error of the call is
// reported at the start of e.
func charged(e hclsyntax.Expression) hclsyntax.Expression {
	r := e.Range()
	start := hcl.Range{Filename: r.Filename, Start: r.Start, End: r.Start}
	end := hcl.Range{Filename: r.Filename, Start: r.End, End: r.End}
	return &hclsyntax.FunctionCallExpr{Name: chargeFuncName, Args: []hclsyntax.Expression{e},
		NameRange: start, OpenParenRange: start, CloseParenRange: end}
}

// tidy rewrites the diagnostic of the first budget error to say so
// plainly ("Value too large: ...") and drops the others, and the calls of
// functions the excess removed: once the budget is spent, every later
// call fails.
func (b *budget) tidy(diags hcl.Diagnostics) hcl.Diagnostics {
	if b.err == nil {
		return diags
	}
	out := diags[:0]
	seen := false
	for _, d := range diags {
		if u, ok := hcl.DiagnosticExtra[hclsyntax.FunctionCallUnknownDiagExtra](d); ok && libraryFunc(u.CalledFunctionName()) {
			continue
		}
		tl := budgetErrorOf(d)
		if tl == nil {
			out = append(out, d)
			continue
		}
		if seen {
			continue
		}
		seen = true
		c := *d
		c.Summary, c.Detail = tl.summary, tl.msg
		out = append(out, &c)
	}
	return out
}

// budgetErrorOf is the budget error a function call diagnostic reports,
// or nil.
func budgetErrorOf(d *hcl.Diagnostic) *budgetError {
	var e *budgetError
	extra, ok := hcl.DiagnosticExtra[hclsyntax.FunctionCallDiagExtra](d)
	if !ok || !errors.As(extra.FunctionCallError(), &e) {
		return nil
	}
	return e
}

// satAdd and satMul saturate at math.MaxInt64 (operands are never
// negative).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}
