package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/network"
	"github.com/drover/drover/api"
	ctrdriver "github.com/drover/drover/drivers/containerd"
	"github.com/drover/drover/drivers/containerd/ctrtest"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/drivers/drivertest/testimage"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/jobspec"
)

// onDevAgent is the "# Needs:" line of an example that runs on the plain
// dev agent (as in examples/examples_test.go, which checks every example has
// a Needs line, and names the test that runs the others).
const onDevAgent = "# Needs: only make dev"

// devExamples are the example files whose first lines say they run on
// `make dev` alone.
func devExamples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../examples/*.hcl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	var out []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.SplitN(string(src), "\n", 5)
		if slices.ContainsFunc(lines[:min(4, len(lines))], func(l string) bool { return strings.HasPrefix(l, onDevAgent) }) {
			out = append(out, f)
		}
	}
	return out
}

// TestE2EExamplesOnDevAgent runs, on one `drover agent -dev`, every
// example that says it needs nothing more, with the real CLI as the
// README does: a service or system job must get a running allocation, a
// batch job must complete every one.
func TestE2EExamplesOnDevAgent(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the exec driver needs root outside CI")
	}
	files := devExamples(t)
	if len(files) < 3 {
		t.Fatalf("examples on the dev agent: %v, want at least hello-exec, batch and system", files)
	}
	d := startDevCluster(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			job, err := jobspec.ParseFile(f, &jobspec.Options{Env: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			if out, err := d.drover("job", "run", "-detach", f); err != nil {
				t.Fatalf("drover job run %s: %v\n%s", f, err, out)
			}
			batch := job.Type == api.JobTypeBatch || job.Type == api.JobTypeSysBatch
			reaped := map[string]bool{}
			d.waitBlocking("/v1/job/"+job.ID+"/allocations", job.ID+" running or complete", func(b []byte) (bool, string) {
				var stubs []*api.AllocListStub
				if err := json.Unmarshal(b, &stubs); err != nil {
					return false, err.Error()
				}
				var got []string
				done, failed := 0, false
				for _, s := range stubs {
					if !reaped[s.ID] {
						reaped[s.ID] = true
						reapTasks(t, s.ID)
					}
					got = append(got, s.ClientStatus)
					switch s.ClientStatus {
					case api.AllocClientStatusComplete:
						done++
					case api.AllocClientStatusRunning:
						if !batch {
							done++
						}
					case api.AllocClientStatusFailed, api.AllocClientStatusLost:
						failed = true
					}
				}
				if failed {
					t.Fatalf("%s: an allocation failed: %v", job.ID, got)
				}
				if batch {
					want := 0
					for _, tg := range job.TaskGroups {
						want += tg.Count
					}
					return done == want, fmt.Sprint(got)
				}
				return done > 0, fmt.Sprint(got)
			})
			if out, err := d.drover("job", "stop", "-purge", job.ID); err != nil {
				t.Errorf("drover job stop %s: %v\n%s", job.ID, err, out)
			}
		})
	}
}

// startContainerd runs a containerd of the test's own (ownContainerd) and
// points the agents the test starts at it; it returns the busybox OCI
// archive image reference.
func startContainerd(t *testing.T) string {
	t.Helper()
	daemon, archive := ownContainerd(t)
	t.Setenv("CONTAINERD_ADDRESS", daemon.Address) // the agent's environment
	return ctrdriver.ArchivePrefix + archive
}

// ownContainerd starts a containerd of the test's own (see ctrtest),
// stopped when the test ends, and returns it with the path of the busybox
// OCI archive. It needs containerd and skips under -short.
func ownContainerd(t *testing.T) (*ctrtest.Daemon, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts containerd and the agent; -short")
	}
	drivertest.Need(t, ctrtest.Available() == nil, fmt.Sprint(ctrtest.Available()))
	archive := testimage.BusyboxArchive(t)
	dir, err := os.MkdirTemp("", "ctrd-e2e") // short: it holds the socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	daemon, err := ctrtest.Start(ctx, dir)
	cancel()
	if err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	t.Cleanup(func() { daemon.Stop(context.Background()) })
	return daemon, archive
}

// latestDeployment waits until the job's latest deployment of version
// satisfies cond and returns it.
func (d *devCluster) latestDeployment(jobID string, version uint64, what string, cond func(*api.Deployment) bool) *api.Deployment {
	d.t.Helper()
	var dep *api.Deployment
	d.waitBlocking("/v1/job/"+jobID+"/deployment", what, func(b []byte) (bool, string) {
		dep = &api.Deployment{}
		if err := json.Unmarshal(b, dep); err != nil || dep.ID == "" {
			return false, string(b)
		}
		return dep.JobVersion == version && cond(dep), fmt.Sprintf("version %d %s (%s) %+v", dep.JobVersion, dep.Status, dep.StatusDescription, dep.TaskGroups["web"])
	})
	return dep
}

// TestE2EExampleWebRollout: examples/web-containerd.hcl, unchanged but
// for its image and message variables, deploys on the one-node dev agent,
// then rolls out an update as its comments say: one canary runs beside
// the old version, `drover deployment promote` finishes the rollout, and
// the page serves the new message.
func TestE2EExampleWebRollout(t *testing.T) {
	image := startContainerd(t)
	d := startDevCluster(t)
	const file = "../examples/web-containerd.hcl"
	run := func(message string) {
		t.Helper()
		if out, err := d.drover("job", "run", "-detach", "-var", "image="+image, "-var", "message="+message, file); err != nil {
			t.Fatalf("drover job run (message %s): %v\n%s", message, err, out)
		}
	}
	run("v1")
	d.latestDeployment("web", 0, "the first deployment successful", func(dep *api.Deployment) bool {
		return dep.Status == api.DeploymentStatusSuccessful
	})
	run("v2")
	dep := d.latestDeployment("web", 1, "a healthy canary of version 1", func(dep *api.Deployment) bool {
		s := dep.TaskGroups["web"]
		return s != nil && len(s.PlacedCanaries) == 1 && s.HealthyAllocs == 1 && dep.Status == api.DeploymentStatusRunning
	})
	for _, s := range d.jobAllocs("web") {
		reapTasks(t, s.ID)
	}
	if out, err := d.drover("deployment", "promote", dep.ID); err != nil {
		t.Fatalf("drover deployment promote: %v\n%s", err, out)
	}
	d.latestDeployment("web", 1, "the promoted deployment successful", func(dep *api.Deployment) bool {
		return dep.Status == api.DeploymentStatusSuccessful
	})
	var page string
	waitFor(t, devDeadline, "one running alloc of version 1 serving v2", func() (bool, string) {
		var running []*api.AllocListStub
		for _, s := range d.jobAllocs("web") {
			if s.ClientStatus == api.AllocClientStatusRunning {
				running = append(running, s)
			}
		}
		if len(running) != 1 || running[0].JobVersion != 1 {
			return false, fmt.Sprintf("%d running", len(running))
		}
		page = allocPage(d, running[0].ID)
		return strings.HasPrefix(page, "<h1>v2 from web.web["), page
	})
	if out, err := d.drover("job", "stop", "-purge", "web"); err != nil {
		t.Errorf("drover job stop: %v\n%s", err, out)
	}
}

// TestE2EExampleServeLLM: examples/serve-llm.hcl as is (its stand-in
// server, the weights host volume, the bridge network) reaches two
// healthy allocations on the dev agent, each answering /health through
// its mapped port and listing the weights.
func TestE2EExampleServeLLM(t *testing.T) {
	drivertest.Need(t, network.Available(nil) == nil, fmt.Sprint(network.Available(nil)))
	image := startContainerd(t)
	weights := t.TempDir()
	if err := os.WriteFile(filepath.Join(weights, "model.safetensors"), []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDevCluster(t, "-host-volume", "weights="+weights+":ro")
	if out, err := d.drover("job", "run", "-detach", "-var", "image="+image, "../examples/serve-llm.hcl"); err != nil {
		t.Fatalf("drover job run serve-llm.hcl: %v\n%s", err, out)
	}
	d.waitBlocking("/v1/job/llm/deployment", "the deployment successful", func(b []byte) (bool, string) {
		var dep api.Deployment
		if err := json.Unmarshal(b, &dep); err != nil {
			return false, string(b)
		}
		return dep.Status == api.DeploymentStatusSuccessful, dep.Status + " " + dep.StatusDescription
	})
	allocs := d.jobAllocs("llm")
	for _, s := range allocs {
		reapTasks(t, s.ID)
	}
	healthy := 0
	for _, s := range allocs {
		if s.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		healthy++
		if got := allocPage(d, s.ID); !strings.Contains(got, "model.safetensors") {
			t.Errorf("alloc %s serves %q, want the weights listed", s.ID, got)
		}
	}
	if healthy != 2 {
		t.Errorf("%d running allocs, want 2", healthy)
	}
	// Stop it and wait for the allocs to end, so the client tears their
	// bridge namespaces down before the agent goes.
	if out, err := d.drover("job", "stop", "llm"); err != nil {
		t.Fatalf("drover job stop: %v\n%s", err, out)
	}
	netns := filepath.Join(d.dataDir, "client", "network", "netns")
	testproc.Eventually(t, 60*time.Second, "the llm allocs stopped and their namespaces gone", func() bool {
		for _, s := range d.jobAllocs("llm") {
			if s.ClientStatus == api.AllocClientStatusRunning || s.ClientStatus == api.AllocClientStatusPending {
				return false
			}
		}
		left, err := os.ReadDir(netns)
		return (err == nil || os.IsNotExist(err)) && len(left) == 0
	})
}

// allocPage GETs / on the alloc's "http" host port, "" on failure.
func allocPage(d *devCluster, allocID string) string {
	var a api.Allocation
	if devGet(d.base+"/v1/allocation/"+allocID, &a) != 200 || a.AllocatedResources == nil {
		return ""
	}
	host, port := "127.0.0.1", 0
	for _, p := range a.AllocatedResources.Shared.Ports {
		if p.Label == "http" {
			port = p.Value
			if p.HostIP != "" {
				host = p.HostIP
			}
		}
	}
	r, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://%s:%d/", host, port))
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// jobspec's list of drover's drivers (what `job validate` accepts without
// a warning) is the agent's registry.
func TestJobspecDriversAreTheAgents(t *testing.T) {
	var names []string
	for name := range agent.Drivers {
		names = append(names, name)
	}
	slices.Sort(names)
	if !slices.Equal(names, jobspec.Drivers) {
		t.Errorf("jobspec.Drivers = %v, agent.Drivers has %v", jobspec.Drivers, names)
	}
}
