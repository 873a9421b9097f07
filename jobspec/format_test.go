package jobspec

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	got, err := Format("a.hcl", []byte("job \"a\" {\n  count=1\n}\n"))
	if err != nil || string(got) != "job \"a\" {\n  count = 1\n}\n" {
		t.Errorf("Format = %q, %v", got, err)
	}
	deep := "x = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"
	if _, err := Format("deep.hcl", []byte(deep)); err == nil || !strings.Contains(err.Error(), "deep.hcl:1:") {
		t.Errorf("Format of a 100,000-deep list: %v, want refused with its position", err)
	}
	if _, err := Format("bad.hcl", []byte("job {\n")); err == nil || !strings.HasPrefix(err.Error(), "bad.hcl:") {
		t.Errorf("Format of broken HCL: %v", err)
	}
}

func TestAbsPath(t *testing.T) {
	job, err := Parse("a.hcl", []byte(`job "a" {
  meta {
    p = abspath("build/x.tar")
  }
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}
`), &Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if p := job.Meta["p"]; !filepath.IsAbs(p) || !strings.HasSuffix(p, "/build/x.tar") {
		t.Errorf("abspath = %q", p)
	}
}
