package api

import (
	"errors"
	"strings"
	"testing"
)

// Job IDs, group and task names become path elements (task dirs on
// clients, /v1/job/<id>): "." and ".." and names with separators or
// control characters are refused by Validate, which jobspec and the
// servers' JSON path both run.
func TestValidateNames(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(j *Job)
		want string // "" = valid
	}{
		{"job id ..", func(j *Job) { j.ID = ".." }, `invalid job ID "..": ".." is not a name`},
		{"job id .", func(j *Job) { j.ID = "." }, `invalid job ID ".": "." is not a name`},
		{"job id slash", func(j *Job) { j.ID = "a/b" }, `invalid job ID "a/b": must not contain "/"`},
		{"job id backslash", func(j *Job) { j.ID = `a\b` }, `must not contain "\\"`},
		{"job id space", func(j *Job) { j.ID = "a b" }, "must not contain spaces"},
		{"job id NUL", func(j *Job) { j.ID = "a\x00b" }, "must not contain control character U+0000"},
		{"job id tab", func(j *Job) { j.ID = "a\tb" }, "must not contain control character U+0009"},
		{"job id C1", func(j *Job) { j.ID = "a\u0085b" }, "must not contain control character U+0085"},
		{"job name NUL", func(j *Job) { j.Name = "web\x00" }, `invalid job name "web\x00": must not contain control character U+0000`},
		{"group ..", func(j *Job) { j.TaskGroups[0].Name = ".." }, `group "..": invalid group name: ".." is not a name`},
		{"group slash", func(j *Job) { j.TaskGroups[0].Name = "a/b" }, `group "a/b": invalid group name: must not contain "/"`},
		{"task ..", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = ".." }, `task "..": invalid task name: ".." is not a name`},
		{"task .", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = "." }, `task ".": invalid task name: "." is not a name`},
		{"task backslash", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = `a\b` }, `invalid task name: must not contain "\\"`},
		{"task newline", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = "a\nb" }, "invalid task name: must not contain control character U+000A"},
		{"task empty", func(j *Job) { j.TaskGroups[0].Tasks[0].Name = "" }, "missing task name"},
		{"dotted names", func(j *Job) { j.ID, j.TaskGroups[0].Name, j.TaskGroups[0].Tasks[0].Name = "web.v2", "a..b", "..." }, ""},
		{"unicode and dashes", func(j *Job) { j.ID, j.Name, j.TaskGroups[0].Tasks[0].Name = "wéb-1_x", "Web: the one", "tâche-ü" }, ""},
		{"job name with slash", func(j *Job) { j.Name = "team/web" }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := minimalJob()
			c.set(j)
			j.Canonicalize()
			err := j.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want ErrInvalidJob containing %q", err, c.want)
			}
		})
	}
}
