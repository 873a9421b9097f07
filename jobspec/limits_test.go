package jobspec_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
)

// limitJob puts expr as a driver config attribute on line 6, column 12.
func limitJob(expr string) string {
	return "job \"x\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n      config {\n        args = " + expr + "\n      }\n    }\n  }\n}\n"
}

// deepNesting are hostile sources, each up to n levels deep in one way the
// HCL parser recurses on. Before the limits, the list alone overflowed the
// stack (fatal error, the agent died) and the others took seconds and GBs.
func deepNesting(n int) map[string]string {
	r := strings.Repeat
	blocks := "job \"x\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n      config {\n" + r("a {\n", n) + r("}\n", n) + "}\n}\n}\n}\n"
	return map[string]string{
		"list":              limitJob(r("[", n) + r("]", n)),
		"parentheses":       limitJob(r("(", n) + "1" + r(")", n)),
		"objects":           limitJob(r("{a=", n) + "1" + r("}", n)),
		"function calls":    limitJob(r("abs(", n) + "1" + r(")", n)),
		"template interps":  limitJob(r(`"${`, n) + "1" + r(`}"`, n)),
		"template ifs":      limitJob(`"` + r("%{if 1}", n/2) + r("%{endif}", n/2) + `"`),
		"heredoc interps":   limitJob("<<EOT\n" + r("${[", n) + r("]}", n) + "\nEOT"),
		"unary not":         limitJob(r("!", n) + "true"),
		"unary minus":       limitJob(r("- ", n) + "1"),
		"binary chain":      limitJob(r("1+", n) + "1"),
		"conditional chain": limitJob(r("1?1:", n) + "1"),
		"index chain":       limitJob("[1]" + r("[0]", n)),
		"blocks":            blocks,
		"flat list":         limitJob("[" + r("1,", n) + "1]"),
	}
}

func TestParseRefusesDeepNesting(t *testing.T) {
	want := map[string]string{
		"list": "Nesting too deep", "parentheses": "Nesting too deep", "objects": "Nesting too deep",
		"function calls": "Nesting too deep", "template interps": "Nesting too deep", "template ifs": "Nesting too deep",
		"heredoc interps": "Nesting too deep", "blocks": "Nesting too deep",
		"unary not": "Expression too complex", "unary minus": "Expression too complex", "binary chain": "Expression too complex",
		"conditional chain": "Expression too complex", "index chain": "Expression too complex",
		"flat list": "Job source too long",
	}
	for name, src := range deepNesting(100_000) {
		t.Run(name, func(t *testing.T) {
			if len(src) > jobspec.MaxSourceBytes {
				t.Fatalf("test source is %d bytes, over the size limit: it would not test the scan", len(src))
			}
			_, err := jobspec.Parse("deep.hcl", []byte(src), &jobspec.Options{Env: []string{}})
			var diags jobspec.Diagnostics
			if !errors.As(err, &diags) || !errors.Is(err, api.ErrInvalidJob) {
				t.Fatalf("Parse = %v (%T), want Diagnostics wrapping ErrInvalidJob", err, err)
			}
			if len(diags) != 1 || diags[0].File != "deep.hcl" || diags[0].Line < 6 || !strings.HasPrefix(diags[0].Message, want[name]) {
				t.Fatalf("Parse = %q, want one deep.hcl:L:C: %s... at or after line 6", err, want[name])
			}
		})
	}
}

func TestParseDeepNestingPosition(t *testing.T) {
	// The 65th [ is reported, at line 6, column 12+64.
	_, err := jobspec.Parse("deep.hcl", []byte(limitJob(strings.Repeat("[", 1000)+strings.Repeat("]", 1000))), &jobspec.Options{Env: []string{}})
	want := "deep.hcl:6:76: Nesting too deep: more than 64 nested brackets, braces, blocks, parentheses or template sequences."
	if err == nil || err.Error() != want {
		t.Fatalf("Parse = %v, want %s", err, want)
	}
}

// Nesting within the limits, and brackets and operators that are text
// (strings, heredocs, comments, escapes), parse as before.
func TestParseWithinLimits(t *testing.T) {
	r := strings.Repeat
	for name, expr := range map[string]string{
		"58 nested lists":           r("[", 58) + r("]", 58),
		"brackets in a string":      `["` + r("[{(", 5000) + `"]`,
		"escaped interps":           `["` + r("$${", 5000) + r("%%{", 5000) + `"]`,
		"escaped quote":             `["\"` + r("[", 100) + `"]`,
		"brackets in a heredoc":     "<<-EOT\n" + r("[{(\n", 5000) + "EOT\n",
		"brackets in a comment":     "[] # " + r("[", 5000) + "\n/* " + r("{", 5000) + " */",
		"long chain in many args":   "[" + r("1+1+1, ", 1000) + "1]",
		"operators in a heredoc":    "<<EOT\n" + r("! - + ? ", 5000) + "\nEOT\n",
		"interp in heredoc at 60":   "<<EOT\n${jsonencode(" + r("[", 55) + r("]", 55) + ")}\nEOT\n",
		"if directives within 64":   `"` + r("%{if true}", 50) + "x" + r("%{endif}", 50) + `"`,
		"sequential ifs":            `"` + r("%{if true}x%{endif}", 1000) + `"`,
		"sequential template seqs":  `"` + r("${1}", 1000) + `"`,
		"many blocks in sequence":   "[]\n" + r("      b {\n        x = [[1]]\n      }\n", 1000),
		"marker-like line in text":  "<<EOT\n  EOTX\n EOT $x\nEOT\n",
		"crlf heredoc":              "<<EOT\r\n" + r("[", 100) + "\r\nEOT\r\n",
		"unicode identifier nearby": `["é", "${"ü"}"]`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := jobspec.Parse("ok.hcl", []byte(limitJob(expr)), &jobspec.Options{Env: []string{}}); err != nil {
				t.Fatalf("Parse = %v, want success", err)
			}
		})
	}
}

func TestParseRefusesLargeSource(t *testing.T) {
	src := limitJob(`"` + strings.Repeat("x", jobspec.MaxSourceBytes) + `"`)
	want := "big.hcl:1:1: Job source too large: more than 1048576 bytes."
	_, err := jobspec.Parse("big.hcl", []byte(src), &jobspec.Options{Env: []string{}})
	if err == nil || err.Error() != want || !errors.Is(err, api.ErrInvalidJob) {
		t.Fatalf("Parse = %v, want %s", err, want)
	}
	path := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = jobspec.ParseFile(path, &jobspec.Options{Env: []string{}})
	if want := path + ":1:1: Job source too large: more than 1048576 bytes."; err == nil || err.Error() != want {
		t.Fatalf("ParseFile = %v, want %s", err, want)
	}
}

// Var files, variables text and -var values are HCL too.
func TestParseVarsRefuseDeepNesting(t *testing.T) {
	job := "variable \"v\" {\n  type = list(any)\n  default = []\n}\n" + limitJob("var.v")
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	dir := t.TempDir()
	vf := filepath.Join(dir, "deep.vars.hcl")
	if err := os.WriteFile(vf, []byte("v = "+deep+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		opts *jobspec.Options
		want string
	}{
		"var file": {&jobspec.Options{VarFiles: []string{vf}}, vf + ":1:69: Nesting too deep"},
		"var text": {&jobspec.Options{VarText: "v = " + deep}, "<variables>:1:69: Nesting too deep"},
		"-var":     {&jobspec.Options{Vars: map[string]string{"v": deep}}, `Invalid value for variable "v" from -var v: Nesting too deep`},
		"env":      {&jobspec.Options{Env: []string{"DROVER_VAR_v=" + deep}}, `Invalid value for variable "v" from environment variable DROVER_VAR_v: Nesting too deep`},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.opts.Env == nil {
				tc.opts.Env = []string{}
			}
			_, err := jobspec.Parse(filepath.Join(dir, "job.hcl"), []byte(job), tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want %s...", err, tc.want)
			}
		})
	}
}

// jsondecode takes text the scan cannot see into: it has its own depth
// limit (10,000 nested lists took 6 s and 1.6 GB before it).
func TestJSONDecodeDepth(t *testing.T) {
	deep := strings.Repeat("[", 9_999) + strings.Repeat("]", 9_999)
	_, err := jobspec.Parse("j.hcl", []byte(limitJob(`jsondecode("`+deep+`")`)), &jobspec.Options{Env: []string{}})
	if err == nil || !strings.Contains(err.Error(), "JSON nested more than 64 levels deep") {
		t.Fatalf("Parse = %v, want the JSON depth error", err)
	}
	job, err := jobspec.Parse("j.hcl", []byte(limitJob(`jsondecode("[[\"]]]\\\"\", {\"a\": [1]}]]")`)), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatalf("Parse of shallow jsondecode = %v", err)
	}
	if got := job.TaskGroups[0].Tasks[0].Config["args"]; !strings.Contains(fmt.Sprint(got), `]]]"`) {
		t.Errorf("args = %#v, want the decoded document", got)
	}
}

// Locals are evaluated once each, in dependency order: a chain of 12,000
// locals took 25 s before (the local object was rebuilt for every local
// on every pass), well within the token limit.
func TestLocalsChainIsLinear(t *testing.T) {
	const n = 15_000
	var b strings.Builder
	b.WriteString("locals {\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "  l%d = local.l%d\n", i, i+1)
	}
	fmt.Fprintf(&b, "  l%d = \"end\"\n}\n", n-1)
	b.WriteString(limitJob("[local.l0]"))
	start := time.Now()
	job, err := jobspec.Parse("chain.hcl", []byte(b.String()), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatalf("Parse = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a chain of %d locals took %v, want well under 10s", n, d)
	}
	if got := fmt.Sprint(job.TaskGroups[0].Tasks[0].Config["args"]); got != "[end]" {
		t.Errorf("args = %s, want [end]", got)
	}
}
