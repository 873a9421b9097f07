package examples_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
)

// TestExamples parses and validates every example job file.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob("*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("found %d examples, want at least 6", len(files))
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			job, err := jobspec.ParseFile(f, &jobspec.Options{Env: []string{}})
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if err := job.Validate(); err != nil {
				t.Errorf("validate: %v", err)
			}
		})
	}
}

// TestHelloExec pins what later end-to-end checks rely on.
func TestHelloExec(t *testing.T) {
	job, err := jobspec.ParseFile("hello-exec.hcl", &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	tg := job.LookupTaskGroup("hello")
	if job.ID != "hello" || job.Type != api.JobTypeService || tg == nil || tg.LookupTask("hello") == nil {
		t.Fatalf("want service job hello / group hello / task hello, got %+v", job)
	}
	task := tg.LookupTask("hello")
	args, _ := task.Config["args"].([]any)
	if task.Driver != "exec" || task.Config["command"] != "/bin/sh" || len(args) != 2 ||
		args[0] != "-c" || !strings.Contains(args[1].(string), `echo "hello from drover"`) {
		t.Errorf("task = %s %v", task.Driver, task.Config)
	}
}

func TestGPUTrain(t *testing.T) {
	job, err := jobspec.ParseFile("gpu-train.hcl", &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	devs := job.TaskGroups[0].Tasks[0].Resources.Devices
	if len(devs) != 1 || devs[0].Name != "nvidia/gpu" || devs[0].Count != 4 || len(devs[0].Constraints) != 1 {
		t.Fatalf("devices = %+v", devs)
	}
	c := devs[0].Constraints[0]
	if *c != (api.Constraint{LTarget: "${device.attr.memory}", Operand: ">=", RTarget: "40 GiB"}) {
		t.Errorf("constraint = %+v", c)
	}
}

func TestQemuVariables(t *testing.T) {
	job, err := jobspec.ParseFile("vm-qemu.hcl", &jobspec.Options{Env: []string{}, Vars: map[string]string{"kernel": "/boot/k"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := job.TaskGroups[0].Tasks[0].Config
	if cfg["kernel"] != "/boot/k" || cfg["initrd"] != "/var/lib/drover/images/initramfs.cpio.gz" {
		t.Errorf("config = %v", cfg)
	}
	if pm, _ := cfg["port_map"].(map[string]any); fmt.Sprint(pm["http"]) != "8080" {
		t.Errorf("port_map = %#v", cfg["port_map"])
	}
}

func TestGangTorch(t *testing.T) {
	job, err := jobspec.ParseFile("gang-torch.hcl", &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	tg := job.TaskGroups[0]
	g, id := job.GangOf(tg)
	if g == nil || id != "workers" || tg.Count != 2 || g.Topology == nil || g.Topology.Level != "rack" {
		t.Fatalf("gang %+v (id %q), count %d: want group gang workers of 2 packed by rack", g, id, tg.Count)
	}
	args, _ := tg.Tasks[0].Config["args"].([]any)
	if len(args) != 2 || !strings.Contains(args[1].(string), "--node_rank=${DROVER_GANG_RANK}") {
		t.Errorf("args = %v, want the gang rank left for the client to interpolate", args)
	}
}

// TestExamplesFormatted is the README's `drover fmt -check examples`:
// every example is in canonical layout.
func TestExamplesFormatted(t *testing.T) {
	files, _ := filepath.Glob("*.hcl")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := jobspec.Format(f, src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
		} else if !bytes.Equal(got, src) {
			t.Errorf("%s is not formatted: run drover fmt examples", f)
		}
	}
}

// onDevAgent is what an example's "# Needs:" line says when it runs on
// the plain dev agent (`make dev`); agent's TestE2EExamplesOnDevAgent runs
// every such example there.
const onDevAgent = "# Needs: only make dev"

var testName = regexp.MustCompile(`[Tt]ested by (TestE2E\w+)`)

// TestExamplesSayWhatTheyNeed: every example says in its first lines
// what it needs: only the dev agent, or what else, with the end-to-end
// test that runs it so (a test that exists in agent/).
func TestExamplesSayWhatTheyNeed(t *testing.T) {
	var e2e []byte
	tests, _ := filepath.Glob("../agent/e2e_*_test.go")
	for _, f := range tests {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		e2e = append(e2e, b...)
	}
	files, _ := filepath.Glob("*.hcl")
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var header []string // the leading comment block
		for _, l := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(l, "#") {
				break
			}
			header = append(header, strings.TrimLeft(l, "# "))
		}
		needs := -1
		for i, l := range header {
			if strings.HasPrefix(l, "Needs: ") {
				needs = i
				break
			}
		}
		if needs < 0 || needs > 3 {
			t.Errorf("%s: no \"# Needs: \" line among its first 4 lines", f)
			continue
		}
		if strings.HasPrefix("# "+header[needs], onDevAgent) {
			continue
		}
		m := testName.FindStringSubmatch(strings.Join(header, " "))
		if m == nil {
			t.Errorf("%s needs more than the dev agent but names no test (\"tested by TestE2E...\")", f)
		} else if !bytes.Contains(e2e, []byte("func "+m[1]+"(t *testing.T)")) {
			t.Errorf("%s names %s, which is not a test in agent/e2e_*_test.go", f, m[1])
		}
	}
}
