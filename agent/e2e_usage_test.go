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

	"github.com/drover/drover/api"
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
