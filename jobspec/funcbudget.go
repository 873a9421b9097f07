package jobspec

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/customdecode"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// bounded returns fns with every function charging the budget: the cost
// its preflight estimates from the arguments is charged (and an excess
// refused) before the function runs, the size of its result after it
// (less what was charged before). try and can are replaced by versions
// that do not swallow a budget error, and chargeFuncName, the function
// bound wraps expressions in, is added.
func (b *budget) bounded(fns map[string]function.Function) map[string]function.Function {
	out := make(map[string]function.Function, len(fns)+1)
	for name, f := range fns {
		if name != "try" && name != "can" {
			out[name] = b.wrap(name, f)
		}
	}
	out["try"], out["can"] = b.tryFunc(), b.canFunc()
	out[chargeFuncName] = b.chargeFunc()
	return b.register(out)
}

// wrapperSpec is the part of a wrapper's spec that does not depend on the
// parse. f.Call unmarks and re-marks; a wrapper that unmarked too would
// walk every argument once more.
func wrapperSpec(f function.Function) function.Spec {
	params, varParam := f.Params(), f.VarParam()
	for i := range params {
		params[i].AllowMarked = true
	}
	if varParam != nil {
		varParam.AllowMarked = true
	}
	return function.Spec{Description: f.Description(), Params: params, VarParam: varParam}
}

// stdSpecs are the wrapper specs of stdFuncs, made once: each parse only
// adds its closures.
var stdSpecs = sync.OnceValue(func() map[string]function.Spec {
	m := make(map[string]function.Spec, len(stdFuncs))
	for name, f := range stdFuncs {
		m[name] = wrapperSpec(f)
	}
	return m
})

func (b *budget) wrap(name string, f function.Function) function.Function {
	pre := preflights[name]
	spec, ok := stdSpecs()[name]
	if !ok || stdFuncs[name] != f {
		spec = wrapperSpec(f)
	}
	return function.New(&function.Spec{
		Description: spec.Description,
		Params:      spec.Params,
		VarParam:    spec.VarParam,
		Type: func(args []cty.Value) (cty.Type, error) {
			b.pre = cost{}
			if pre != nil {
				c, err := pre(b, args)
				if err != nil {
					return cty.NilType, err
				}
				if err := b.take(c, name, true); err != nil {
					return cty.NilType, err
				}
				b.pre = c
			} else if b.err != nil {
				return cty.NilType, b.err
			}
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			pre := b.pre
			b.pre = cost{}
			v, err := f.Call(args)
			if err != nil {
				return cty.NilVal, err
			}
			left := b.left()
			got := sizeOf(v, cost{satAdd(left.bytes, pre.bytes), satAdd(left.values, pre.values)})
			if err := b.take(cost{max(got.bytes-pre.bytes, 0), max(got.values-pre.values, 0)}, name, false); err != nil {
				return cty.NilVal, err
			}
			return v, nil
		},
	})
}

// tryFunc is HCL's try (ext/tryfunc) except that a budget error is the
// call's error, not an expression failing, and each call counts one value
// (nested tries evaluate their arguments twice per level).
func (b *budget) tryFunc() function.Function {
	return function.New(&function.Spec{
		Description: "Returns the value of the first of its arguments that evaluates without errors.",
		VarParam:    &function.Parameter{Name: "expressions", Type: customdecode.ExpressionClosureType},
		Type: func(args []cty.Value) (cty.Type, error) {
			v, err := b.try(args)
			if err != nil {
				return cty.NilType, err
			}
			return v.Type(), nil
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) { return b.try(args) },
	})
}

func (b *budget) try(args []cty.Value) (cty.Value, error) {
	if err := b.take(cost{values: 1}, "", false); err != nil {
		return cty.NilVal, err
	}
	if len(args) == 0 {
		return cty.NilVal, errors.New("at least one argument is required")
	}
	var diags hcl.Diagnostics
	for _, arg := range args {
		v, more := customdecode.ExpressionClosureFromVal(arg).Value()
		if b.err != nil {
			return cty.NilVal, b.err
		}
		diags = append(diags, more...)
		if more.HasErrors() {
			continue
		}
		if !v.IsWhollyKnown() {
			return cty.DynamicVal, nil // as tryfunc: unknowns may fail once known
		}
		return v, nil
	}
	var msg strings.Builder
	msg.WriteString("no expression succeeded:\n")
	for _, d := range diags {
		if d.Subject != nil {
			fmt.Fprintf(&msg, "- %s (at %s)\n  %s\n", d.Summary, d.Subject, d.Detail)
		} else {
			fmt.Fprintf(&msg, "- %s\n  %s\n", d.Summary, d.Detail)
		}
	}
	msg.WriteString("\nAt least one expression must produce a successful result")
	return cty.NilVal, errors.New(msg.String())
}

// canFunc is HCL's can with try's budget rules.
func (b *budget) canFunc() function.Function {
	return function.New(&function.Spec{
		Description: "Reports whether its argument evaluates without errors.",
		Params:      []function.Parameter{{Name: "expression", Type: customdecode.ExpressionClosureType}},
		Type:        function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if err := b.take(cost{values: 1}, "", false); err != nil {
				return cty.NilVal, err
			}
			v, diags := customdecode.ExpressionClosureFromVal(args[0]).Value()
			switch {
			case b.err != nil:
				return cty.NilVal, b.err
			case diags.HasErrors():
				return cty.False, nil
			case !v.IsWhollyKnown():
				return cty.UnknownVal(cty.Bool), nil
			}
			return cty.True, nil
		},
	})
}

// A preflight estimates, from a function's arguments and before it runs,
// a lower bound of what it builds, or refuses a call that would cost too
// much time. Functions whose result is at most a small multiple of their
// arguments (already charged, as every argument is) have none: their
// result is charged after.
type preflight func(b *budget, args []cty.Value) (cost, error)

var preflights = map[string]preflight{
	"format": formatCost, "formatlist": formatListCost, "join": joinCost,
	"replace": replaceCost, "regex_replace": regexReplaceCost, "indent": indentCost,
	"regex": regexCost, "regexall": regexAllCost, "setproduct": setProductCost, "csvdecode": csvCost,
	"distinct": distinctCost,
}

// knownString is v's string when v is a known, non-null string.
func knownString(v cty.Value) (string, bool) {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// knownLen is the length of a known, non-null collection or structure.
func knownLen(v cty.Value) (int64, bool) {
	v, _ = v.Unmark()
	t := v.Type()
	if !v.IsKnown() || v.IsNull() || !(t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType()) {
		return 0, false
	}
	return int64(v.LengthInt()), true
}

// fmtVerb is one verb of a format string, as cty's format parses it:
// % flags width .precision [argument] letter.
type fmtVerb struct {
	arg          int // 1-based
	width, prec  int64
	hasPrec      bool
	mode         byte
	textOfString bool // writes a string argument whole (%s, %q, %v without precision)
}

// fmtScan calls fn for each verb of f and returns the bytes of literal
// text; it stops at a malformed verb (format fails on it anyway).
func fmtScan(f string, fn func(fmtVerb)) (literal int64) {
	next := 1
	num := func(i int) (int64, int) {
		var n int64
		for ; i < len(f) && f[i] >= '0' && f[i] <= '9'; i++ {
			n = min(satAdd(satMul(n, 10), int64(f[i]-'0')), 1<<40)
		}
		return n, i
	}
	for i := 0; i < len(f); {
		if f[i] != '%' {
			literal++
			i++
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			literal++
			i += 2
			continue
		}
		v := fmtVerb{arg: next}
		j := i + 1
		for j < len(f) && strings.IndexByte("0#-+ ", f[j]) >= 0 {
			j++
		}
		v.width, j = num(j)
		if j < len(f) && f[j] == '.' {
			v.hasPrec = true
			v.prec, j = num(j + 1)
		}
		if j < len(f) && f[j] == '[' {
			var n int64
			n, j = num(j + 1)
			if j >= len(f) || f[j] != ']' {
				return literal
			}
			j++
			v.arg = int(min(n, 1<<20))
		}
		if j >= len(f) || !('a' <= f[j] && f[j] <= 'z' || 'A' <= f[j] && f[j] <= 'Z') {
			return literal
		}
		v.mode = f[j]
		v.textOfString = strings.IndexByte("sqv", v.mode) >= 0 && !v.hasPrec
		if strings.IndexByte("dfFeE", v.mode) < 0 {
			v.prec = 0 // precision is a minimum length for these only
		}
		fn(v)
		next = v.arg + 1
		i = j + 1
	}
	return literal
}

func formatCost(_ *budget, args []cty.Value) (cost, error) {
	f, ok := knownString(args[0])
	if !ok {
		return cost{}, nil
	}
	var c cost
	lit := fmtScan(f, func(v fmtVerb) {
		n := max(v.width, v.prec)
		if v.arg < len(args) {
			if s, ok := knownString(args[v.arg]); ok && v.textOfString {
				n = max(n, int64(len(s)))
			}
		}
		c.bytes = satAdd(c.bytes, n)
	})
	return cost{satAdd(c.bytes, lit), 1}, nil
}

// formatListCost is formatCost over formatlist's iterations: the list
// arguments' length, each verb writing at least its width (or minimum
// digits) each time and a list argument's strings whole.
func formatListCost(_ *budget, args []cty.Value) (cost, error) {
	f, ok := knownString(args[0])
	if !ok {
		return cost{}, nil
	}
	n := int64(-1)
	text := make([]int64, len(args)) // a list argument's strings, together
	iter := make([]bool, len(args))
	for i := 1; i < len(args); i++ {
		a, _ := args[i].Unmark()
		t := a.Type()
		if a.IsNull() || !a.IsKnown() || !(t.IsListType() || t.IsSetType() || t.IsTupleType()) {
			continue
		}
		iter[i] = true
		if n < 0 {
			n = int64(a.LengthInt())
		}
		for it := a.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if s, ok := knownString(e); ok {
				text[i] += int64(len(s))
			}
		}
	}
	n = max(n, 1)
	var c cost
	lit := fmtScan(f, func(v fmtVerb) {
		b := satMul(n, max(v.width, v.prec))
		if v.arg < len(args) && v.textOfString {
			if iter[v.arg] {
				b = max(b, text[v.arg])
			} else if s, ok := knownString(args[v.arg]); ok {
				b = max(b, satMul(n, int64(len(s))))
			}
		}
		c.bytes = satAdd(c.bytes, b)
	})
	return cost{satAdd(c.bytes, satMul(n, lit)), n + 1}, nil
}

// joinCost: the separator between every two elements, and the elements.
func joinCost(_ *budget, args []cty.Value) (cost, error) {
	sep, ok := knownString(args[0])
	if !ok {
		return cost{}, nil
	}
	var elems, bytes int64
	for _, l := range args[1:] {
		l, _ = l.Unmark()
		if !l.IsKnown() || l.IsNull() {
			continue
		}
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			elems++
			if s, ok := knownString(e); ok {
				bytes += int64(len(s))
			}
		}
	}
	if elems > 1 {
		bytes = satAdd(bytes, satMul(elems-1, int64(len(sep))))
	}
	return cost{bytes, 1}, nil
}

// replaceCost: replace(str, substr, replacement) writes replacement for
// every match ("" matches around every character).
func replaceCost(_ *budget, args []cty.Value) (cost, error) {
	str, ok1 := knownString(args[0])
	sub, ok2 := knownString(args[1])
	rep, ok3 := knownString(args[2])
	if !ok1 || !ok2 || !ok3 || len(rep) <= len(sub) {
		return cost{}, nil
	}
	n := int64(strings.Count(str, sub))
	return cost{satAdd(int64(len(str)), satMul(n, int64(len(rep)-len(sub)))), 1}, nil
}

// regexCost charges regex and regexall (pattern first) for matching.
func regexCost(b *budget, args []cty.Value) (cost, error) {
	return cost{}, b.regexWork(args[0], args[1])
}

// regexWork charges matching pattern over str to the parse's steps
// (maxSteps): Go's matcher takes time proportional to the string times
// the compiled program, which a short pattern can make large (70
// "0{1000}" are 70,000 instructions), and refuses programs over
// maxRegexProgram. The program is sized from the parse tree, as Go's
// parser sizes it, before anything is compiled.
func (b *budget) regexWork(pattern, str cty.Value) error {
	p, ok1 := knownString(pattern)
	s, ok2 := knownString(str)
	if !ok1 || !ok2 || b.err != nil {
		return b.err
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil // the function says so
	}
	size := progSize(re)
	work := satMul(size, int64(len(s))+1)
	switch {
	case size > maxRegexProgram:
		return b.fail("Regular expression too costly", fmt.Sprintf("the pattern compiles to about %d instructions, more than %d (jobspec.maxRegexProgram)", size, maxRegexProgram))
	case satAdd(b.steps, work) > maxSteps:
		return b.fail("Regular expression too costly", fmt.Sprintf("matching a %d-instruction pattern over %d bytes would take the job's functions past %d steps (jobspec.maxSteps)",
			size, len(s), maxSteps))
	}
	b.steps += work
	return nil
}

// distinctCost charges distinct, which compares each element with those
// it kept: n*(n-1)/2 steps for n distinct elements.
func distinctCost(b *budget, args []cty.Value) (cost, error) {
	n, ok := knownLen(args[0])
	if !ok {
		return cost{}, nil
	}
	work := satMul(n, max(n-1, 0)) / 2
	if satAdd(b.steps, work) > maxSteps {
		return cost{}, b.fail("Too much work", fmt.Sprintf("distinct of %d elements would take the job's functions past %d steps (jobspec.maxSteps)", n, maxSteps))
	}
	b.steps += work
	return cost{}, nil
}

// progSize is the size of re's compiled program, as regexp/syntax
// computes it to refuse programs over its own limit.
func progSize(re *syntax.Regexp) int64 {
	var n int64
	switch re.Op {
	case syntax.OpLiteral:
		n = int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		n = satAdd(2, progSize(re.Sub[0]))
	case syntax.OpPlus, syntax.OpQuest:
		n = satAdd(1, progSize(re.Sub[0]))
	case syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			n = satAdd(n, progSize(sub))
		}
		if re.Op == syntax.OpAlternate {
			n = satAdd(n, int64(len(re.Sub)))
		}
	case syntax.OpRepeat:
		sub := progSize(re.Sub[0])
		switch {
		case re.Max == -1 && re.Min == 0:
			n = satAdd(2, sub)
		case re.Max == -1:
			n = satAdd(1, satMul(int64(re.Min), sub))
		default:
			n = satAdd(satMul(int64(re.Max), sub), int64(re.Max-re.Min))
		}
	}
	return max(n, 1)
}

// matches counts the matches of pattern in str and their bytes, without
// keeping them (an empty match is one at every character); ok is false
// when either is unknown or the pattern is invalid (the function says
// so).
func matches(pattern, str cty.Value) (re *regexp.Regexp, n, matched int64, ok bool) {
	p, ok1 := knownString(pattern)
	s, ok2 := knownString(str)
	if !ok1 || !ok2 {
		return nil, 0, 0, false
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, 0, 0, false
	}
	re.ReplaceAllStringFunc(s, func(m string) string {
		n++
		matched += int64(len(m))
		return ""
	})
	return re, n, matched, true
}

// regexAllCost: regexall(pattern, str) makes a value per match and
// capture group.
func regexAllCost(b *budget, args []cty.Value) (cost, error) {
	if err := b.regexWork(args[0], args[1]); err != nil {
		return cost{}, err
	}
	re, n, matched, ok := matches(args[0], args[1])
	if !ok {
		return cost{}, nil
	}
	return cost{matched, satAdd(satMul(n, int64(re.NumSubexp())+1), 1)}, nil
}

// regexReplaceCost: regex_replace(str, pattern, replacement) writes
// replacement for every match, each $ reference in it at most the whole
// match.
func regexReplaceCost(b *budget, args []cty.Value) (cost, error) {
	if err := b.regexWork(args[1], args[0]); err != nil {
		return cost{}, err
	}
	str, _ := knownString(args[0])
	rep, ok := knownString(args[2])
	if !ok || rep == "" {
		return cost{}, nil
	}
	_, n, matched, ok := matches(args[1], args[0])
	if !ok {
		return cost{}, nil
	}
	refs := int64(strings.Count(rep, "$"))
	out := satAdd(int64(len(str))-matched, satMul(n, int64(len(rep))))
	return cost{satAdd(out, satMul(refs, matched)), 1}, nil
}

// csvCost: csvdecode(str) makes an object per row with an attribute per
// column (a 10,000-column header over 1,000 empty rows is 10 million
// values from 10 MB).
func csvCost(_ *budget, args []cty.Value) (cost, error) {
	s, ok := knownString(args[0])
	if !ok {
		return cost{}, nil
	}
	header, _, _ := strings.Cut(s, "\n")
	cols := int64(strings.Count(header, ",")) + 1
	rows := int64(strings.Count(s, "\n")) + 1
	return cost{0, satMul(rows, cols+1)}, nil
}

// indentCost: indent(spaces, str) makes a pad of spaces and writes it
// after every newline.
func indentCost(_ *budget, args []cty.Value) (cost, error) {
	str, ok := knownString(args[1])
	n, _ := args[0].Unmark()
	if !ok || !n.IsKnown() || n.IsNull() {
		return cost{}, nil
	}
	spaces, _ := n.AsBigFloat().Int64() // saturates; the function refuses fractions and negatives
	spaces = max(spaces, 0)
	lines := int64(strings.Count(str, "\n")) + 1
	return cost{satAdd(int64(len(str)), satMul(spaces, lines)), 1}, nil
}

// setProductCost: one element per combination, each holding one value
// of every argument.
func setProductCost(_ *budget, args []cty.Value) (cost, error) {
	combos := int64(1)
	for _, a := range args {
		n, ok := knownLen(a)
		if !ok {
			return cost{}, nil
		}
		combos = satMul(combos, n)
	}
	return cost{0, satMul(combos, int64(len(args))+1)}, nil
}
