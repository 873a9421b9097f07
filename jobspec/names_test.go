package jobspec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/jobspec"
)

// nameJob is a job with the given (HCL-quoted) labels: the job label at
// 1:5, the group's at 2:9, the task's at 3:10.
func nameJob(job, group, task string) string {
	return fmt.Sprintf("job %s {\n  group %s {\n    task %s {\n      driver = \"exec\"\n    }\n  }\n}\n", job, group, task)
}

// Job, group and task names become path elements (a task's directory is
// <alloc dir>/<task>; a job is served at /v1/job/<id>): ".", ".." and
// names with separators or control characters are refused at the label.
func TestParseRefusesPathNames(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"task ..", nameJob(`"j"`, `"g"`, `".."`), `n.hcl:3:10: Invalid task name: ".." is not a name (names become path elements)`},
		{"task .", nameJob(`"j"`, `"g"`, `"."`), `n.hcl:3:10: Invalid task name: "." is not a name (names become path elements)`},
		{"task slash", nameJob(`"j"`, `"g"`, `"../etc"`), `n.hcl:3:10: Invalid task name: must not contain "/" (names become path elements)`},
		{"task backslash", nameJob(`"j"`, `"g"`, `"a\\b"`), `n.hcl:3:10: Invalid task name: must not contain "\\" (names become path elements)`},
		{"task NUL", nameJob(`"j"`, `"g"`, `"a\u0000b"`), `n.hcl:3:10: Invalid task name: must not contain control character U+0000`},
		{"task tab", nameJob(`"j"`, `"g"`, `"a\tb"`), `n.hcl:3:10: Invalid task name: must not contain control character U+0009`},
		{"task empty", nameJob(`"j"`, `"g"`, `""`), `n.hcl:3:10: Invalid task name: must not be empty`},
		{"group ..", nameJob(`"j"`, `".."`, `"t"`), `n.hcl:2:9: Invalid group name: ".." is not a name (names become path elements)`},
		{"group slash", nameJob(`"j"`, `"a/b"`, `"t"`), `n.hcl:2:9: Invalid group name: must not contain "/" (names become path elements)`},
		{"job ..", nameJob(`".."`, `"g"`, `"t"`), `n.hcl:1:5: Invalid job name: ".." is not a name (names become path elements)`},
		{"job .", nameJob(`"."`, `"g"`, `"t"`), `n.hcl:1:5: Invalid job name: "." is not a name (names become path elements)`},
		{"job space", nameJob(`"a b"`, `"g"`, `"t"`), `n.hcl:1:5: Invalid job name: must not contain spaces`},
		{"job name attribute", "job \"j\" {\n  name = \"web\\u0007\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"exec\"\n    }\n  }\n}\n",
			`n.hcl:2:10: Invalid job name: must not contain control character U+0007`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := jobspec.Parse("n.hcl", []byte(c.src), &jobspec.Options{Env: []string{}})
			if err == nil || err.Error() != c.want || !errors.Is(err, api.ErrInvalidJob) {
				t.Fatalf("Parse = %v, want %s", err, c.want)
			}
		})
	}
}

func TestParseAcceptsNomadNames(t *testing.T) {
	for _, labels := range [][3]string{
		{`"web.v2"`, `"a..b"`, `"..."`},
		{`"wéb-1_x"`, `"grüppe"`, `"tâche"`},
		{`"api"`, `"g"`, `"redis.cache-2"`},
	} {
		job, err := jobspec.Parse("n.hcl", []byte(nameJob(labels[0], labels[1], labels[2])), &jobspec.Options{Env: []string{}})
		if err != nil {
			t.Fatalf("Parse of %v = %v", labels, err)
		}
		if got := fmt.Sprintf("%q %q %q", job.ID, job.TaskGroups[0].Name, job.TaskGroups[0].Tasks[0].Name); got != fmt.Sprintf("%s %s %s", labels[0], labels[1], labels[2]) {
			t.Errorf("names = %s, want %v", got, labels)
		}
	}
}

// ParseJSON (job run of a .json file) checks names through
// api.Job.Validate, as servers do.
func TestParseJSONRefusesPathNames(t *testing.T) {
	src := `{"ID": "j", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "..", "Driver": "exec"}]}]}`
	_, err := jobspec.ParseJSON("j.json", []byte(src), nil)
	want := `j.json:1:1: invalid job: group "g": task "..": invalid task name: ".." is not a name (names become path elements)`
	if err == nil || err.Error() != want {
		t.Fatalf("ParseJSON = %v, want %s", err, want)
	}
}
