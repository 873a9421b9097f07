package http_test

import (
	"context"
	"encoding/csv"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
)

const h100Model = "nvidia/gpu/H100"

// gpuNode is testNode with 8 cores and 4 H100s.
func gpuNode(id string) *api.Node {
	n := testNode(id)
	n.NodeResources.Cpu.TotalCpuCores = 8
	d := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: "H100"}
	for i := 0; i < 4; i++ {
		d.Instances = append(d.Instances, &api.NodeDevice{ID: "GPU-" + strconv.Itoa(i), Healthy: true})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{d}
	return n
}

// gpuJob asks for 2 GPUs, 2000 MHz (2 cores of gpuNode) and 2 GiB.
func gpuJob(id string) map[string]any {
	return map[string]any{"Job": map[string]any{
		"ID": id, "Type": "batch",
		"TaskGroups": []any{map[string]any{
			"Name": "train", "Count": 1,
			"Tasks": []any{map[string]any{
				"Name": "t", "Driver": "exec",
				"Config": map[string]any{"command": "/bin/sleep", "args": []string{"300"}},
				"Resources": map[string]any{"CPU": 2000, "MemoryMB": 2048,
					"Devices": []any{map[string]any{"Name": "nvidia/gpu", "Count": 2}}},
			}},
		}},
	}}
}

// reportTask sends a client update of alloc's task t, as its node would.
func (a *testAPI) reportTask(n *api.Node, allocID, status string, started, finished time.Time) {
	a.t.Helper()
	c := api.NewClient(a.ts.URL)
	c.Headers = nethttp.Header{api.NodeSecretHeader: {n.SecretID}}
	u := &api.Allocation{ID: allocID, ClientStatus: status,
		TaskStates: map[string]*api.TaskState{"t": {State: api.TaskStateRunning, StartedAt: started, FinishedAt: finished}}}
	if err := c.UpdateAllocsFromClient(context.Background(), n.ID, []*api.Allocation{u}); err != nil {
		a.t.Fatalf("alloc update: %v", err)
	}
}

func (a *testAPI) usage(query string) *api.UsageResponse {
	a.t.Helper()
	var out api.UsageResponse
	a.ok("GET", "/v1/usage"+query, nil, &out)
	return &out
}

func gpuSeconds(rows []api.UsageRow, key string) (gpu, cpu, cost float64) {
	for _, r := range rows {
		if r.Key == key {
			gpu += r.GPUSeconds[h100Model]
			cpu += r.CPUCoreSeconds
			cost += r.Cost
		}
	}
	return gpu, cpu, cost
}

func TestUsageRoute(t *testing.T) {
	a := newTestAPI(t, func(c *agenthttp.Config) { c.UsagePrices = map[string]float64{h100Model: 3} })
	n := gpuNode(nodeID)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil)
	reg := a.register(gpuJob("train"))
	if ev := a.waitEval(reg.EvalID); ev.Status != api.EvalStatusComplete {
		t.Fatalf("eval %s", ev.Status)
	}
	var allocs []*api.AllocListStub
	a.ok("GET", "/v1/job/train/allocations", nil, &allocs)
	if len(allocs) != 1 {
		t.Fatalf("allocs: %d, want 1", len(allocs))
	}
	id := allocs[0].ID

	// Running since 90 minutes ago: counted up to now.
	started := time.Now().Add(-90 * time.Minute)
	a.reportTask(n, id, api.AllocClientStatusRunning, started, time.Time{})
	before := time.Now()
	got := a.usage("?by=job")
	gpu, cpu, cost := gpuSeconds(got.Rows, "default/train")
	min := 2 * (before.Sub(started).Seconds() - 1) // to is whole seconds
	if got.By != api.UsageByJob || got.To-got.From != 24*3600 || gpu < min || gpu > min+2*60 {
		t.Fatalf("running: by %q span %d GPU-seconds %v, want job, 24h and about %v:\n%+v", got.By, got.To-got.From, gpu, min, got.Rows)
	}
	if d := cpu - gpu; d*d > 1e-6 {
		t.Errorf("CPU core seconds %v, want %v (2 cores of 1000 MHz)", cpu, gpu)
	}
	if d := cost - gpu/3600*3; d*d > 1e-6 {
		t.Errorf("cost %v, want %v", cost, gpu/3600*3)
	}

	// Finished after exactly one hour.
	a.reportTask(n, id, api.AllocClientStatusComplete, started, started.Add(time.Hour))
	for _, q := range []string{"?by=queue", "?by=namespace&from=" + strconv.FormatInt(started.Add(-time.Hour).Unix(), 10),
		"?by=job&from=" + started.Add(-time.Hour).UTC().Format(time.RFC3339) + "&to=" + strconv.FormatInt(time.Now().Unix(), 10)} {
		got = a.usage(q)
		if len(got.Rows) == 0 {
			t.Fatalf("%s: no rows", q)
		}
		key := map[string]string{api.UsageByQueue: api.DefaultQueue, api.UsageByNamespace: "default", api.UsageByJob: "default/train"}[got.By]
		if gpu, _, _ := gpuSeconds(got.Rows, key); gpu < 7200-1e-6 || gpu > 7200+1e-6 {
			t.Errorf("%s: %v GPU-seconds for %q, want 7200:\n%+v", q, gpu, key, got.Rows)
		}
	}

	r := a.ok("GET", "/v1/usage?by=job&format=csv", nil, nil)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("content type %q", ct)
	}
	lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || len(lines) < 2 {
		t.Fatalf("csv %q: %v", r.body, err)
	}
	want := append(append([]string(nil), api.UsageCSVColumns...), "gpu_seconds:"+h100Model)
	if strings.Join(lines[0], ",") != strings.Join(want, ",") {
		t.Errorf("csv header %q, want %q", lines[0], want)
	}
	var sum float64
	for _, l := range lines[1:] {
		if l[0] != "default/train" {
			t.Errorf("csv row key %q", l[0])
		}
		v, _ := strconv.ParseFloat(l[3], 64)
		sum += v
	}
	if sum < 7200-1e-6 || sum > 7200+1e-6 {
		t.Errorf("csv GPU-seconds %v, want 7200:\n%s", sum, r.body)
	}

	for _, tc := range []struct{ q, code string }{
		{"?by=tenant", "bad_request"}, {"?from=yesterday", "bad_request"}, {"?from=200&to=100", "bad_request"},
		{"?format=xml", "bad_request"}, {"?from=-5", "bad_request"}, {"?from=0&to=999999999999", "bad_request"},
	} {
		a.fails("GET", "/v1/usage"+tc.q, nil, nethttp.StatusBadRequest, tc.code)
	}
}

func TestPriceUsage(t *testing.T) {
	rows := []api.UsageRow{{GPUSeconds: map[string]float64{h100Model: 7200, "nvidia/gpu/A100": 3600}}}
	agenthttp.PriceUsage(rows, map[string]float64{h100Model: 2.5})
	if rows[0].Cost != 5 {
		t.Errorf("cost %v, want 5 (2 H100 hours at 2.5, A100 unpriced)", rows[0].Cost)
	}
}
