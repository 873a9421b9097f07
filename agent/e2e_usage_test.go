package agent_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// dgxModel is the GPU model of -dev-gpus dgxh100 in the usage ledger.
const dgxModel = "nvidia/gpu/NVIDIA H100 80GB HBM3"

// Two GPU jobs in two queues run to completion on a -dev-gpus agent whose
// server prices the GPU hour; `drover usage -csv` shows the GPU-seconds of
// both (at least the 4 GPUs x 2 s each held), by job and by queue, with
// the cost at the configured price.
func TestE2EUsageLedgerDevGPUs(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "usage.hcl")
	hcl := fmt.Sprintf("server {\n  usage {\n    prices = { %q = 3.6 }\n  }\n}\n", dgxModel)
	if err := os.WriteFile(conf, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDevCluster(t, "-dev-gpus", "dgxh100", "-config", conf)
	queues := writeJob(t, "queues.hcl", "queue \"team-a\" {\n  weight = 1\n}\nqueue \"team-b\" {\n  weight = 2\n}\n")
	if out, err := d.drover("queue", "apply", queues); err != nil {
		t.Fatalf("drover queue apply: %v\n%s", err, out)
	}
	queueOf := map[string]string{"usage-a": "team-a", "usage-b": "team-b"}
	for _, id := range []string{"usage-a", "usage-b"} {
		hcl := strings.Replace(gpuJobHCL(id, 1, 4, "sleep 2", false), "  type = \"batch\"", "  type = \"batch\"\n  queue = \""+queueOf[id]+"\"", 1)
		if out, err := d.drover("job", "run", "-detach", writeJob(t, id+".hcl", hcl)); err != nil {
			t.Fatalf("drover job run %s: %v\n%s", id, err, out)
		}
	}
	for _, id := range []string{"usage-a", "usage-b"} {
		d.waitBlocking("/v1/job/"+id+"/allocations", id+" complete", func(b []byte) (bool, string) {
			var stubs []*api.AllocListStub
			if err := json.Unmarshal(b, &stubs); err != nil {
				return false, err.Error()
			}
			var got []string
			for _, s := range stubs {
				got = append(got, s.ClientStatus)
				if s.ClientStatus == api.AllocClientStatusComplete {
					return true, ""
				}
			}
			return false, strings.Join(got, " ")
		})
	}

	usage := func(by string) map[string][2]float64 { // key -> GPU-seconds of dgxModel, cost
		t.Helper()
		out, err := d.drover("usage", "-by", by, "-csv")
		if err != nil {
			t.Fatalf("drover usage -by %s -csv: %v\n%s", by, err, out)
		}
		lines, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(lines) < 2 {
			t.Fatalf("drover usage -by %s -csv = %q: %v", by, out, err)
		}
		col := -1
		for i, h := range lines[0] {
			if h == "gpu_seconds:"+dgxModel {
				col = i
			}
		}
		if col < 0 || strings.Join(lines[0][:len(api.UsageCSVColumns)], ",") != strings.Join(api.UsageCSVColumns, ",") {
			t.Fatalf("usage CSV header %q: want %q and a gpu_seconds:%s column", lines[0], api.UsageCSVColumns, dgxModel)
		}
		got := map[string][2]float64{}
		for _, l := range lines[1:] {
			g, _ := strconv.ParseFloat(l[col], 64)
			c, _ := strconv.ParseFloat(l[6], 64)
			v := got[l[0]]
			got[l[0]] = [2]float64{v[0] + g, v[1] + c}
		}
		return got
	}
	jobs, byQueue := usage(api.UsageByJob), usage(api.UsageByQueue)
	for _, id := range []string{"usage-a", "usage-b"} {
		v := jobs["default/"+id]
		// 4 GPUs for the 2 s the task slept, at least; well under a minute.
		if v[0] < 8 || v[0] > 4*60 {
			t.Errorf("%s: %v GPU-seconds, want 8 to 240 (4 GPUs x the task's run):\n%v", id, v[0], jobs)
		}
		if want := v[0] / 3600 * 3.6; v[1] < want-1e-9 || v[1] > want+1e-9 {
			t.Errorf("%s: cost %v, want %v at 3.6 per GPU hour", id, v[1], want)
		}
		if q := byQueue[queueOf[id]][0]; q < v[0]-1e-6 || q > v[0]+1e-6 {
			t.Errorf("queue %s: %v GPU-seconds, want its job's %v:\n%v", queueOf[id], q, v[0], byQueue)
		}
	}
	out, err := d.drover("usage", "-by", "job")
	if err != nil || !strings.Contains(out, "default/usage-a") || !strings.Contains(out, "default/usage-b") {
		t.Errorf("drover usage -by job: %v\n%s", err, out)
	}
}

// runningGPUs counts a job's running allocs (one GPU each here).
func (d *devCluster) runningAllocs(job string) int {
	n := 0
	for _, s := range d.jobAllocs(job) {
		if s.ClientStatus == api.AllocClientStatusRunning && s.DesiredStatus == api.AllocDesiredStatusRun {
			n++
		}
	}
	return n
}

// Two queues on one -dev-gpus agent (8 GPUs), 4 guaranteed each: team-a
// borrows all 8 while team-b is idle; when team-b submits 4 one-GPU allocs
// it reclaims its guarantee (4 of team-a's allocs are preempted, though
// both jobs have the same priority) and `drover usage -by queue -csv`
// shows GPU-seconds for both queues.
func TestE2EQueueReclaimDevGPUs(t *testing.T) {
	d := startDevCluster(t, "-dev-gpus", "dgxh100")
	queues := writeJob(t, "queues.hcl", "queue \"team-a\" {\n  guaranteed {\n    gpu = 4\n  }\n}\n"+
		"queue \"team-b\" {\n  guaranteed {\n    gpu = 4\n  }\n}\n")
	if out, err := d.drover("queue", "apply", queues); err != nil {
		t.Fatalf("drover queue apply: %v\n%s", err, out)
	}
	job := func(id, queue string, count int) string {
		hcl := strings.Replace(gpuJobHCL(id, count, 1, "exec sleep 300", false), "  type = \"batch\"", "  type = \"batch\"\n  queue = \""+queue+"\"", 1)
		return writeJob(t, id+".hcl", hcl)
	}
	if out, err := d.drover("job", "run", "-detach", job("borrow", "team-a", 8)); err != nil {
		t.Fatalf("drover job run borrow: %v\n%s", err, out)
	}
	d.waitBlocking("/v1/job/borrow/allocations", "team-a holding all 8 GPUs", func([]byte) (bool, string) {
		n := d.runningAllocs("borrow")
		return n == 8, fmt.Sprintf("%d running", n)
	})
	if out, err := d.drover("job", "run", "-detach", job("owner", "team-b", 4)); err != nil {
		t.Fatalf("drover job run owner: %v\n%s", err, out)
	}
	d.waitBlocking("/v1/job/owner/allocations", "team-b running its guarantee", func([]byte) (bool, string) {
		n := d.runningAllocs("owner")
		return n == 4, fmt.Sprintf("%d running", n)
	})
	if n := d.runningAllocs("borrow"); n != 4 {
		t.Errorf("team-a runs %d allocs after the reclaim, want 4 (its guarantee)", n)
	}
	// Running allocs count up to the query: poll until team-b's have run
	// long enough to show.
	gpuSeconds := func() (map[string]float64, string) {
		out, err := d.drover("usage", "-by", "queue", "-csv")
		if err != nil {
			t.Fatalf("drover usage -by queue -csv: %v\n%s", err, out)
		}
		got := map[string]float64{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Split(l, ","); len(f) > 3 {
				g, _ := strconv.ParseFloat(f[3], 64)
				got[f[0]] += g
			}
		}
		return got, out
	}
	var out string
	defer func() {
		if t.Failed() {
			t.Logf("drover usage -by queue -csv:\n%s", out)
		}
	}()
	testproc.Eventually(t, 30*time.Second, "GPU-seconds for team-a and team-b in drover usage -by queue -csv", func() bool {
		var got map[string]float64
		got, out = gpuSeconds()
		return got["team-a"] > 0 && got["team-b"] > 0
	})
}
