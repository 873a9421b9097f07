package cli

import (
	"bytes"
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

const shareQueues = `queue "infer" {
  guaranteed { gpu = 2.25 }
  limit { gpu = 3.5 }
}
`

const shareJobHCL = `job "infer" {
  type  = "batch"
  queue = "infer"
  group "infer" {
    count = 2
    task "srv" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 500
        memory = 256
        device "nvidia/gpu" {
          count = 1
          share {
            fraction = 0.25
            mode     = "mps"
            limit    = 0.5
          }
        }
      }
    }
  }
}
`

// TestCLIGPUShares: two allocs each holding a quarter of a GPU (mps,
// limit 0.5) on a registered GPU node. The queue commands keep the
// fractions (allocated 0.5 of a 2.25 guarantee and a 3.5 limit), node
// status shows each shared GPU's mode, holders and free part, alloc
// status the share given, job status the share asked, and usage the
// fractional GPU-hours (2 x 0.25 GPU x 1.5 h) as a table, CSV and JSON.
func TestCLIGPUShares(t *testing.T) {
	addr, srv := startAgentServer(t, false)
	ctx := context.Background()
	mem := int64(81920)
	n := &api.Node{ID: "c0ffee00-0000-4000-8000-0000000000a1", SecretID: "s3cret", Name: "gpu1", Datacenter: "dc1",
		NodePool: "default", HTTPAddr: "127.0.0.1:1", Status: api.NodeStatusReady,
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1", "cpu.arch": "amd64"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 8000, TotalCpuCores: 8},
			Memory: api.NodeMemoryResources{MemoryMB: 16384}, Disk: api.NodeDiskResources{DiskMB: 100000},
			Devices: []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "A100",
				Attributes: map[string]*api.Attribute{"memory": {IntVal: &mem, Unit: "MiB"}},
				Instances:  []*api.NodeDevice{{ID: "GPU-0", Healthy: true}, {ID: "GPU-1", Healthy: true}}}}},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true, UpdateTime: time.Now()}}}
	c := api.NewClient(addr)
	if _, err := c.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	dir := t.TempDir()
	if code, out, stderr := cli("queue", "apply", writeFile(t, dir, "q.hcl", shareQueues)); code != 0 {
		t.Fatalf("queue apply: exit %d %q %q", code, out, stderr)
	}
	if code, out, stderr := cli("job", "run", "-detach", writeFile(t, dir, "infer.hcl", shareJobHCL)); code != 0 {
		t.Fatalf("job run: exit %d %q %q", code, out, stderr)
	}
	var stubs []*api.AllocListStub
	testcluster.WaitState(t, srv, 10*time.Second, "two allocs placed", func() bool {
		var err error
		stubs, _, err = c.JobAllocations(ctx, "infer", &api.QueryOptions{WaitTime: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return len(stubs) == 2
	})
	// Where each alloc's quarter went (the scheduler picks the GPUs).
	held := map[string][]string{} // GPU ID -> short alloc IDs
	for _, s := range stubs {
		d := s.AllocatedResources.Tasks["srv"].Devices[0]
		if d.Share == nil || d.Share.Milli != 250 || d.Share.Mode != api.ShareModeMPS || d.Share.LimitMilli != 500 || len(d.DeviceIDs) != 1 {
			t.Fatalf("alloc %s device grant = %+v (share %+v), want a quarter of one GPU, mps, limit 0.5", s.ID, d, d.Share)
		}
		held[d.DeviceIDs[0]] = append(held[d.DeviceIDs[0]], short(s.ID))
	}

	// The "client" reports both allocs running since two hours ago (and,
	// once the status commands are checked, finished after 90 minutes).
	nc := api.NewClient(addr)
	nc.Headers = nethttp.Header{api.NodeSecretHeader: {n.SecretID}}
	started := time.Now().Add(-2 * time.Hour)
	report := func(status string) {
		t.Helper()
		var up []*api.Allocation
		for _, s := range stubs {
			ts := &api.TaskState{State: api.TaskStateRunning, StartedAt: started}
			if status == api.AllocClientStatusComplete {
				ts.FinishedAt = started.Add(90 * time.Minute)
			}
			up = append(up, &api.Allocation{ID: s.ID, ClientStatus: status, TaskStates: map[string]*api.TaskState{"srv": ts}})
		}
		if err := nc.UpdateAllocsFromClient(ctx, n.ID, up); err != nil {
			t.Fatal(err)
		}
	}
	report(api.AllocClientStatusRunning)

	code, out, _ := cli("queue", "list")
	if code != 0 || !strings.Contains(out, "0.5/2.25/3.5") {
		t.Errorf("queue list: exit %d, want infer's GPUs as 0.5/2.25/3.5:\n%s", code, out)
	}
	code, out, _ = cli("queue", "status", "infer")
	if gpuRow := lineWith(out, "gpu "); code != 0 || !strings.Contains(gpuRow, "0.5") || !strings.Contains(gpuRow, "2.25") || !strings.Contains(gpuRow, "3.5") {
		t.Errorf("queue status infer: exit %d, want the gpu row with 0.5, 2.25 and 3.5:\n%s", code, out)
	}

	code, out, _ = cli("node", "status", n.ID)
	if code != 0 {
		t.Fatalf("node status: exit %d\n%s", code, out)
	}
	summary := "Devices: 2 nvidia/gpu/A100 (2 healthy, " + strconv.Itoa(len(held)) + " in use, " + strconv.Itoa(len(held)) + " shared)"
	if !strings.Contains(out, summary) || !strings.Contains(out, "Device Shares") {
		t.Errorf("node status lacks %q and the Device Shares table:\n%s", summary, out)
	}
	for gpu, allocs := range held {
		row := lineWith(out, " "+gpu+" ")
		free := strconv.FormatFloat(1-0.25*float64(len(allocs)), 'f', 3, 64)
		if !strings.Contains(row, "mps") || !strings.HasSuffix(strings.TrimSpace(row), free) {
			t.Errorf("node status: %s's share row %q, want mode mps and %s free:\n%s", gpu, row, free, out)
		}
		for _, a := range allocs {
			if !strings.Contains(row, a+" 0.250 (limit 0.5, 20480 MiB)") {
				t.Errorf("node status: %s's share row %q lacks %q", gpu, row, a+" 0.250 (limit 0.5, 20480 MiB)")
			}
		}
	}
	code, out, _ = cli("node", "status", "-verbose", n.ID)
	if code != 0 || !strings.Contains(out, stubs[0].ID[:8]+" 0.250 mps, limit 0.5, 20480 MiB") {
		t.Errorf("node status -verbose: exit %d, want %q in the device table:\n%s", code, stubs[0].ID[:8]+" 0.250 mps, limit 0.5, 20480 MiB", out)
	}

	a := stubs[0]
	code, out, _ = cli("alloc", "status", a.ID)
	want := "Device nvidia/gpu/A100: " + a.AllocatedResources.Tasks["srv"].Devices[0].DeviceIDs[0] + " 0.250 mps, limit 0.5, 20480 MiB"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("alloc status: exit %d, want %q:\n%s", code, want, out)
	}
	code, out, _ = cli("job", "status", "infer")
	if row := lineWith(out, "nvidia/gpu"); code != 0 || !strings.Contains(out, "\nDevices\n") ||
		strings.Join(strings.Fields(row), " ") != "infer srv nvidia/gpu 1 0.25 mps, limit 0.5" {
		t.Errorf("job status: exit %d, want a Devices table with the share asked:\n%s", code, out)
	}

	report(api.AllocClientStatusComplete)
	const wantSecs = 2 * 0.25 * 5400 // 0.75 GPU-hours
	code, out, stderr := cli("usage", "-by", "job", "-csv", "-from", "3h")
	lines, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(lines) < 2 || lines[0][7] != "gpu_seconds:nvidia/gpu/A100" {
		t.Fatalf("usage -csv: exit %d %q %q (%v)", code, out, stderr, err)
	}
	var sum float64
	for _, l := range lines[1:] {
		if l[0] == "default/infer" {
			v, _ := strconv.ParseFloat(l[7], 64)
			sum += v
		}
	}
	if sum < wantSecs-1e-6 || sum > wantSecs+1e-6 {
		t.Errorf("GPU-seconds of default/infer = %v, want %v (a quarter GPU each):\n%s", sum, wantSecs, out)
	}
	code, out, _ = cli("usage", "-by", "job", "-json", "-from", "3h")
	var resp api.UsageResponse
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil {
		t.Fatalf("usage -json: exit %d %q", code, out)
	}
	sum = 0
	for _, r := range resp.Rows {
		if r.Key == "default/infer" {
			sum += r.GPUSeconds["nvidia/gpu/A100"]
		}
	}
	if sum < wantSecs-1e-6 || sum > wantSecs+1e-6 {
		t.Errorf("usage -json: GPU-seconds of default/infer = %v, want %v:\n%s", sum, wantSecs, out)
	}
	// The table has an hour's bucket each: the hours of the two buckets the
	// 90 minutes fall into add up to 0.75, printed to the thousandth.
	code, out, _ = cli("usage", "-by", "job", "-from", "3h")
	var hours float64
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[2] == "default/infer" {
			v, err := strconv.ParseFloat(f[3], 64)
			if err != nil || len(f[3]) != len("0.000") {
				t.Errorf("usage: GPU hours %q, want a number to the thousandth", f[3])
			}
			hours += v
		}
	}
	if code != 0 || hours < 0.749 || hours > 0.751 {
		t.Errorf("usage: GPU hours of default/infer = %v, want 0.75:\n%s", hours, out)
	}
}

// lineWith is the first line of out containing s ("" if none).
func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// A share's grant and ask print with their mode, limit and memory; whole
// instances print as before.
func TestShareStrings(t *testing.T) {
	for _, c := range []struct {
		d    *api.AllocatedDeviceResource
		want string
	}{
		{&api.AllocatedDeviceResource{DeviceIDs: []string{"GPU-1", "GPU-2"}}, "GPU-1, GPU-2"},
		{&api.AllocatedDeviceResource{DeviceIDs: []string{"GPU-1"}, Share: &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS, LimitMilli: 500}},
			"GPU-1 0.250 mps, limit 0.5"},
		{&api.AllocatedDeviceResource{DeviceIDs: []string{"GPU-1", "GPU-2"}, Share: &api.AllocatedShare{Milli: 125, Mode: api.ShareModeTimeSlicing, MemoryMB: 10240}},
			"GPU-1, GPU-2 0.125 time-slicing each, 10240 MiB"},
	} {
		if got := deviceGrantString(c.d); got != c.want {
			t.Errorf("deviceGrantString(%+v) = %q, want %q", c.d.Share, got, c.want)
		}
	}
	for _, c := range []struct {
		s    *api.DeviceShare
		want string
	}{
		{nil, "-"},
		{&api.DeviceShare{Fraction: 0.25}, "0.25 time-slicing"},
		{&api.DeviceShare{MemoryMB: 10240, Mode: api.ShareModeMPS, Limit: 0.5}, "10240 MiB mps, limit 0.5"},
	} {
		if got := askString(c.s); got != c.want {
			t.Errorf("askString(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// The node's device summary counts shared instances and lists each with
// its mode, holders and free part; a node without shares prints as before
// (TestPrintDevices).
func TestPrintDeviceSummaryShares(t *testing.T) {
	n := &api.Node{ID: "n1", NodeResources: &api.NodeResources{Devices: []*api.NodeDeviceResource{{
		Vendor: "nvidia", Type: "gpu", Name: "A100",
		Instances: []*api.NodeDevice{{ID: "GPU-a", Healthy: true}, {ID: "GPU-b", Healthy: true}, {ID: "GPU-c", Healthy: true}},
	}}}}
	grant := func(id, gpu string, s *api.AllocatedShare) *api.Allocation {
		return &api.Allocation{ID: id, DesiredStatus: "run", ClientStatus: "running",
			AllocatedResources: &api.AllocatedResources{Tasks: map[string]*api.AllocatedTaskResources{
				"t": {Devices: []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: "A100", DeviceIDs: []string{gpu}, Share: s}}}}}}
	}
	allocs := []*api.Allocation{
		grant("bbbbbbbb-2", "GPU-a", &api.AllocatedShare{Milli: 500, Mode: api.ShareModeMPS, LimitMilli: 500}),
		grant("aaaaaaaa-1", "GPU-a", &api.AllocatedShare{Milli: 250, Mode: api.ShareModeMPS, LimitMilli: 1000}),
		grant("cccccccc-3", "GPU-b", nil),
	}
	var b bytes.Buffer
	printDeviceSummary(&b, n, allocs)
	got := b.String()
	want := `Devices: 3 nvidia/gpu/A100 (3 healthy, 2 in use, 1 shared)

Device Shares
Device           #  ID     Mode  Held By                                   Free
nvidia/gpu/A100  0  GPU-a  mps   aaaaaaaa 0.250 (limit 1); bbbbbbbb 0.500  0.250
`
	if got != want {
		t.Errorf("summary =\n%s\nwant\n%s", got, want)
	}
}
