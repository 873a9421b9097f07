package jobspec_test

import (
	"os"
	"path/filepath"
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
