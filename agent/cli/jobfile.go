package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
	"github.com/spf13/cobra"
)

// addVarFlags registers the repeatable -var name=value and -var-file FILE
// flags and returns where their values land, for loadJob.
func addVarFlags(cmd *cobra.Command) (*[]string, *[]string) {
	vars := cmd.Flags().StringArray("var", nil, "set a job variable, name=value (repeatable)")
	files := cmd.Flags().StringArray("var-file", nil, "read job variables from an HCL file of name = value lines (repeatable)")
	return vars, files
}

// maxStdinJob bounds a job file read from standard input.
const maxStdinJob = 8 << 20

// loadJob parses a job file ("-" reads standard input), HCL or JSON, with -var and
// -var-file inputs, DROVER_VAR_*/NOMAD_VAR_* from the environment, and
// applies the defaults. Parse problems come back as jobspec.Diagnostics
// (one file:line:col: message per line); a malformed -var is a usage error.
// What drover accepts but will not run (Nomad's grammar it ignores, a
// driver it has not) is printed to warn (when not nil) as
// "file:line:col: warning: message", beside the errors' file:line:col:
// message.
func loadJob(path string, vars []string, varFiles []string, namespace string, warn io.Writer) (*api.Job, error) {
	opts := &jobspec.Options{VarFiles: varFiles, Namespace: namespace}
	if warn != nil {
		opts.Warn = func(d jobspec.Diagnostic) {
			if d.File == "" && d.Line == 0 {
				fmt.Fprintln(warn, "warning:", d.Message)
				return
			}
			fmt.Fprintf(warn, "%s:%d:%d: warning: %s\n", d.File, d.Line, d.Column, d.Message)
		}
	}
	if len(vars) > 0 {
		opts.Vars = make(map[string]string, len(vars))
		for _, kv := range vars {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usageErr("-var %q: want name=value", kv)
			}
			opts.Vars[k] = v
		}
	}
	name := path
	var src []byte
	var err error
	if path == "-" {
		name, opts.BaseDir = "<stdin>", "."
		src, err = io.ReadAll(io.LimitReader(os.Stdin, maxStdinJob))
		if err != nil {
			return nil, fmt.Errorf("read job from stdin: %w", err)
		}
	} else if src, err = os.ReadFile(path); err != nil {
		return nil, fmt.Errorf("read job file: %w", err)
	}
	if jobspec.IsJSON(src) {
		// A JSON job (what job inspect and run -output print), as Nomad's
		// -json input; -var inputs do not apply to it.
		return jobspec.ParseJSON(name, src, opts)
	}
	return jobspec.Parse(name, src, opts)
}
