package jobspec_test

import (
	"strings"
	"testing"

	"github.com/drover/drover/jobspec"
)

// One of Nomad's drivers that drover does not run, or an unknown name (a
// typo gets the closest known name), is a warning at the driver's place
// (Nomad accepts the job), not an error; drover's own drivers and the
// test drivers are neither.
func TestDriverWarnings(t *testing.T) {
	tests := []struct{ driver, want string }{
		{"docker", `x.hcl:4:16: drover does not run driver "docker" (its drivers: containerd, exec, qemu, raw_exec; containerd runs the same OCI images): task "t" is accepted but will not be placed`},
		{"java", `x.hcl:4:16: drover does not run driver "java" (its drivers: containerd, exec, qemu, raw_exec): task "t" is accepted but will not be placed`},
		{"ecs", `x.hcl:4:16: drover does not run driver "ecs" (its drivers: containerd, exec, qemu, raw_exec): task "t" is accepted but will not be placed`},
		{"dokcer", `x.hcl:4:16: unknown driver "dokcer" (drover's drivers: containerd, exec, qemu, raw_exec); did you mean "docker"?: task "t" is accepted but no drover client will run it`},
		{"rawexec", `x.hcl:4:16: unknown driver "rawexec" (drover's drivers: containerd, exec, qemu, raw_exec); did you mean "raw_exec"?: task "t" is accepted but no drover client will run it`},
		{"my-plugin", `x.hcl:4:16: unknown driver "my-plugin" (drover's drivers: containerd, exec, qemu, raw_exec): task "t" is accepted but no drover client will run it`},
		{"containerd", ""},
		{"raw_exec", ""},
		{"mock_driver", ""},
	}
	for _, tt := range tests {
		src := "job \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"" + tt.driver + "\"\n    }\n  }\n}\n"
		var warns []string
		job, err := jobspec.Parse("x.hcl", []byte(src), &jobspec.Options{Env: []string{},
			Warn: func(d jobspec.Diagnostic) { warns = append(warns, d.String()) }})
		if err != nil {
			t.Errorf("%s: %v, want the job accepted", tt.driver, err)
			continue
		}
		if got := job.TaskGroups[0].Tasks[0].Driver; got != tt.driver {
			t.Errorf("driver = %q, want %q", got, tt.driver)
		}
		if got := strings.Join(warns, "\n"); got != tt.want {
			t.Errorf("%s: warnings %q, want %q", tt.driver, got, tt.want)
		}
	}
}
