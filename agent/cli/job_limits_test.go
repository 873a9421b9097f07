package cli

import (
	"strings"
	"testing"
)

// A job file nested 100,000 deep overflowed the parser's stack and killed
// drover job validate/run/plan (fatal error, no message); now each prints
// file:line:col: message and exits 1 without contacting a server.
func TestJobFileLimits(t *testing.T) {
	dir := t.TempDir()
	deep := writeFile(t, dir, "deep.hcl", "job \"d\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n      config {\n        args = "+
		strings.Repeat("[", 100_000)+strings.Repeat("]", 100_000)+"\n      }\n    }\n  }\n}\n")
	big := writeFile(t, dir, "big.hcl", "job \"b\" {\n  meta {\n    x = \""+strings.Repeat("x", 2<<20)+"\"\n  }\n}\n")
	deepVars := writeFile(t, dir, "deep.vars", "n = "+strings.Repeat("(", 100_000)+"1"+strings.Repeat(")", 100_000)+"\n")
	good := writeFile(t, dir, "good.hcl", validJob)
	// An address nothing listens on: the file must be refused before any request.
	addr := "http://127.0.0.1:1"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"validate deep", []string{"job", "validate", deep}, deep + ":6:76: Nesting too deep: more than 64 nested"},
		{"run deep", []string{"job", "run", "-address", addr, deep}, deep + ":6:76: Nesting too deep"},
		{"plan deep", []string{"job", "plan", "-address", addr, deep}, deep + ":6:76: Nesting too deep"},
		{"validate large", []string{"job", "validate", big}, big + ":1:1: Job source too large: more than 1048576 bytes."},
		{"validate deep var file", []string{"job", "validate", "-var-file", deepVars, good}, deepVars + ":1:69: Nesting too deep"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit code %d, stderr %q (stdout %q), want 1 and %q", code, errOut, out, tt.want)
			}
		})
	}
}
