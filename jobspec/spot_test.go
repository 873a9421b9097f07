package jobspec

import (
	"strings"
	"testing"
)

// spot = "allow" | "never" | "prefer" at job and group level; anything
// else is an error at the value.
func TestSpot(t *testing.T) {
	src := `job "j" {
  spot = "never"
  group "serve" {
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
    }
  }
  group "train" {
    spot = "prefer"
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
    }
  }
}
`
	j, err := Parse("spot.hcl", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := j.SpotChoice(j.TaskGroups[0]); got != "never" {
		t.Errorf("serve: spot %q, want never (the job's)", got)
	}
	if got := j.SpotChoice(j.TaskGroups[1]); got != "prefer" {
		t.Errorf("train: spot %q, want prefer (the group's)", got)
	}
	_, err = Parse("bad.hcl", []byte(strings.Replace(src, `"never"`, `"sometimes"`, 1)), nil)
	if err == nil || !strings.Contains(err.Error(), `bad.hcl:2:10: Invalid spot "sometimes"`) {
		t.Errorf("bad spot: err %v, want the position and the allowed values", err)
	}
}
