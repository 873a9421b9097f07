package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
)

// TestUIGPUShares drives the pages that show GPU shares against a real dev
// agent with the simulated 8-GPU node (80 GiB each): job infer asks a
// quarter of a GPU per alloc (2 allocs, mps, limit 0.5), job nb half of
// one (time-slicing). The node page shows each shared GPU's mode, who
// holds what and the part still free, and counts the node's GPUs in use
// by their fractions (1 of 8); the job page shows the share asked and,
// per alloc, the share given; the Usage page counts one infer alloc that
// ran for an hour as 0.25 GPU-hours.
func TestUIGPUShares(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	chromium(t)
	agent := startDevAgent(t)
	node := registerGPUNode(t, agent)
	shareJob := func(id string, count int, share *api.DeviceShare) *api.Job {
		return &api.Job{ID: id, Type: api.JobTypeBatch, Datacenters: []string{"dc2"},
			TaskGroups: []*api.TaskGroup{{Name: id, Count: count, Tasks: []*api.Task{{Name: "t", Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
				Resources: &api.Resources{CPU: 500, MemoryMB: 256,
					Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1, Share: share}}}}}}}}
	}
	for _, j := range []*api.Job{
		shareJob("infer", 2, &api.DeviceShare{Fraction: 0.25, Mode: api.ShareModeMPS, Limit: 0.5}),
		shareJob("nb", 1, &api.DeviceShare{Fraction: 0.5}),
	} {
		if err := agent.send("PUT", "/v1/jobs", api.JobRegisterRequest{Job: j}, nil, nil); err != nil {
			t.Fatalf("register %s: %v", j.ID, err)
		}
	}
	var infer, nb []*api.AllocListStub
	agent.WaitFor(t, "three allocs placed", 60*time.Second, func() bool {
		return agent.getJSON("/v1/job/infer/allocations", &infer) == nil && len(infer) == 2 &&
			agent.getJSON("/v1/job/nb/allocations", &nb) == nil && len(nb) == 1
	})
	// One infer alloc has run for an hour (the simulated client says so).
	up := []*api.Allocation{{ID: infer[0].ID, NodeID: node.ID, ClientStatus: api.AllocClientStatusRunning,
		TaskStates: map[string]*api.TaskState{"t": {State: api.TaskStateRunning, StartedAt: time.Now().Add(-time.Hour)}}}}
	if err := agent.send("PUT", "/v1/node/"+node.ID+"/allocations/update", api.NodeAllocUpdateRequest{Allocs: up},
		map[string]string{api.NodeSecretHeader: node.SecretID}, nil); err != nil {
		t.Fatalf("report infer running: %v", err)
	}
	ctx, problems := browser(t)
	shot := newShots(t, ctx)
	const long = 60 * time.Second

	// Nodes list and node page: 0.25 + 0.25 + 0.5 GPUs held of 8.
	do(t, ctx, "open nodes", chromedp.Navigate(agent.base+"/ui/nodes"))
	until(t, ctx, "GPU node shows 1 of 8 GPUs allocated", textHas(fmt.Sprintf(`#nodes-table tr[data-node-id="%s"] .bar.gpu`, node.ID), "1 / 8"), long)
	do(t, ctx, "open the GPU node", chromedp.Navigate(agent.base+"/ui/nodes/"+node.ID))
	until(t, ctx, "node resources count fractions", textHas("#node-resources .bar.gpu", "1 / 8"), long)
	until(t, ctx, "infer's two quarters, mps, with their limit and memory",
		`[...document.querySelectorAll('#devices tr[data-mode="mps"] .held-by .share[data-milli="250"]')]
		  .filter((d) => d.textContent.includes('infer') && d.textContent.endsWith(' 0.25, limit 0.5, 20.0 GiB')).length === 2`, long)
	until(t, ctx, "the mps GPUs' free part is what infer leaves",
		`(() => { const rows = [...document.querySelectorAll('#devices tr[data-mode="mps"]')];
		  return rows.length > 0 && rows.reduce((n, r) => n + 1000 - +r.dataset.free, 0) === 500 &&
		    rows.every((r) => r.querySelector('.free').textContent === String(+r.dataset.free / 1000) && r.querySelector('.mode').textContent === 'mps'); })()`, long)
	until(t, ctx, "nb's half on a time-slicing GPU, half of it free",
		`(() => { const r = document.querySelectorAll('#devices tr[data-mode="time-slicing"]');
		  return r.length === 1 && r[0].querySelector('.free').textContent === '0.5' &&
		    r[0].querySelector('.share[data-milli="500"]')?.textContent.includes('nb') && r[0].querySelector('.mode').textContent === 'time-slicing'; })()`, long)
	until(t, ctx, "the other GPUs free and whole", `(() => { const rows = [...document.querySelectorAll('#devices tr[data-gpu]')];
		  return rows.length === 8 && rows.filter((r) => !r.dataset.mode).every((r) => r.dataset.free === '1000' && r.querySelector('.free').textContent === '1' && !!r.querySelector('.held-by .pill')); })()`, long)
	shot.take("node-gpu-shares")

	// Job page: the share asked and, per alloc, the share given.
	do(t, ctx, "open infer", chromedp.Navigate(agent.base+"/ui/jobs/infer"))
	until(t, ctx, "share asked", textHas(`#job .share-ask[data-device="nvidia/gpu"]`, "share 0.25 mps, limit 0.5 of each"), long)
	until(t, ctx, "share given per alloc",
		`[...document.querySelectorAll('#allocs-table tr[data-alloc-id] .share-grant[data-milli="250"][data-mode="mps"]')]
		  .filter((d) => d.textContent.startsWith('0.25 mps, limit 0.5, 20.0 GiB of GPU-')).length === 2`, long)
	shot.take("job-gpu-shares")

	// Usage: an hour of a quarter GPU is 0.25 GPU-hours.
	do(t, ctx, "open usage", chromedp.Navigate(agent.base+"/ui/usage?range=24h"))
	until(t, ctx, "fractional GPU-hours", `document.querySelector('#usage-table tr[data-queue="default"] .gpu-hours')?.textContent === '0.25'`, long)
	until(t, ctx, "the page says how shares count", textHas("#usage-note", "a quarter of a GPU for an hour is 0.25 GPU-hours"), long)
	shot.take("usage-gpu-shares")
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
