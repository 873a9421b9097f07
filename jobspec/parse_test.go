package jobspec_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
	"github.com/google/go-cmp/cmp"
)

const varJob = `
variable "v" {
  type    = string
  default = "default"
}
variable "n" {
  type    = number
  default = 1
}
job "j" {
  meta {
    v = var.v
  }
  group "g" {
    count = var.n
    task "t" {
      driver = "exec"
    }
  }
}
`

func TestVariablePrecedence(t *testing.T) {
	dir := t.TempDir()
	varFile := filepath.Join(dir, "in.vars")
	if err := os.WriteFile(varFile, []byte(`v = "file"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts jobspec.Options
		want string
	}{
		{"default", jobspec.Options{}, "default"},
		{"nomad env", jobspec.Options{Env: []string{"NOMAD_VAR_v=nomad"}}, "nomad"},
		{"drover env beats nomad env", jobspec.Options{Env: []string{"DROVER_VAR_v=drover", "NOMAD_VAR_v=nomad"}}, "drover"},
		{"var file beats env", jobspec.Options{Env: []string{"DROVER_VAR_v=drover"}, VarFiles: []string{varFile}}, "file"},
		{"-var beats var file", jobspec.Options{VarFiles: []string{varFile}, Vars: map[string]string{"v": "flag"}}, "flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.opts.Env == nil {
				tt.opts.Env = []string{}
			}
			job, err := jobspec.Parse("j.hcl", []byte(varJob), &tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := job.Meta["v"]; got != tt.want {
				t.Errorf("var.v = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestVariableErrors(t *testing.T) {
	tests := []struct {
		name string
		opts jobspec.Options
		want []string
	}{
		{"undeclared -var", jobspec.Options{Vars: map[string]string{"nope": "1"}}, []string{`Undefined -var variable "nope"`}},
		{"number from text", jobspec.Options{Vars: map[string]string{"n": "many"}}, []string{`Invalid value for variable "n" from -var n`}},
		{"missing var file", jobspec.Options{VarFiles: []string{"/nonexistent/x.vars"}}, []string{"Cannot read variable file"}},
		{"both at once", jobspec.Options{Vars: map[string]string{"nope": "1", "n": "x"}}, []string{`"nope"`, `variable "n"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Env = []string{}
			_, err := jobspec.Parse("j.hcl", []byte(varJob), &tt.opts)
			if err == nil {
				t.Fatal("parse succeeded, want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestNumberVarFromText(t *testing.T) {
	job, err := jobspec.Parse("j.hcl", []byte(varJob), &jobspec.Options{Env: []string{"DROVER_VAR_n=4"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.TaskGroups[0].Count; got != 4 {
		t.Errorf("count = %d, want 4", got)
	}
}

func TestFileStaysInBaseDir(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := func(expr string) []byte {
		return []byte(`job "f" {
  meta { x = ` + expr + ` }
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}`)
	}
	for _, expr := range []string{`file("link")`, `file("../secret")`, `file("` + filepath.Join(outside, "secret") + `")`, `fileexists("../x")`} {
		t.Run(expr, func(t *testing.T) {
			_, err := jobspec.Parse(filepath.Join(dir, "job.hcl"), src(expr), &jobspec.Options{Env: []string{}})
			if err == nil {
				t.Fatalf("%s: parse succeeded, want an error", expr)
			}
		})
	}
	job, err := jobspec.Parse(filepath.Join(dir, "job.hcl"), src(`file("ok.txt")`), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Meta["x"]; got != "fine" {
		t.Errorf("file() = %q, want fine", got)
	}
	// BaseDir overrides the job file's directory.
	if _, err := jobspec.Parse("elsewhere/job.hcl", src(`file("ok.txt")`), &jobspec.Options{Env: []string{}, BaseDir: dir}); err != nil {
		t.Errorf("BaseDir: %v", err)
	}
}

func TestDiagnosticsError(t *testing.T) {
	_, err := jobspec.ParseFile("testdata/err_typo_count.hcl", &jobspec.Options{Env: []string{}})
	var diags jobspec.Diagnostics
	if !errors.As(err, &diags) {
		t.Fatalf("error %T is not Diagnostics", err)
	}
	if len(diags) != 3 {
		t.Fatalf("got %d diagnostics, want 3: %v", len(diags), err)
	}
	want := []struct{ line, col int }{{3, 13}, {4, 5}, {5, 7}}
	for i, d := range diags {
		if d.File != "testdata/err_typo_count.hcl" || d.Line != want[i].line || d.Column != want[i].col {
			t.Errorf("diag %d at %s:%d:%d, want line %d col %d", i, d.File, d.Line, d.Column, want[i].line, want[i].col)
		}
	}
	if got := api.AsError(err); got.Code != api.ErrInvalidJob.Code || got.Status != 400 {
		t.Errorf("AsError = %+v, want invalid_job 400", got)
	}
	if _, err := jobspec.ParseFile("testdata/does-not-exist.hcl", nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
}

// TestValidateAtJob checks that problems only api.Job.Validate sees are
// reported at the job block.
func TestValidateAtJob(t *testing.T) {
	src := `job "j" {
  group "g" {
    task "a" {
      driver = "exec"
      leader = true
    }
    task "b" {
      driver = "exec"
      leader = true
    }
  }
}`
	_, err := jobspec.Parse("j.hcl", []byte(src), &jobspec.Options{Env: []string{}})
	if err == nil || !strings.HasPrefix(err.Error(), "j.hcl:1:1: ") || !strings.Contains(err.Error(), "only one task may be leader") {
		t.Fatalf("got %v, want leader problem at j.hcl:1:1", err)
	}
}

func TestNoDefaults(t *testing.T) {
	job, err := jobspec.ParseFile("testdata/basic.hcl", &jobspec.Options{Env: []string{}, NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	if job.Region != "" || job.TaskGroups[0].Tasks[0].Resources != nil || job.TaskGroups[0].Count != 1 {
		t.Errorf("NoDefaults job has defaults: region %q resources %v count %d",
			job.Region, job.TaskGroups[0].Tasks[0].Resources, job.TaskGroups[0].Count)
	}
}

// TestJSONParity checks that a JSON job with the same content as an HCL
// job canonicalizes to the same job.
func TestJSONParity(t *testing.T) {
	hclJob, err := jobspec.ParseFile("testdata/basic.hcl", &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"Job":{"ID":"hello","TaskGroups":[{"Name":"hello","Tasks":[{"Name":"hello","Driver":"exec",
	  "Config":{"command":"/bin/sh","args":["-c","echo hello; exec sleep 3600"]}}]}]}}`
	var req api.JobRegisterRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	req.Job.Canonicalize()
	// JSON numbers and lists decode as float64/[]any; compare through JSON.
	a, _ := json.Marshal(hclJob)
	b, _ := json.Marshal(req.Job)
	if diff := cmp.Diff(string(a), string(b)); diff != "" {
		t.Errorf("HCL and JSON jobs differ (-hcl +json):\n%s", diff)
	}
	if got := hclJob.TaskGroups[0].Tasks[0].KillTimeout; got != 5*time.Second {
		t.Errorf("kill timeout = %v, want 5s", got)
	}
}

func TestVarText(t *testing.T) {
	job, err := jobspec.Parse("j.hcl", []byte(varJob), &jobspec.Options{Env: []string{}, VarText: "v = \"text\"\nn = 5\n"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Meta["v"] != "text" || job.TaskGroups[0].Count != 5 {
		t.Errorf("meta %v count %d, want text and 5", job.Meta, job.TaskGroups[0].Count)
	}
	_, err = jobspec.Parse("j.hcl", []byte(varJob), &jobspec.Options{Env: []string{}, VarText: "zzz = 1\n"})
	if err == nil || !strings.HasPrefix(err.Error(), "<variables>:1:1: Undefined variable \"zzz\"") {
		t.Errorf("got %v, want undefined variable at <variables>:1:1", err)
	}
}

func TestRuntimeReferences(t *testing.T) {
	src := `variable "on" {
  type    = bool
  default = true
}
job "rt" {
  constraint {
    attribute = attr.kernel.name
    value     = var.on ? "${meta.a}" : "b"
  }
  meta {
    fmt   = format("%s/x", NOMAD_TASK_DIR)
    mixed = "${node.unique.name}:${var.on}:${node.unique.id}"
    home  = env["HOME"]
  }
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}`
	job, err := jobspec.Parse("rt.hcl", []byte(src), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	c := job.Constraints[0]
	if c.LTarget != "${attr.kernel.name}" || c.RTarget != "${meta.a}" {
		t.Errorf("constraint = %+v", c)
	}
	want := map[string]string{
		"fmt":   "${NOMAD_TASK_DIR}/x",
		"mixed": "${node.unique.name}:true:${node.unique.id}",
		"home":  `${env["HOME"]}`,
	}
	if diff := cmp.Diff(want, job.Meta); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	// Other names that are no variable are kept literally too, as Nomad
	// keeps them, with a warning at the reference (likely a typo).
	var warns []string
	job, err = jobspec.Parse("rt.hcl", []byte(`job "x" {
  meta {
    a = "${nodes.name}"
  }
  group "g" {
    task "t" {
      driver = "exec"
    }
  }
}`), &jobspec.Options{Env: []string{}, Warn: func(d jobspec.Diagnostic) { warns = append(warns, d.String()) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := job.Meta["a"]; got != "${nodes.name}" {
		t.Errorf("meta a = %q, want ${nodes.name} kept", got)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], `rt.hcl:3:12: Unknown name "nodes": kept as the literal text ${nodes.name}`) {
		t.Errorf("warnings %q, want one about nodes at rt.hcl:3:12", warns)
	}
}

func TestTooManyBlocks(t *testing.T) {
	src := `job "big" {
  dynamic "group" {
    for_each = range(1000)
    labels   = ["g${group.key}"]
    content {
      dynamic "task" {
        for_each = range(1000)
        labels   = ["t${task.key}"]
        content {
          driver = "exec"
        }
      }
    }
  }
}`
	_, err := jobspec.Parse("big.hcl", []byte(src), &jobspec.Options{Env: []string{}})
	if err == nil || !strings.Contains(err.Error(), "Job too large") {
		t.Fatalf("got %v, want a job too large error", err)
	}
}

// Nomad grammar drover does not run yet parses with one warning per item,
// at its place; the disconnect block is decoded.
func TestAcceptedGrammarWarns(t *testing.T) {
	var warns []string
	job, err := jobspec.ParseFile("testdata/nomad_grammar.hcl", &jobspec.Options{Warn: func(d jobspec.Diagnostic) { warns = append(warns, d.String()) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`testdata/nomad_grammar.hcl:2:3: "vault_token" is not supported by drover yet: accepted and ignored`,
		`testdata/nomad_grammar.hcl:3:3: "ui" block is not supported by drover yet: accepted and ignored`,
		`testdata/nomad_grammar.hcl:7:5: "prevent_reschedule_on_lost" is not supported by drover yet: accepted and ignored`,
		`testdata/nomad_grammar.hcl:10:7: "replace" is not supported by drover yet: accepted and ignored`,
		`testdata/nomad_grammar.hcl:21:21: "ignore_collision" is not supported by drover yet: accepted and ignored`,
		`testdata/nomad_grammar.hcl:48:9: "wait" block is not supported by drover yet: accepted and ignored`,
	}
	if diff := cmp.Diff(want, warns); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if g := job.TaskGroups[0]; g.MaxClientDisconnect != time.Hour {
		t.Errorf("disconnect.lost_after: MaxClientDisconnect = %v, want 1h", g.MaxClientDisconnect)
	}
	// The old attribute and the block exclude each other.
	src := []byte("job \"x\" {\n  group \"g\" {\n    max_client_disconnect = \"1h\"\n    disconnect {\n      lost_after = \"1h\"\n    }\n" +
		"    task \"t\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n    }\n  }\n}\n")
	if _, err := jobspec.Parse("x.hcl", src, nil); err == nil || !strings.Contains(err.Error(), "x.hcl:3:5: Conflicting disconnect settings") {
		t.Errorf("max_client_disconnect with a disconnect block: %v", err)
	}
}

// memory_max = -1 asks for no memory ceiling (as Nomad); 0 and -2 are
// errors at the value.
func TestMemoryMaxUnlimited(t *testing.T) {
	src := func(v string) []byte {
		return []byte("job \"m\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n      config { command = \"/bin/true\" }\n" +
			"      resources {\n        memory = 64\n        memory_max = " + v + "\n      }\n    }\n  }\n}\n")
	}
	job, err := jobspec.Parse("m.hcl", src("-1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := job.TaskGroups[0].Tasks[0].Resources.MemoryMaxMB; got != -1 {
		t.Errorf("MemoryMaxMB = %d, want -1", got)
	}
	for _, v := range []string{"0", "-2"} {
		if _, err := jobspec.Parse("m.hcl", src(v), nil); err == nil || !strings.Contains(err.Error(), "m.hcl:8:22:") {
			t.Errorf("memory_max = %s: %v, want an error at 8:22", v, err)
		}
	}
}

// Host volumes: a group volume and a task's volume_mount decode into
// Nomad's shapes; a mount without a destination, a volume without a type
// and a duplicate volume are errors at their place.
func TestHostVolumes(t *testing.T) {
	src := `job "v" {
  group "g" {
    volume "models" {
      type      = "host"
      source    = "weights"
      read_only = true
    }
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      volume_mount {
        volume      = "models"
        destination = "/models"
        read_only   = true
      }
    }
  }
}`
	job, err := jobspec.Parse("v.hcl", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Validate(); err != nil {
		t.Fatal(err)
	}
	g := job.TaskGroups[0]
	want := &api.VolumeRequest{Name: "models", Type: "host", Source: "weights", ReadOnly: true}
	if diff := cmp.Diff(want, g.Volumes["models"]); diff != "" {
		t.Errorf("volume (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*api.VolumeMount{{Volume: "models", Destination: "/models", ReadOnly: true}}, g.Tasks[0].VolumeMounts); diff != "" {
		t.Errorf("volume_mount (-want +got):\n%s", diff)
	}
	for _, c := range []struct{ from, to, want string }{
		{"        destination = \"/models\"\n", "", "v.hcl:11:7: Missing destination"},
		{"      type      = \"host\"\n", "", "v.hcl:3:5: Missing type"},
		{"    task \"t\" {", "    volume \"models\" {\n      type = \"host\"\n      source = \"x\"\n    }\n    task \"t\" {", "Duplicate volume \"models\""},
	} {
		_, err := jobspec.Parse("v.hcl", []byte(strings.Replace(src, c.from, c.to, 1)), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("without %q: %v, want %q", c.from, err, c.want)
		}
	}
}
