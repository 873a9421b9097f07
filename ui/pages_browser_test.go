package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
)

// TestUIXJobPages drives the job definition view, revert from the
// versions list, the deployments list and page (fail from the UI), and
// the topology legend against a dev agent with the simulated GPU node.
func TestUIXJobPages(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	chromium(t)
	agent := startDevAgent(t)
	gpuNode(t, agent)
	job := func(count int) *api.Job {
		return &api.Job{ID: "web", Type: api.JobTypeService, Datacenters: []string{"dc2"},
			Update: &api.UpdateStrategy{MaxParallel: 1, HealthCheck: "task_states", HealthyDeadline: time.Hour, ProgressDeadline: 2 * time.Hour},
			TaskGroups: []*api.TaskGroup{{Name: "web", Count: count, Tasks: []*api.Task{{Name: "srv", Driver: "raw_exec",
				Config:    map[string]any{"command": "/bin/sleep", "args": []string{"3600"}},
				Resources: &api.Resources{CPU: 500, MemoryMB: 256}}}}}}
	}
	for _, n := range []int{1, 2} {
		if err := agent.send("PUT", "/v1/jobs", api.JobRegisterRequest{Job: job(n)}, nil, nil); err != nil {
			t.Fatalf("register web count %d: %v", n, err)
		}
	}
	var deps []*api.Deployment
	agent.WaitFor(t, "a running deployment of web", 60*time.Second, func() bool {
		return agent.getJSON("/v1/job/web/deployments", &deps) == nil && len(deps) > 0 && deps[0].Status == api.DeploymentStatusRunning
	})
	ctx, problems := browser(t)
	const long = 30 * time.Second

	// The definition as the API holds it, and revert to version 0.
	do(t, ctx, "open the web job", chromedp.Navigate(agent.base+"/ui/jobs/web"))
	until(t, ctx, "two versions listed", `document.querySelectorAll('#versions-table button.revert').length === 1`, long)
	do(t, ctx, "open the definition", chromedp.Evaluate[chromedp.Void](`document.querySelector('#job-definition').open = true`))
	until(t, ctx, "definition shows the job's JSON", textHas("#job-definition-json", `"ID": "web"`)+" && "+textHas("#job-definition-json", `"MaxParallel": 1`), long)
	click(t, ctx, "revert to v0", `#versions-table button.revert[data-version="0"]`)
	until(t, ctx, "revert done", textHas("#job-action-result", "Revert to version 0: done"), long)
	var web api.Job
	agent.WaitFor(t, "web reverted to count 1 as version 2", long, func() bool {
		return agent.getJSON("/v1/job/web", &web) == nil && web.Version == 2 && web.TaskGroups[0].Count == 1
	})
	until(t, ctx, "the page follows: count 1, definition open still", `document.querySelector('#job-definition').open && `+
		textHas("#job-definition-json", `"Version": 2`), long)

	// Deployments: the list, one deployment, fail it (two-step confirm).
	do(t, ctx, "open deployments", chromedp.Click(chromedp.CSS(`#nav a[data-nav="deployments"]`)))
	until(t, ctx, "deployments listed", `!!document.querySelector('#deployments-table tr[data-status="running"] a.deployment-link')`, long)
	click(t, ctx, "open the running deployment", `#deployments-table tr[data-status="running"] a.deployment-link`)
	until(t, ctx, "groups shown", textHas("#deployment-groups", "web"), long)
	click(t, ctx, "fail", "#deployment-fail")
	until(t, ctx, "fail armed", textHas("#deployment-fail", "Confirm"), long)
	click(t, ctx, "confirm fail", "#deployment-fail")
	until(t, ctx, "deployment shown failed", `!document.querySelector('#deployment-fail') && `+textHas(".page-head", "failed"), long)
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	var d api.Deployment
	id := loc[len(loc)-36:]
	if err := agent.getJSON("/v1/deployment/"+id, &d); err != nil || d.Status != api.DeploymentStatusFailed {
		t.Fatalf("deployment %s after Fail in the UI: status %q (%v), want failed", id, d.Status, err)
	}

	// Topology: the legend names the job holding the strips' blocks.
	do(t, ctx, "open topology", chromedp.Click(chromedp.CSS(`#nav a[data-nav="topology"]`)))
	until(t, ctx, "legend names web", `!!document.querySelector('#topology-legend [data-job-id="web"] i.swatch')`, long)
	until(t, ctx, "legend explains the GPU squares", textHas("#topology-legend", "unhealthy"), long)
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
