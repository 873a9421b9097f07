package jobspec_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
)

// budgetLocals (4 lines) puts a 100,000-byte string and a list of 1,000
// numbers in reach of the expression limitJob places at line 10, col 16.
const budgetLocals = "locals {\n  s = format(\"%0100000d\", 0)\n  l = range(1000)\n}\n"

// maxParseAlloc bounds what one refused parse may allocate in all: each
// case below asked for gigabytes (or for minutes) before the budget.
const maxParseAlloc = 256 << 20

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

const (
	tooManyBytes  = "Value too large: the job's functions and expressions built more than 16777216 bytes of strings (jobspec.MaxValueBytes)"
	tooManyValues = "Value too large: the job's functions and expressions built more than 262144 values (jobspec.MaxValues)"
)

// Values built by HCL functions and expressions are bounded per parse
// (MaxValueBytes, MaxValues): each case fails with a diagnostic at the
// call or expression that went over, having allocated little.
func TestParseRefusesValuesOverBudget(t *testing.T) {
	r := strings.Repeat
	for _, c := range []struct {
		name, expr, want string
	}{
		// The finding: 1,000 strings of 1 MB took 60 s and 2.6 GB.
		{"formatlist width", `formatlist("%01000000d", range(1000))`,
			"x.hcl:10:16: Value too large: formatlist would build at least 1000000000 bytes of strings, and a job's functions and expressions may build at most 16777216 in all (jobspec.MaxValueBytes)"},
		{"format width", `[format("%0999999999d", 1)]`,
			"x.hcl:10:17: Value too large: format would build at least 999999999 bytes of strings"},
		{"format precision", `[format("%.999999999f", 1)]`,
			"x.hcl:10:17: Value too large: format would build at least 999999999 bytes of strings"},
		{"format repeating an argument", `[format(join("", [for i in range(1000) : "%[1]s"]), local.s)]`,
			"x.hcl:10:17: Value too large: format would build at least 100000000 bytes of strings"},
		{"formatlist repeating a list", `formatlist("%s` + r("%[1]s", 9) + `", [for i in range(50) : local.s])`,
			"x.hcl:10:16: Value too large: formatlist would build at least 50000000 bytes of strings"},
		{"join separator", `[join(local.s, local.l)]`,
			"x.hcl:10:17: Value too large: join would build at least 99902890 bytes of strings"},
		{"replace every character", `[replace(local.s, "", local.s)]`,
			"x.hcl:10:17: Value too large: replace would build at least 10000200000 bytes of strings"},
		{"regex_replace every character", `[regex_replace(local.s, "", format("%01000d", 0))]`,
			"x.hcl:10:17: Value too large: regex_replace would build at least 100101000 bytes"},
		{"regex_replace references", `[regex_replace(local.s, "^(.*)$", join("", [for i in range(1000) : "$1"]))]`,
			"x.hcl:10:17: Value too large: regex_replace would build at least 100002000 bytes of strings"},
		{"regexall groups", `[regexall(join("", [for i in range(200) : "()"]), format("%050000d", 0))]`,
			"x.hcl:10:17: Value too large: regexall would build at least 10050202 values"},
		{"regex work", `[regex("(?:0?){1000}x", local.s)]`,
			"x.hcl:10:17: Regular expression too costly: matching a 2001-instruction pattern over 100000 bytes would take the job's functions past 67108864 steps (jobspec.maxSteps)"},
		{"regex program", `[regex(join("", [for i in range(70) : "0{1000}"]), "0")]`,
			"x.hcl:10:17: Regular expression too costly: the pattern compiles to about 70000 instructions, more than 65536 (jobspec.maxRegexProgram)"},
		{"regex work in a loop", `[for i in range(1000) : regex("[0-9]{100}", local.s)]`,
			"Regular expression too costly: matching a 100-instruction pattern over 100000 bytes would take the job's functions past 67108864 steps"},
		{"distinct", `[length(distinct(flatten([for a in range(120) : [for b in range(100) : a * 100 + b]])))]`,
			"x.hcl:10:24: Too much work: distinct of 12000 elements would take the job's functions past 67108864 steps (jobspec.maxSteps)"},
		{"indent", `[indent(1000000000, "a\nb")]`,
			"x.hcl:10:17: Value too large: indent would build at least 2000000003 bytes of strings"},
		{"setproduct", `setproduct(range(1000), range(1000), range(1000))`,
			"x.hcl:10:16: Value too large: setproduct would build at least 4000000000 values"},
		{"csvdecode columns", `csvdecode(join("\n", concat([join(",", local.l)], [for i in range(1000) : replace(format("%0999d", 0), "0", ",")])))`,
			"x.hcl:10:16: Value too large: csvdecode would build at least 1002001 values"},
		{"concat of one list many times", `concat(` + r("local.l, ", 5000) + `[])`, tooManyValues},
		{"tuple of one list many times", `[` + r("local.l, ", 5000) + `]`, tooManyValues},
		{"deep comparison", `[[` + r("local.l, ", 5000) + `] == []]`, tooManyValues},
		{"nested for", `[for a in local.l : [for b in local.l : a]]`, "x.hcl:10:36: " + tooManyValues},
		{"template for repeating a string", "<<EOT\n%{for i in local.l}${local.s}%{endfor}\nEOT", "x.hcl:11:22: " + tooManyBytes},
		{"for repeating a string", `[for i in local.l : "${local.s}."]`, "x.hcl:10:39: " + tooManyBytes},
		{"nested try", `[` + r("try(", 40) + "1" + r(")", 40) + `]`, tooManyValues},
		// try and can do not turn an excess into a fallback.
		{"can", `[can(formatlist("%01000000d", range(1000)))]`, "x.hcl:10:17: Value too large: formatlist would build at least 1000000000 bytes"},
		{"try", `[try(join(local.s, local.l), "small")]`, "x.hcl:10:17: Value too large: join would build at least 99902890 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := budgetLocals + limitJob(c.expr)
			if len(src) > jobspec.MaxSourceBytes {
				t.Fatalf("source is %d bytes, over the source limit: it would not test the budget", len(src))
			}
			var err error
			n := allocated(func() { _, err = jobspec.Parse("x.hcl", []byte(src), &jobspec.Options{Env: []string{}}) })
			var diags jobspec.Diagnostics
			if !errors.As(err, &diags) || !errors.Is(err, api.ErrInvalidJob) {
				t.Fatalf("Parse = %v (%T), want Diagnostics", err, err)
			}
			if len(diags) != 1 || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.hcl:1") {
				t.Fatalf("Parse = %q, want one x.hcl:L:C diagnostic containing %q", err, c.want)
			}
			if n > maxParseAlloc {
				t.Errorf("the refused parse allocated %d MiB, want at most %d", n>>20, maxParseAlloc>>20)
			}
		})
	}
}

// The budget is the parse's, not one expression's: locals that each
// build a few MB go over it together.
func TestValueBudgetIsPerParse(t *testing.T) {
	var b strings.Builder
	b.WriteString("locals {\n")
	for i := range 20 {
		b.WriteString("  a" + string(rune('a'+i)) + " = format(\"%01000000d\", 0)\n")
	}
	b.WriteString("}\n")
	_, err := jobspec.Parse("x.hcl", []byte(b.String()+limitJob("[]")), &jobspec.Options{Env: []string{}})
	if err == nil || !strings.Contains(err.Error(), "(jobspec.MaxValueBytes)") {
		t.Fatalf("Parse = %v, want the MaxValueBytes error", err)
	}
	// One of them is fine.
	if _, err := jobspec.Parse("x.hcl", []byte("locals {\n  a = format(\"%01000000d\", 0)\n}\n"+limitJob("[strlen(local.a)]")), &jobspec.Options{Env: []string{}}); err != nil {
		t.Fatalf("Parse of one 1 MB string = %v", err)
	}
}

// -var values are HCL expressions over literals, bounded as the job file.
func TestVarValueBudget(t *testing.T) {
	list := "[" + strings.Repeat("1,", 600) + "1]"
	job := "variable \"v\" {\n  type = list(any)\n}\n" + limitJob("var.v")
	_, err := jobspec.Parse("x.hcl", []byte(job), &jobspec.Options{Env: []string{},
		Vars: map[string]string{"v": "[for a in " + list + " : [for b in " + list + " : a]]"}})
	want := `Invalid value for variable "v" from -var v: ` + tooManyValues
	if err == nil || !strings.HasPrefix(err.Error(), want+"\n") {
		t.Fatalf("Parse = %v, want %s first", err, want)
	}
}

// Jobs that build a lot, but nothing like the budget, parse as before.
func TestParseWithinValueBudget(t *testing.T) {
	for name, expr := range map[string]string{
		"1,000 formatted numbers":     `formatlist("%05d", local.l)`,
		"a 100 KB string, 10 times":   `[for i in range(10) : local.s]`,
		"join and split":              `split(",", join(",", local.l))`,
		"regex_replace":               `[regex_replace(local.s, "0+", "x")]`,
		"regexall":                    `regexall("[0-9]{10}", local.s)`,
		"replace":                     `[replace(local.s, "0", "ab")]`,
		"setproduct":                  `[length(setproduct(range(100), range(100)))]`,
		"nested for, 10,000":          `flatten([for a in range(100) : [for b in range(100) : a * b]])`,
		"csvdecode":                   `[length(csvdecode("a,b\n1,2\n3,4"))]`,
		"template for":                "<<EOT\n%{for i in local.l}${i}\n%{endfor}\nEOT",
		"try with a fallback":         `[try(local.nope, "x")]`,
		"can of an error":             `[can(local.nope)]`,
		"indent":                      `[indent(4, "a\nb\nc")]`,
		"jsonencode of the locals":    `[jsonencode(local.l), jsonencode(local.s)]`,
		"equality of large values":    `[local.l == local.l, local.s != local.s]`,
		"conditional over large ones": `length(true ? local.l : [])`,
		"distinct of 1,000":           `distinct(concat(local.l, local.l))`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := jobspec.Parse("ok.hcl", []byte(budgetLocals+limitJob(expr)), &jobspec.Options{Env: []string{}}); err != nil {
				t.Fatalf("Parse = %v, want success", err)
			}
		})
	}
}
