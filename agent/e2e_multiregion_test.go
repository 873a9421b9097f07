package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// multiregionHCL is a job in eu, us and ap (that order, one region at a
// time) whose task fails at once in the regions whose meta says so.
func multiregionHCL(id, onFailure string, failIn ...string) string {
	var regions strings.Builder
	for _, r := range []string{"eu", "us", "ap"} {
		mode := "ok"
		for _, f := range failIn {
			if f == r {
				mode = "fail"
			}
		}
		fmt.Fprintf(&regions, "    region %q {\n      count = 1\n      meta {\n        mode = %q\n      }\n    }\n", r, mode)
	}
	return fmt.Sprintf(`job %q {
  update {
    max_parallel      = 1
    health_check      = "task_states"
    min_healthy_time  = "2s"
    healthy_deadline  = "1m"
    progress_deadline = "2m"
  }
  multiregion {
    strategy {
      max_parallel = 1
      on_failure   = %q
    }
%s  }
  group "g" {
    count = 0
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "if [ \"$NOMAD_META_mode\" = fail ]; then exit 1; fi; exec sleep 600"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`, id, onFailure, regions.String())
}

// regionDeployment is region's newest deployment of job ("" when none),
// read through c's server (forwarded by region).
func regionDeployment(c *api.Client, region, job string) string {
	rc := *c
	rc.Region = region
	d, _, err := rc.JobLatestDeployment(context.Background(), job, nil)
	if err != nil || d == nil {
		return ""
	}
	return d.Status
}

// TestE2EMultiregion: three regions on loopback (a server and a client
// each, mutual TLS). A multiregion job run through eu's CLI is
// registered in eu, us and ap and deployed in that order: a region
// places nothing before its turn, a finished one waits blocked, and the
// last one unblocks all; `job status` shows each region. When us fails,
// on_failure "fail_all" fails eu and ap too; the default fails ap and
// leaves eu blocked.
func TestE2EMultiregion(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	regions := []string{"eu", "us", "ap"}
	fc := startFederation(t, regions, nil, regions...)
	eu := fc.servers["eu"][0]
	c := fc.api(t, eu, "")
	run := func(id, hcl string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), id+".hcl")
		if err := os.WriteFile(file, []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := fc.cli(t, eu, "job", "run", "-detach", file); err != nil {
			t.Fatalf("job run %s: %v\n%s", id, err, out)
		}
	}
	status := func(id string) map[string]string {
		out := map[string]string{}
		for _, r := range regions {
			out[r] = regionDeployment(c, r, id)
		}
		return out
	}
	waitStatus := func(id string, want map[string]string) {
		t.Helper()
		var got map[string]string
		testproc.Eventually(t, 90*time.Second, fmt.Sprintf("%s deployments %v", id, want), func() bool {
			got = status(id)
			for r, w := range want {
				if got[r] != w {
					return false
				}
			}
			return true
		})
	}

	run("mr-ok", multiregionHCL("mr-ok", ""))
	waitStatus("mr-ok", map[string]string{"us": api.DeploymentStatusPending, "ap": api.DeploymentStatusPending})
	for _, r := range []string{"us", "ap"} {
		rc := *c
		rc.Region = r
		if allocs, _, err := rc.JobAllocations(context.Background(), "mr-ok", nil); err != nil || len(allocs) != 0 {
			t.Errorf("%s before its turn: allocs %d (%v), want none", r, len(allocs), err)
		}
	}
	// Each region starts only once the one before it has finished.
	var seen map[string]string
	testproc.Eventually(t, 90*time.Second, "us starts", func() bool {
		seen = status("mr-ok")
		return seen["us"] != api.DeploymentStatusPending && seen["us"] != ""
	})
	if seen["eu"] != api.DeploymentStatusBlocked || seen["ap"] != api.DeploymentStatusPending {
		t.Errorf("when us started: %v, want eu blocked and ap pending", seen)
	}
	testproc.Eventually(t, 90*time.Second, "ap starts", func() bool {
		seen = status("mr-ok")
		return seen["ap"] != api.DeploymentStatusPending && seen["ap"] != ""
	})
	if seen["eu"] != api.DeploymentStatusBlocked && seen["eu"] != api.DeploymentStatusSuccessful {
		t.Errorf("when ap started: %v, want eu blocked (or, once ap finished, successful)", seen)
	}
	ok := api.DeploymentStatusSuccessful
	waitStatus("mr-ok", map[string]string{"eu": ok, "us": ok, "ap": ok})
	for _, r := range regions {
		waitJobRunning(t, fc.api(t, eu, r), "mr-ok", 1)
	}
	out, err := fc.cli(t, eu, "job", "status", "mr-ok")
	if err != nil {
		t.Fatalf("job status: %v\n%s", err, out)
	}
	_, table, _ := strings.Cut(out, "Multiregion Deployment")
	for _, r := range regions {
		if !strings.Contains(table, r) || strings.Count(table, "successful") != 3 {
			t.Errorf("job status lacks %s's successful deployment:\n%s", r, out)
		}
	}

	failed, blocked := api.DeploymentStatusFailed, api.DeploymentStatusBlocked
	run("mr-all", multiregionHCL("mr-all", "fail_all", "us"))
	waitStatus("mr-all", map[string]string{"eu": failed, "us": failed, "ap": failed})

	run("mr-default", multiregionHCL("mr-default", "", "us"))
	waitStatus("mr-default", map[string]string{"eu": blocked, "us": failed, "ap": failed})
	rc := *c
	rc.Region = "ap"
	if allocs, _, err := rc.JobAllocations(context.Background(), "mr-default", nil); err != nil || len(allocs) != 0 {
		t.Errorf("ap after us failed: allocs %d (%v), want none", len(allocs), err)
	}
}
