package jobspec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/jobspec"
)

// FuzzParse checks that no input makes the parser panic or hang, and that
// every failure is a Diagnostics error.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.hcl")
	examples, _ := filepath.Glob("../examples/*.hcl")
	for _, p := range append(files, examples...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`job "x" { group "g" { task "t" { driver = "exec" } } }`))
	// Deep nesting: before the limits, 100,000 levels overflowed the
	// parser's stack (a fatal error no recover catches).
	for _, n := range []int{jobspec.MaxNestingDepth, jobspec.MaxNestingDepth + 1, 100_000} {
		for _, src := range deepNesting(n) {
			f.Add([]byte(src))
		}
	}
	// Values over the budget: before it, the first took 60 s and 2.6 GB.
	for _, expr := range []string{
		`formatlist("%01000000d", range(1000))`,
		"<<EOT\n%{for i in local.l}${local.s}%{endfor}\nEOT",
		`[` + strings.Repeat("try(", 40) + "1" + strings.Repeat(")", 40) + `]`,
		`setproduct(range(1000), range(1000), range(1000))`,
		`[regexall(join("", [for i in range(500) : "()"]), local.s)]`,
		`concat(` + strings.Repeat("local.l, ", 500) + `[])`,
		`[indent(1000000000, "a\nb")]`,
	} {
		f.Add([]byte(budgetLocals + limitJob(expr)))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		job, err := jobspec.Parse(filepath.Join(dir, "fuzz.hcl"), src, &jobspec.Options{Env: []string{}})
		if err != nil {
			if _, ok := err.(jobspec.Diagnostics); !ok {
				t.Fatalf("error %T is not Diagnostics: %v", err, err)
			}
			return
		}
		if job == nil || job.ID == "" || len(job.TaskGroups) == 0 {
			t.Fatalf("valid parse returned incomplete job %+v", job)
		}
	})
}

func BenchmarkParseFull(b *testing.B)  { benchParse(b, "testdata/full.hcl") }
func BenchmarkParseBasic(b *testing.B) { benchParse(b, "testdata/basic.hcl") }

func benchParse(b *testing.B, path string) {
	src, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	opts := &jobspec.Options{Env: []string{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jobspec.Parse(path, src, opts); err != nil {
			b.Fatal(err)
		}
	}
}
