package ui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
)

// TestUIQueuesLive drives the Queues page and the job page's why-pending
// view against a real dev agent: a queue limited to 4 GPUs, a job in it
// asking 3 × 2 GPUs on the simulated GPU node. Two allocs are placed; the
// third waits on the limit, which the job page says in the scheduler's
// words, and the Queues page shows the queue's allocation and its pending
// job; the simulated client reports the allocs running for two hours
// and the Usage page shows the ledger's GPU-hours for the queue, with its
// CSV behind the download link.
func TestUIQueuesLive(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	agent := startDevAgent(t)
	node := registerGPUNode(t, agent)
	for _, q := range []*api.Queue{
		{Name: "team-a", Weight: 2, Guaranteed: &api.QueueResources{GPUs: 2}, Limit: &api.QueueResources{GPUs: 4}},
		{Name: "team-b", Weight: 1},
	} {
		if err := agent.send("PUT", "/v1/queues", q, nil, nil); err != nil {
			t.Fatalf("put queue %s: %v", q.Name, err)
		}
	}
	job := &api.Job{ID: "train-a", Type: api.JobTypeBatch, Datacenters: []string{"dc2"}, Queue: "team-a",
		TaskGroups: []*api.TaskGroup{{Name: "workers", Count: 3, Tasks: []*api.Task{{Name: "w", Driver: "raw_exec",
			Config:    map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
			Resources: &api.Resources{CPU: 1000, MemoryMB: 1024, Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 2}}}}}}}}
	if err := agent.send("PUT", "/v1/jobs", api.JobRegisterRequest{Job: job}, nil, nil); err != nil {
		t.Fatalf("register %s: %v", job.ID, err)
	}
	// The simulated client reports the placed allocs running for two
	// hours, so the ledger has GPU-seconds for team-a.
	var allocs []*api.AllocListStub
	agent.WaitFor(t, "two allocs placed", 60*time.Second, func() bool {
		return agent.getJSON("/v1/job/train-a/allocations", &allocs) == nil && len(allocs) == 2
	})
	started := time.Now().Add(-2 * time.Hour)
	var up []*api.Allocation
	for _, a := range allocs {
		up = append(up, &api.Allocation{ID: a.ID, NodeID: node.ID, ClientStatus: api.AllocClientStatusRunning,
			TaskStates: map[string]*api.TaskState{"w": {State: api.TaskStateRunning, StartedAt: started}}})
	}
	if err := agent.send("PUT", "/v1/node/"+node.ID+"/allocations/update", api.NodeAllocUpdateRequest{Allocs: up},
		map[string]string{api.NodeSecretHeader: node.SecretID}, nil); err != nil {
		t.Fatalf("report allocs running: %v", err)
	}
	ctx, problems := browser(t)
	shot := newShots(t, ctx)
	const long = 90 * time.Second

	do(t, ctx, "open queues", chromedp.Navigate(agent.base+"/ui/queues"), chromedp.WaitVisible(chromedp.ID("queues-table")))
	until(t, ctx, "team-a holds 4 GPUs", `!!document.querySelector('#queues-chart g.row[data-key="team-a"] rect[data-series="allocated"][data-value="4"]')`, long)
	until(t, ctx, "team-a's limit tick", `!!document.querySelector('#queues-chart g.row[data-key="team-a"] line[data-series="limit"][data-value="4"]')`, long)
	until(t, ctx, "team-a has a pending job", textHas(`#queues-table tr[data-queue="team-a"] .pending`, "1"), long)
	until(t, ctx, "team-b listed", `!!document.querySelector('#queues-table tr[data-queue="team-b"]')`, long)
	shot.take("queues-live")

	do(t, ctx, "open the job", chromedp.Navigate(agent.base+"/ui/jobs/train-a"))
	until(t, ctx, "quota reason", textHas(`#placement-failures li[data-kind="quota"]`, "queue team-a is at its limit: gpu 4 of 4 used, 2 more asked"), long)
	until(t, ctx, "the job's queue", textHas("#job-queue", "team-a"), long)
	shot.take("job-quota-live")

	// Usage from the ledger: 2 allocs × 2 GPUs × 2 hours and counting.
	do(t, ctx, "open usage", chromedp.Click(chromedp.CSS(`#nav a[data-nav="usage"]`)))
	click(t, ctx, "last 24h", `#usage-range button[data-range="24h"]`)
	until(t, ctx, "team-a's GPU-hours", `+(document.querySelector('#usage-table tr[data-queue="team-a"] .gpu-hours')?.textContent ?? 0) >= 7.9`, long)
	until(t, ctx, "stacked columns for the last hours", `document.querySelectorAll('#usage-chart g.col rect[data-series="team-a"]').length >= 2`, long)
	csv, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector('#usage-csv').href).then((r) => r.ok ? r.text() : 'HTTP ' + r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || !strings.Contains(csv, "team-a") {
		t.Errorf("CSV behind the download link: %q (%v), want team-a's rows", csv, err)
	}
	shot.take("usage-live")
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
