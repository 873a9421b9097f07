package jobspec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// goldenOptions are the inputs some testdata files need; every file gets
// an empty environment so the host's cannot leak in.
var goldenOptions = map[string]*jobspec.Options{
	"variables.hcl": {
		Vars:     map[string]string{"secret": "s3cr3t"},
		VarFiles: []string{"testdata/variables.vars"},
		Env:      []string{"DROVER_VAR_from_env=Env", "NOMAD_VAR_from_env=nomad", "NOMAD_VAR_undeclared=1"},
	},
	"err_variables.hcl": {Vars: map[string]string{"n": "-1"}},
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".hcl"), func(t *testing.T) {
			opts := goldenOptions[name]
			if opts == nil {
				opts = &jobspec.Options{}
			}
			if opts.Env == nil {
				opts.Env = []string{}
			}
			job, err := jobspec.ParseFile(path, opts)
			wantErr := strings.HasPrefix(name, "err_")
			if wantErr {
				if err == nil {
					t.Fatalf("parse succeeded, want diagnostics")
				}
				var diags jobspec.Diagnostics
				if !errors.As(err, &diags) {
					t.Fatalf("error %T is not Diagnostics: %v", err, err)
				}
				if !errors.Is(err, api.ErrInvalidJob) {
					t.Errorf("errors.Is(err, api.ErrInvalidJob) = false")
				}
				compareGolden(t, strings.TrimSuffix(path, ".hcl")+".err", []byte(err.Error()+"\n"))
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got := marshal(t, job)
			compareGolden(t, strings.TrimSuffix(path, ".hcl")+".golden.json", got)

			// The golden JSON, decoded and canonicalized as the server
			// would, is the same job: defaults are idempotent and survive
			// the wire.
			var back api.JobRegisterRequest
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			back.Job.Canonicalize()
			// Config numbers decode as float64 from JSON, so compare the
			// wire forms.
			if diff := cmp.Diff(string(got), string(marshal(t, back.Job))); diff != "" {
				t.Errorf("JSON round trip differs (-hcl +json):\n%s", diff)
			}
			if err := back.Job.Validate(); err != nil {
				t.Errorf("validate decoded job: %v", err)
			}
		})
	}
}

func marshal(t *testing.T, job *api.Job) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(api.JobRegisterRequest{Job: job}); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return buf.Bytes()
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test ./jobspec -update): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
