package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

const gpuJobHCL = `job "train" {
  type = "batch"
  group "train" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 2000
        memory = 2048
        device "nvidia/gpu" {
          count = 2
        }
      }
    }
  }
}
`

// TestCLIUsage: an alloc placed on a registered GPU node, reported running
// and then finished by the "client" (this test, through the node API),
// shows up in drover usage as a table, CSV and JSON.
func TestCLIUsage(t *testing.T) {
	addr, srv := startAgentServer(t, false)
	ctx := context.Background()
	n := &api.Node{ID: "c0ffee00-0000-4000-8000-000000000001", SecretID: "s3cret", Name: "gpu1", Datacenter: "dc1",
		NodePool: "default", HTTPAddr: "127.0.0.1:1", Status: api.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1", "cpu.arch": "amd64"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000, TotalCpuCores: 8},
			Memory: api.NodeMemoryResources{MemoryMB: 16384}, Disk: api.NodeDiskResources{DiskMB: 100000},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "H100",
				Instances: []*api.NodeDevice{{ID: "GPU-0", Healthy: true}, {ID: "GPU-1", Healthy: true}}}}},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true, UpdateTime: time.Now()}}}
	c := api.NewClient(addr)
	if _, err := c.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	if code, out, stderr := cli("job", "run", "-detach", writeFile(t, t.TempDir(), "train.hcl", gpuJobHCL)); code != 0 {
		t.Fatalf("job run: exit %d %q %q", code, out, stderr)
	}
	var allocID string
	testcluster.WaitState(t, srv, 10*time.Second, "an alloc placed", func() bool {
		stubs, _, err := c.JobAllocations(ctx, "train", &api.QueryOptions{WaitTime: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if len(stubs) > 0 {
			allocID = stubs[0].ID
		}
		return allocID != ""
	})
	nc := api.NewClient(addr)
	nc.Headers = nethttp.Header{api.NodeSecretHeader: {n.SecretID}}
	started := time.Now().Add(-2 * time.Hour)
	report := func(status string, finished time.Time) {
		t.Helper()
		u := &api.Allocation{ID: allocID, ClientStatus: status,
			TaskStates: map[string]*api.TaskState{"t": {State: api.TaskStateRunning, StartedAt: started, FinishedAt: finished}}}
		if err := nc.UpdateAllocsFromClient(ctx, n.ID, []*api.Allocation{u}); err != nil {
			t.Fatal(err)
		}
	}
	report(api.AllocClientStatusRunning, time.Time{})
	report(api.AllocClientStatusComplete, started.Add(90*time.Minute))

	code, out, stderr := cli("usage", "-by", "job", "-csv", "-from", "3h")
	if code != 0 {
		t.Fatalf("usage -csv: exit %d %q %q", code, out, stderr)
	}
	lines, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(lines) < 2 || lines[0][0] != "key" || lines[0][3] != "gpu_seconds" || lines[0][7] != "gpu_seconds:nvidia/gpu/H100" {
		t.Fatalf("usage -csv = %q (%v), want the documented header and rows", out, err)
	}
	var sum float64
	for _, l := range lines[1:] {
		v, _ := strconv.ParseFloat(l[7], 64)
		if l[0] == "default/train" {
			sum += v
		}
	}
	if sum < 2*5400-1e-6 || sum > 2*5400+1e-6 {
		t.Errorf("GPU-seconds of default/train = %v, want %v:\n%s", sum, 2*5400, out)
	}

	code, out, _ = cli("usage")
	if code != 0 || !strings.Contains(out, "Queue") || !strings.Contains(out, api.DefaultQueue) || !strings.Contains(out, "nvidia/gpu/H100=") {
		t.Errorf("usage (table): exit %d\n%s", code, out)
	}
	code, out, _ = cli("usage", "-json", "-by", "namespace", "-to", time.Now().UTC().Format(time.RFC3339))
	var resp api.UsageResponse
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || resp.By != api.UsageByNamespace || len(resp.Rows) == 0 {
		t.Errorf("usage -json: exit %d %q", code, out)
	}
	code, out, _ = cli("usage", "-from", "1", "-to", "3600")
	if code != 0 || !strings.Contains(out, "No usage") {
		t.Errorf("usage of 1970: exit %d %q", code, out)
	}
	if code, _, stderr := cli("usage", "-by", "tenant"); code != ExitUsage || !strings.Contains(stderr, "tenant") {
		t.Errorf("usage -by tenant: exit %d %q, want %d", code, stderr, ExitUsage)
	}
	if code, _, stderr := cli("usage", "-from", "yesterday"); code != ExitUsage {
		t.Errorf("usage -from yesterday: exit %d %q, want %d", code, stderr, ExitUsage)
	}
}
