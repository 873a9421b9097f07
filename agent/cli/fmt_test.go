package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLIFmt(t *testing.T) {
	dir := t.TempDir()
	messy := "job   \"web\" {\n  group \"g\" {\n      count=2\n  }\n}\n"
	tidy := "job \"web\" {\n  group \"g\" {\n    count = 2\n  }\n}\n"
	f := writeFile(t, dir, "web.hcl", messy)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := writeFile(t, filepath.Join(dir, "sub"), "ok.nomad", tidy)
	writeFile(t, dir, "notes.txt", "not   hcl {")

	if code, out, _ := runCLI(t, "fmt", "-check", dir); code != ExitError || strings.TrimSpace(out) != f {
		t.Errorf("fmt -check: exit %d out %q, want 1 listing %s only", code, out, f)
	}
	if b, _ := os.ReadFile(f); string(b) != messy {
		t.Error("fmt -check rewrote the file")
	}
	if code, out, stderr := runCLI(t, "fmt", dir); code != 0 || strings.TrimSpace(out) != f {
		t.Errorf("fmt: exit %d out %q stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(f); string(b) != tidy {
		t.Errorf("after fmt: %q, want %q", b, tidy)
	}
	if code, out, _ := runCLI(t, "fmt", "-check", dir, ok); code != 0 || out != "" {
		t.Errorf("fmt -check of formatted files: exit %d out %q", code, out)
	}
	bad := writeFile(t, dir, "bad.hcl", "job \"x\" {\n  count = \n")
	if code, _, stderr := runCLI(t, "fmt", bad); code != ExitError || !strings.Contains(stderr, bad+":") {
		t.Errorf("fmt of a broken file: exit %d stderr %q, want 1 with file:line:col", code, stderr)
	}
	if b, _ := os.ReadFile(bad); string(b) != "job \"x\" {\n  count = \n" {
		t.Error("fmt rewrote a broken file")
	}
}
