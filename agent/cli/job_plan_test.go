package cli

import (
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// What a new user sees first: `job plan` of a new job lists the fields
// its file sets (not every default, which -verbose adds), and a job whose
// driver is unhealthy on the only node says which driver and why, without
// the computed-class hashes.
func TestCLIJobPlanAndRunReadable(t *testing.T) {
	addr := startAPI(t)
	c := api.NewClient(addr)
	node := &api.Node{ID: "5a2b8f4e-0000-4000-8000-000000000002", SecretID: "s", Name: "n1", Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000, TotalCpuCores: 4},
			Memory: api.NodeMemoryResources{MemoryMB: 8192}, Disk: api.NodeDiskResources{DiskMB: 10000}},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true},
			"containerd": {Detected: true, HealthDescription: "containerd socket /run/containerd/containerd.sock not found"}}}
	if _, err := c.RegisterNode(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}

	// cpu = 100 is the default, so it is not shown either.
	code, out, stderr := cli("job", "plan", writeFile(t, dir, "web.hcl", webHCL))
	want := `+ Job: "web"
+ Task Group: "web" (2 create)
    + Count: "2"
  + Task: "srv"
      + Config.args[0]: "300"
      + Config.command: "/bin/sleep"
      + Driver: "exec"
      + Resources.MemoryMB: "64"

Scheduler dry-run:
- All tasks successfully allocated.`
	if code != ExitError || !strings.HasPrefix(out, want) {
		t.Errorf("plan of a new job: exit %d stderr %q, out:\n%s\nwant it to start with\n%s", code, stderr, out, want)
	}
	_, verbose, _ := cli("job", "plan", "-verbose", writeFile(t, dir, "web.hcl", webHCL))
	for _, d := range []string{`+ Priority: "50"`, `+ KillTimeout: "5s"`, `+ RestartPolicy.Attempts:`} {
		if !strings.Contains(verbose, d) {
			t.Errorf("plan -verbose lacks the default %s:\n%s", d, verbose)
		}
	}

	ctrd := strings.Replace(webHCL, `driver = "exec"`, `driver = "containerd"`, 1)
	code, out, _ = cli("job", "run", writeFile(t, dir, "ctrd.hcl", ctrd))
	reason := `- driver "containerd" is not healthy on 1 node: containerd socket /run/containerd/containerd.sock not found`
	if code != ExitUsage || !strings.Contains(out, reason) || strings.Contains(out, "v1:") || strings.Contains(out, "Class") {
		t.Errorf("job run with containerd down: exit %d, out:\n%s\nwant 2, %q and no class hashes", code, out, reason)
	}
	code, out, _ = cli("job", "status", "web")
	if code != ExitOK || !strings.Contains(out, reason) || strings.Contains(out, "v1:") {
		t.Errorf("job status with containerd down: exit %d, out:\n%s\nwant %q and no class hashes", code, out, reason)
	}
}
