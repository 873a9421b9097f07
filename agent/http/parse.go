package http

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
)

// ParseHCL is the default Parser: jobspec over the request's HCL, with
// VariableArgs as -var values and Variables as a var file. It reads no
// environment variables and no files of the agent: file() resolves in an
// empty temporary directory.
func ParseHCL(req *api.JobsParseRequest) (*api.Job, error) {
	dir, err := os.MkdirTemp("", "drover-parse-")
	if err != nil {
		return nil, fmt.Errorf("parse job: %w", err)
	}
	defer os.RemoveAll(dir)
	opts := &jobspec.Options{Vars: req.VariableArgs, Env: []string{}, BaseDir: dir, NoDefaults: !req.Canonicalize}
	if req.Variables != "" {
		p := filepath.Join(dir, "variables.hcl")
		if err := os.WriteFile(p, []byte(req.Variables), 0o600); err != nil {
			return nil, fmt.Errorf("parse job: %w", err)
		}
		opts.VarFiles = []string{p}
	}
	return jobspec.Parse("job.hcl", []byte(req.JobHCL), opts)
}
