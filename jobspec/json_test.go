package jobspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

func TestParseJSON(t *testing.T) {
	wrapped := `{"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec", "Config": {"command": "/bin/true"}}]}]}}`
	bare := `  {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "exec"}]}]}`
	for name, src := range map[string]string{"wrapped": wrapped, "bare": bare} {
		if !IsJSON([]byte(src)) {
			t.Errorf("%s: not detected as JSON", name)
		}
		job, err := ParseJSON("web.json", []byte(src), &Options{Namespace: "prod"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if job.ID != "web" || job.Namespace != "prod" || job.Type != api.JobTypeService || job.TaskGroups[0].Count != 1 {
			t.Errorf("%s: job %+v", name, job)
		}
	}
	if IsJSON([]byte("job \"x\" {}")) {
		t.Error("HCL detected as JSON")
	}
	for src, want := range map[string]string{
		"{\n  \"ID\": 3}":                     "web.json:2:10: JSON: cannot unmarshal number",
		`{"ID": "x", "Bogus": 1}`:             `unknown field "Bogus"`,
		`{"ID": "x"`:                          "web.json:1:",
		`{"ID": "x", "TaskGroups": []} {}`:    "web.json:1:32: JSON: invalid character",
		`{"Job": {"ID": "x", "Type": "nah"}}`: "web.json:1:1:",
	} {
		_, err := ParseJSON("web.json", []byte(src), nil)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, api.ErrInvalidJob) {
			t.Errorf("ParseJSON(%q) = %v, want an invalid-job error containing %q", src, err, want)
		}
	}
}
