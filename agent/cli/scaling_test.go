package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

const scaledHCL = `job "scaled" {
  group "g" {
    count = 2
    scaling {
      min = 1
      max = 4
      policy {
        cooldown = "1m"
      }
    }
    task "t" {
      driver = "raw_exec"
      config { command = "/bin/true" }
    }
  }
}
`

// A group's scaling block is a policy an autoscaler can list and read
// (/v1/scaling/policies, /v1/scaling/policy/{id}), and job scale keeps
// the count within its min and max.
func TestCLIScalingPolicies(t *testing.T) {
	addr := startAPI(t)
	c := api.NewClient(addr)
	ctx := context.Background()
	file := writeFile(t, t.TempDir(), "scaled.hcl", scaledHCL)
	if code, _, stderr := runCLI(t, "job", "run", "-detach", "-address", addr, file); code != 0 {
		t.Fatalf("job run: %d %q", code, stderr)
	}
	var stubs []*api.ScalingPolicyListStub
	if _, err := c.Query(ctx, "/v1/scaling/policies", &stubs, nil); err != nil || len(stubs) != 1 {
		t.Fatalf("policies: %+v %v", stubs, err)
	}
	if s := stubs[0]; s.Target["Job"] != "scaled" || s.Target["Group"] != "g" || !s.Enabled || s.Type != api.ScalingPolicyTypeHorizontal {
		t.Errorf("policy stub %+v", s)
	}
	var p api.ScalingPolicy
	if _, err := c.Query(ctx, "/v1/scaling/policy/"+stubs[0].ID, &p, nil); err != nil || p.Min != 1 || p.Max != 4 || p.Policy["cooldown"] != "1m" {
		t.Fatalf("policy: %+v %v", p, err)
	}
	if code, _, stderr := runCLI(t, "job", "scale", "-address", addr, "-detach", "scaled", "g", "9"); code != ExitError || !strings.Contains(stderr, "max 4") {
		t.Errorf("scale above max: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "job", "scale", "-address", addr, "-detach", "scaled", "g", "3"); code != 0 {
		t.Errorf("scale within bounds: %d %q", code, stderr)
	}
	bad := writeFile(t, t.TempDir(), "bad.hcl", strings.Replace(scaledHCL, "count = 2", "count = 7", 1))
	if code, _, stderr := runCLI(t, "job", "validate", bad); code != ExitError || !strings.Contains(stderr, "outside [min 1, max 4]") {
		t.Errorf("count outside the scaling bounds: %d %q", code, stderr)
	}
	var none []*api.ScalingPolicyListStub
	if _, err := c.Query(ctx, "/v1/scaling/policies", &none, &api.QueryOptions{Params: map[string]string{"job": "other"}}); err != nil || len(none) != 0 {
		t.Errorf("policies of another job: %+v %v", none, err)
	}
}
