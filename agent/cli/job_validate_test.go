package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/jobspec"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runCLI runs the CLI in-process and resets every flag afterwards, since
// cobra keeps flag values between executions of the global command tree.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	resetFlags(rootCmd)
	return code, out.String(), errb.String()
}

func resetFlags(cmd *cobra.Command) {
	reset := func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			_ = sv.Replace(nil)
		} else {
			_ = f.Value.Set(f.DefValue)
		}
		f.Changed = false
	}
	cmd.Flags().VisitAll(reset)
	cmd.PersistentFlags().VisitAll(reset)
	for _, c := range cmd.Commands() {
		resetFlags(c)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const validJob = `variable "n" {
  type    = number
  default = 1
}
job "ok" {
  group "g" {
    count = var.n
    task "t" {
      driver = "exec"
    }
  }
}
`

func TestJobValidate(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.hcl", validJob)
	bad := writeFile(t, dir, "bad.hcl", `job "bad" {
  group "g" {
    count = "x"
    task "t" {
      drivr = "exec"
    }
  }
}
`)
	varFile := writeFile(t, dir, "n.vars", "n = 2\n")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantStderr []string
	}{
		{"valid", []string{"job", "validate", good}, 0, []string{good + ": Job validation successful"}, nil},
		{"every example", append([]string{"job", "validate"}, examples(t)...), 0, []string{"hello-exec.hcl: Job validation successful"}, nil},
		{"invalid lists every error", []string{"job", "validate", bad}, 1, nil, []string{
			bad + `:3:13: Invalid value for "count": a number is required`,
			bad + `:5:7: Unsupported argument: An argument named "drivr" is not expected here. Did you mean "driver"?`,
		}},
		{"valid and invalid", []string{"job", "validate", good, bad}, 1, []string{good + ": Job validation successful"}, []string{bad + ":3:13:"}},
		{"single-dash -var", []string{"job", "validate", "-var", "n=3", good}, 0, []string{"successful"}, nil},
		{"-var=value form", []string{"job", "validate", "-var=n=3", good}, 0, []string{"successful"}, nil},
		{"-var-file", []string{"job", "validate", "-var-file", varFile, good}, 0, []string{"successful"}, nil},
		{"-var of wrong type", []string{"job", "validate", "-var", "n=x", good}, 1, nil, []string{`Invalid value for variable "n"`}},
		{"undeclared -var", []string{"job", "validate", "-var", "m=1", good}, 1, nil, []string{`Undefined -var variable "m"`}},
		{"no args", []string{"job", "validate"}, 2, nil, []string{"requires at least 1 arg"}},
		{"missing file", []string{"job", "validate", filepath.Join(dir, "nope.hcl")}, 2, nil, []string{"nope.hcl: no such file"}},
		{"malformed -var", []string{"job", "validate", "-var", "novalue", good}, 2, nil, []string{`-var "novalue": want name=value`}},
		{"unknown flag", []string{"job", "validate", "-bogus", good}, 2, nil, []string{"unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout %q does not contain %q", out, w)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not contain %q", errOut, w)
				}
			}
		})
	}
}

func examples(t *testing.T) []string {
	files, err := filepath.Glob("../../examples/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	return files
}

func TestLoadJob(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.hcl", validJob)
	job, err := loadJob(good, []string{"n=4"}, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if job.TaskGroups[0].Count != 4 || job.Region != "global" {
		t.Errorf("count %d region %q, want 4 and defaults applied", job.TaskGroups[0].Count, job.Region)
	}
	if _, err := loadJob(filepath.Join(dir, "bad"), nil, nil, "", nil); err == nil {
		t.Error("missing file: no error")
	}
}

func TestJobInit(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errOut := runCLI(t, "job", "init")
	if code != 0 || !strings.Contains(out, "example.hcl") {
		t.Fatalf("init: code %d out %q err %q", code, out, errOut)
	}
	if _, err := jobspec.ParseFile("example.hcl", &jobspec.Options{Env: []string{}}); err != nil {
		t.Errorf("example.hcl does not parse: %v", err)
	}
	before, _ := os.ReadFile("example.hcl")
	code, _, errOut = runCLI(t, "job", "init", "-short")
	if code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second init: code %d stderr %q, want 1 and a refusal", code, errOut)
	}
	after, _ := os.ReadFile("example.hcl")
	if !bytes.Equal(before, after) {
		t.Error("init overwrote the existing file")
	}
	code, _, errOut = runCLI(t, "job", "init", "-short", "short.hcl")
	if code != 0 {
		t.Fatalf("init -short: code %d stderr %q", code, errOut)
	}
	short, _ := os.ReadFile("short.hcl")
	if len(short) >= len(before) || strings.Contains(string(short), "#") {
		t.Errorf("-short wrote %d bytes with comments, want a shorter uncommented file", len(short))
	}
	if code, _, errOut := runCLI(t, "job", "validate", "example.hcl", "short.hcl"); code != 0 {
		t.Errorf("validate init output: code %d stderr %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "job", "init", "a.hcl", "b.hcl"); code != 2 {
		t.Errorf("two files: code %d, want 2", code)
	}
}

func TestNormalizeArgs(t *testing.T) {
	tests := []struct {
		in, want []string
	}{
		{[]string{"job", "validate", "-var", "a=1", "-var-file=x", "f.hcl"}, []string{"job", "validate", "--var", "a=1", "--var-file=x", "f.hcl"}},
		{[]string{"-address", "http://x", "job", "init", "-short"}, []string{"--address", "http://x", "job", "init", "--short"}},
		// A value that looks like a flag stays a value.
		{[]string{"job", "validate", "-var", "-short", "f"}, []string{"job", "validate", "--var", "-short", "f"}},
		// Unknown names, shorthands, "--" and what follows are untouched.
		{[]string{"job", "validate", "-h", "-nope", "--", "-var"}, []string{"job", "validate", "-h", "-nope", "--", "-var"}},
		{[]string{"job", "validate", "--var", "a=1"}, []string{"job", "validate", "--var", "a=1"}},
		// alloc exec: the remote command after ALLOC keeps its own flags.
		{[]string{"alloc", "exec", "-task", "web", "abc", "ls", "-task"}, []string{"alloc", "exec", "--task", "web", "abc", "ls", "-task"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, normalizeArgs(rootCmd, tt.in)); diff != "" {
			t.Errorf("normalizeArgs(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// A job file Nomad accepts validates (exit 0), with one warning per item
// drover will not run, at its place: a driver drover has not, a block it
// ignores, a name kept literally.
func TestJobValidateNomadFile(t *testing.T) {
	dir := t.TempDir()
	f := writeFile(t, dir, "nomad.hcl", `job "web" {
  group "g" {
    network {
      mode = "bridge"
    }
    volume "data" {
      type   = "host"
      source = "data"
    }
    task "t" {
      driver = "docker"
      volume_mount {
        volume      = "data"
        destination = "${NOMAD_TASK_DIR}/data"
      }
      env {
        X = "${undefined}"
      }
      vault {
        policies = ["p"]
      }
    }
  }
}
`)
	code, out, errOut := runCLI(t, "job", "validate", f)
	if code != 0 || !strings.Contains(out, f+": Job validation successful") {
		t.Fatalf("exit %d stdout %q stderr %q, want 0 and success", code, out, errOut)
	}
	want := []string{
		f + `:11:16: warning: drover does not run driver "docker"`,
		f + `:17:16: warning: Unknown name "undefined": kept as the literal text ${undefined}`,
		f + `:19:7: warning: "vault" block is not supported by drover yet`,
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != len(want) {
		t.Fatalf("stderr %q, want %d warnings", errOut, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("warning %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}
