package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

const reportHCL = `job "report" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["customer"]
  }
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/cat"
        args    = ["${NOMAD_TASK_DIR}/input"]
      }
      dispatch_payload {
        file = "input"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

func TestCLIJobVerbs(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	if code, out, stderr := cli("job", "run", "-detach", writeFile(t, dir, "report.hcl", reportHCL)); code != 0 {
		t.Fatalf("job run report: exit %d %q %q", code, out, stderr)
	}
	payload := writeFile(t, dir, "in.txt", "rows")
	code, _, stderr := cli("job", "dispatch", "-detach", "report", payload)
	if code != ExitError || !strings.Contains(stderr, "customer") {
		t.Errorf("dispatch without the required meta: exit %d stderr %q, want 1 naming the meta", code, stderr)
	}
	if code, _, _ := cli("job", "dispatch", "-meta", "novalue", "report"); code != ExitUsage {
		t.Errorf("dispatch -meta without =: exit %d, want %d", code, ExitUsage)
	}
	code, out, stderr := cli("job", "dispatch", "-detach", "-meta", "customer=acme", "report", payload)
	if code != 0 || !strings.Contains(out, "Dispatched Job ID = report/dispatch-") || !strings.Contains(out, "Evaluation ID: ") {
		t.Fatalf("job dispatch: exit %d out %q stderr %q", code, out, stderr)
	}
	code, out, _ = cli("job", "dispatch", "-json", "-meta", "customer=acme", "report", payload)
	var d api.JobDispatchResponse
	if code != 0 || json.Unmarshal([]byte(out), &d) != nil || !strings.HasPrefix(d.DispatchedJobID, "report/dispatch-") {
		t.Errorf("job dispatch -json: exit %d out %q", code, out)
	}

	web := writeFile(t, dir, "web.hcl", webHCL)
	cli("job", "run", "-detach", web)
	cli("job", "run", "-detach", writeFile(t, dir, "web2.hcl", strings.Replace(webHCL, `args    = ["300"]`, `args    = ["301"]`, 1)))
	if code, out, stderr := cli("job", "revert", "-detach", "web", "0"); code != 0 || !strings.Contains(out, "Evaluation ID") {
		t.Errorf("job revert web 0: exit %d out %q stderr %q", code, out, stderr)
	}
	if code, _, stderr := cli("job", "revert", "-detach", "web", "9"); code != ExitError || !strings.Contains(stderr, "no version 9") {
		t.Errorf("job revert to a missing version: exit %d stderr %q", code, stderr)
	}
	if code, out, stderr := cli("job", "scale", "-detach", "web", "5"); code != 0 || !strings.Contains(out, "Evaluation ID") {
		t.Errorf("job scale web 5: exit %d out %q stderr %q", code, out, stderr)
	}
	code, out, _ = cli("job", "inspect", "web")
	var req api.JobRegisterRequest
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil || req.Job.TaskGroups[0].Count != 5 || req.Job.Version != 3 {
		t.Errorf("after scale: exit %d job %+v, want count 5 at version 3", code, req.Job)
	}
	if code, _, _ := cli("job", "scale", "web", "many"); code != ExitUsage {
		t.Errorf("job scale with a bad count: exit %d, want %d", code, ExitUsage)
	}
	if code, out, _ := cli("job", "allocs", "web"); code != 0 || !strings.Contains(out, "No allocations placed") {
		t.Errorf("job allocs web (no nodes): exit %d out %q", code, out)
	}
	if code, out, _ := cli("job", "deployments", "web"); code != 0 || !strings.Contains(out, "web") && !strings.Contains(out, "No deployments") {
		t.Errorf("job deployments web: exit %d out %q", code, out)
	}
	code, out, _ = cli("eval", "list", "-job", "web")
	if code != 0 || !strings.Contains(out, "job-scaling") || strings.Contains(out, "report") {
		t.Errorf("eval list -job web: exit %d out %q, want web's evals only, the scaling one among them", code, out)
	}
	if code, _, stderr := cli("job", "periodic", "force", "web"); code != ExitError || !strings.Contains(stderr, "not a periodic job") {
		t.Errorf("periodic force of a service job: exit %d stderr %q", code, stderr)
	}
	if code, out, stderr := cli("system", "gc"); code != 0 {
		t.Errorf("system gc: exit %d out %q stderr %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "version", "-json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["Version"] != Version {
		t.Errorf("version -json: exit %d out %q", code, out)
	}
	if code, out, _ := runCLI(t, "-v"); code != 0 || !strings.Contains(out, "drover v"+Version) {
		t.Errorf("drover -v: exit %d out %q", code, out)
	}
}

// `job plan` exits 1 when allocations would change (as Nomad), 0 for an
// unchanged job, which plans as Ignore; running it again keeps its version.
func TestCLIJobPlanExitCodes(t *testing.T) {
	addr := startAPI(t)
	c := api.NewClient(addr)
	node := &api.Node{ID: "5a2b8f4e-0000-4000-8000-000000000001", SecretID: "s", Name: "n1", Datacenter: "dc1",
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000, TotalCpuCores: 4},
			Memory: api.NodeMemoryResources{MemoryMB: 8192}, Disk: api.NodeDiskResources{DiskMB: 10000}},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true}}}
	if _, err := c.RegisterNode(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := writeFile(t, dir, "web.hcl", webHCL)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	if code, out, _ := cli("job", "plan", file); code != ExitError || !strings.Contains(out, "2 create") {
		t.Errorf("plan of a new job: exit %d out %q, want 1 and 2 creates", code, out)
	}
	if code, out, stderr := cli("job", "run", file); code != 0 {
		t.Fatalf("job run: exit %d out %q stderr %q", code, out, stderr)
	}
	code, out, _ := cli("job", "plan", file)
	if code != 0 || !strings.Contains(out, "2 ignore") || strings.Contains(out, "create") {
		t.Errorf("plan of the unchanged job: exit %d out %q, want 0 and 2 ignore", code, out)
	}
	if code, _, _ := cli("job", "run", file); code != 0 {
		t.Errorf("running the unchanged job again: exit %d", code)
	}
	job, _, err := c.Job(t.Context(), "web", nil)
	if err != nil || job.Version != 0 {
		t.Errorf("after running the same job twice: version %d (%v), want 0", job.Version, err)
	}
	more := writeFile(t, dir, "web3.hcl", strings.Replace(webHCL, "count = 2", "count = 3", 1))
	if code, out, _ := cli("job", "plan", more); code != ExitError || !strings.Contains(out, "1 create") {
		t.Errorf("plan of a scale-up: exit %d out %q, want 1 and 1 create", code, out)
	}
}

// -namespace (or DROVER_NAMESPACE) reaches every command: a job in
// another namespace can be run, inspected and stopped.
func TestCLINamespaceFlag(t *testing.T) {
	addr := startAPI(t)
	file := writeFile(t, t.TempDir(), "web.hcl", webHCL)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	if code, _, stderr := cli("job", "run", "-detach", "-namespace", "prod", file); code != ExitError || !strings.Contains(stderr, `nonexistent namespace "prod"`) {
		t.Fatalf("job run -namespace prod before the namespace exists: exit %d %q", code, stderr)
	}
	if code, _, stderr := cli("namespace", "apply", "-description", "production", "prod"); code != 0 {
		t.Fatalf("namespace apply prod: exit %d %q", code, stderr)
	}
	if code, out, stderr := cli("job", "run", "-detach", "-namespace", "prod", file); code != 0 {
		t.Fatalf("job run -namespace prod: exit %d %q %q", code, out, stderr)
	}
	if code, _, _ := cli("job", "status", "web"); code != ExitError {
		t.Errorf("job status web in the default namespace: exit %d, want 1 (it is in prod)", code)
	}
	if code, out, _ := cli("job", "status", "-namespace", "prod", "web"); code != 0 || !strings.Contains(out, "prod") {
		t.Errorf("job status -namespace prod web: exit %d out %q", code, out)
	}
	if code, out, _ := cli("job", "status", "-namespace", "*"); code != 0 || !strings.Contains(out, "web") {
		t.Errorf("job status -namespace '*': exit %d out %q", code, out)
	}
	t.Setenv("DROVER_NAMESPACE", "prod")
	if code, out, stderr := cli("job", "stop", "-detach", "web"); code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("DROVER_NAMESPACE=prod job stop web: exit %d out %q stderr %q", code, out, stderr)
	}
	if code, out, _ := cli("job", "inspect", "web"); code != 0 || !strings.Contains(out, `"Stop": true`) {
		t.Errorf("job inspect after stop: exit %d out %q", code, out)
	}
}

// job run/plan/validate read JSON jobs, such as what job inspect prints.
func TestCLIJSONJobFile(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	code, out, _ := cli("job", "run", "-output", writeFile(t, dir, "web.hcl", webHCL))
	if code != 0 {
		t.Fatalf("job run -output: exit %d", code)
	}
	js := writeFile(t, dir, "web.json", out)
	if code, out, stderr := runCLI(t, "job", "validate", js); code != 0 || !strings.Contains(out, "Job validation successful") {
		t.Errorf("job validate web.json: exit %d out %q stderr %q", code, out, stderr)
	}
	if code, out, stderr := cli("job", "run", "-detach", js); code != 0 || !strings.Contains(out, "Evaluation ID") {
		t.Errorf("job run web.json: exit %d out %q stderr %q", code, out, stderr)
	}
	bad := writeFile(t, dir, "bad.json", "{\n  \"ID\": \"x\",\n  \"Bogus\": true\n}")
	if code, _, stderr := runCLI(t, "job", "validate", bad); code != ExitError || !strings.Contains(stderr, bad+":1:1: JSON: unknown field \"Bogus\"") {
		t.Errorf("job validate bad.json: exit %d stderr %q, want 1 and file:line:col", code, stderr)
	}
}

// job status of a periodic job shows its next launch and its children.
func TestCLIPeriodicJobStatus(t *testing.T) {
	addr := startAPI(t)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	hcl := strings.Replace(webHCL, `job "web" {`, "job \"nightly\" {\n  type = \"batch\"\n  periodic {\n    crons = [\"0 3 * * *\"]\n  }", 1)
	if code, out, stderr := cli("job", "run", "-detach", writeFile(t, t.TempDir(), "nightly.hcl", hcl)); code != 0 {
		t.Fatalf("job run nightly: exit %d %q %q", code, out, stderr)
	}
	code, out, _ := cli("job", "status", "nightly")
	if code != 0 || !strings.Contains(out, "Next Periodic Launch") || !strings.Contains(out, "T03:00:00Z (") || !strings.Contains(out, "No instances found") {
		t.Errorf("job status of a periodic job: exit %d out %q", code, out)
	}
	if code, out, stderr := cli("job", "periodic", "force", "-detach", "nightly"); code != 0 {
		t.Fatalf("periodic force: exit %d %q %q", code, out, stderr)
	}
	code, out, _ = cli("job", "status", "nightly")
	if code != 0 || !strings.Contains(out, "Previously Launched Jobs") || !strings.Contains(out, "nightly/periodic-") {
		t.Errorf("job status after a forced launch: exit %d out %q", code, out)
	}
}
