package jobspec

import (
	"testing"
	"time"
)

func TestParseIdleTimeout(t *testing.T) {
	j, err := Parse("nb.hcl", []byte(`job "nb" {
  idle_timeout = "2h"
  max_disruption = 2
  min_runtime = "1h"
  group "a" {
    idle_timeout = "30m"
    min_runtime = "10m"
    task "t" {
      driver = "raw_exec"
      config { command = "sleep" }
    }
  }
  group "b" {
    task "t" {
      driver = "raw_exec"
      config { command = "sleep" }
    }
  }
}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if j.IdleTimeout != 2*time.Hour || j.TaskGroups[0].IdleTimeout != 30*time.Minute || j.TaskGroups[1].IdleTimeout != 0 {
		t.Errorf("idle_timeout: job %v, groups %v %v; want 2h, 30m, 0", j.IdleTimeout, j.TaskGroups[0].IdleTimeout, j.TaskGroups[1].IdleTimeout)
	}
	if j.MaxDisruption != 2 || j.TaskGroups[0].MinRuntime != 10*time.Minute || j.MinRuntimeOf("a") != 10*time.Minute || j.MinRuntimeOf("b") != time.Hour {
		t.Errorf("max_disruption %d, min_runtime of a %v, b %v; want 2, 10m, 1h", j.MaxDisruption, j.MinRuntimeOf("a"), j.MinRuntimeOf("b"))
	}
}
