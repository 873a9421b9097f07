package ui_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
)

// TestUIAllocServices: the allocation page lists the alloc's native
// service with its address and health and the result of its http check,
// live: the service turns passing once busybox httpd answers.
func TestUIAllocServices(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	chromium(t)
	agent := startDevAgent(t)
	www := t.TempDir()
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	job := &api.Job{ID: "svc", Type: api.JobTypeService, TaskGroups: []*api.TaskGroup{{Name: "web", Count: 1,
		Networks: []*api.NetworkResource{{DynamicPorts: []api.Port{{Label: "http"}}}},
		Services: []*api.Service{{Name: "web", PortLabel: "http", Provider: "nomad", Checks: []*api.ServiceCheck{
			{Name: "root", Type: "http", Path: "/", Interval: 200 * time.Millisecond, Timeout: time.Second}}}},
		Tasks: []*api.Task{{Name: "httpd", Driver: "raw_exec",
			Config:    map[string]any{"command": "/bin/busybox", "args": []string{"httpd", "-f", "-p", "${NOMAD_PORT_http}", "-h", www}},
			Resources: &api.Resources{CPU: 100, MemoryMB: 32}}}}}}
	if err := agent.send("PUT", "/v1/jobs", api.JobRegisterRequest{Job: job}, nil, nil); err != nil {
		t.Fatalf("register: %v", err)
	}
	var allocs []*api.AllocListStub
	agent.WaitFor(t, "the alloc running", 60*time.Second, func() bool {
		return agent.getJSON("/v1/job/svc/allocations", &allocs) == nil && len(allocs) == 1 && allocs[0].ClientStatus == api.AllocClientStatusRunning
	})
	ctx, problems := browser(t)
	const long = 30 * time.Second
	do(t, ctx, "open the allocation", chromedp.Navigate(agent.base+"/ui/allocations/"+allocs[0].ID))
	until(t, ctx, "the service and its check listed", textHas("#alloc-services", "web")+" && "+textHas("#alloc-services", "root"), long)
	until(t, ctx, "the service passing", `!!document.querySelector('#alloc-services [data-status="passing"]')`, long)
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}
