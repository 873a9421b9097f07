package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

const rollingHCL = `job "web" {
  update {
    max_parallel = 1
    auto_revert  = true
  }
  group "web" {
    count = 2
    task "srv" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

func TestCLIDeployment(t *testing.T) {
	addr := startAPI(t)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	code, out, _ := cli("deployment", "list")
	if code != 0 || !strings.Contains(out, "No deployments found") {
		t.Fatalf("deployment list with none: exit %d %q", code, out)
	}
	// A node (no client runs: the allocs stay pending) so the job places.
	c := api.NewClient(addr)
	n := &api.Node{
		ID: "0d0e0f00-0000-4000-8000-000000000001", SecretID: "s", Name: "n1", Datacenter: "dc1", NodePool: "default",
		Status:     api.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1", "cpu.arch": "amd64"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000},
			Memory: api.NodeMemoryResources{MemoryMB: 4096}, Disk: api.NodeDiskResources{DiskMB: 10000}},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true, UpdateTime: time.Now()}},
	}
	if _, err := c.RegisterNode(context.Background(), n); err != nil {
		t.Fatalf("register node: %v", err)
	}
	file := writeFile(t, t.TempDir(), "web.hcl", rollingHCL)
	if code, out, stderr := cli("job", "run", file); code != 0 {
		t.Fatalf("job run: exit %d out %q stderr %q", code, out, stderr)
	}
	code, out, _ = cli("deployment", "list", "-json")
	var ds []*api.Deployment
	if code != 0 || json.Unmarshal([]byte(out), &ds) != nil || len(ds) != 1 {
		t.Fatalf("deployment list -json: exit %d %q, want one deployment", code, out)
	}
	id := ds[0].ID
	code, out, _ = cli("deployment", "list")
	if code != 0 || !strings.Contains(out, id[:8]) || !strings.Contains(out, "running") {
		t.Errorf("deployment list: exit %d %q, want %s running", code, out, id[:8])
	}
	code, out, _ = cli("deployment", "status", id[:8])
	if code != 0 || !strings.Contains(out, "Task Group") || !strings.Contains(out, "web") || !strings.Contains(out, "= running") {
		t.Errorf("deployment status: exit %d %q", code, out)
	}
	code, out, _ = cli("job", "status", "web")
	if code != 0 || !strings.Contains(out, "Latest Deployment") || !strings.Contains(out, "Healthy") {
		t.Errorf("job status web: exit %d %q, want the latest deployment", code, out)
	}
	if code, out, _ = cli("deployment", "pause", id[:8]); code != 0 || !strings.Contains(out, "paused") {
		t.Errorf("deployment pause: exit %d %q", code, out)
	}
	if code, out, _ = cli("deployment", "resume", id); code != 0 || !strings.Contains(out, "resumed") {
		t.Errorf("deployment resume: exit %d %q", code, out)
	}
	if code, out, _ = cli("deployment", "promote", "-group", "nope", id); code != ExitError {
		t.Errorf("deployment promote -group nope: exit %d %q, want 1", code, out)
	}
	code, out, _ = cli("deployment", "fail", id)
	if code != 0 || !strings.Contains(out, "marked as failed") {
		t.Errorf("deployment fail: exit %d %q", code, out)
	}
	if code, out, stderr := cli("deployment", "fail", id); code != ExitError || !strings.Contains(stderr, "not active") {
		t.Errorf("deployment fail twice: exit %d out %q stderr %q, want 1 and not active", code, out, stderr)
	}
	if code, _, _ = cli("deployment", "status", "ffffffff"); code != ExitError {
		t.Errorf("deployment status of a missing one: exit %d, want 1", code)
	}
	if code, _, _ = cli("deployment", "status"); code != ExitUsage {
		t.Errorf("deployment status without ID: exit %d, want 2", code)
	}
}
