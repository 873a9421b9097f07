package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/drover/drover/api"
	ctrdriver "github.com/drover/drover/drivers/containerd"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/jobspec"
)

// limitsTask is added to the example's group: it prints the memory limit
// it sees through the task cgroup the driver mounts at /sys/fs/cgroup
// (v1 hybrid hosts: memory/memory.limit_in_bytes; v2: memory.max), then
// the file of the host volume mounted read-only at /models and whether
// it could write there, then waits, leaving on SIGTERM.
const limitsTask = `job "x" {
  group "g" {
    volume "models" {
      type      = "host"
      source    = "weights"
      read_only = true
    }
    task "limits" {
      driver = "containerd"
      config {
        image   = %q
        command = "sh"
        args    = ["-c", "echo memory limit: $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max); echo model: $(cat /models/model.txt); touch /models/new 2>/dev/null && echo models=writable || echo models=readonly; trap 'exit 0' TERM; sleep 3600 & wait"]
      }
      volume_mount {
        volume      = "models"
        destination = "/models"
      }
      resources {
        cpu    = 100
        memory = 48
      }
    }
  }
}
`

// startAgentEnv is startAgent with extra environment; the returned
// buffer is the agent's output, safe to read while it runs.
func startAgentEnv(t *testing.T, env []string, args ...string) (*agentProc, *syncBuf) {
	t.Helper()
	cmd := exec.Command(droverBin(t), append([]string{"agent"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	w := &syncBuf{b: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	p := &agentProc{cmd: cmd, done: make(chan error, 1), log: w.b}
	exited := make(chan struct{})
	go func() {
		p.done <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
			// Killed by the test: its tasks may run on under its data dir.
			if killed := testproc.Reap(nil, testproc.ArgValue(args, "data-dir")); len(killed) > 0 {
				t.Logf("agent left %d processes running; killed: %s", len(killed), strings.Join(killed, "; "))
			}
		default:
			stopAgentProc(t, p.cmd, exited, args)
		}
		if t.Failed() {
			t.Logf("agent %d output:\n%s", cmd.Process.Pid, w.String())
		}
	})
	return p, w
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ctrTask is what the host's containerd says about one drover container.
type ctrTask struct {
	id, task string
	status   containerd.ProcessStatus
	pid      uint32
}

// allocContainers lists the containers of an alloc in the driver's
// namespace, with their task status (empty when the task is gone).
func allocContainers(t *testing.T, c *containerd.Client, allocID string) map[string]ctrTask {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := c.Containers(ctx, fmt.Sprintf("labels.%q==%q", ctrdriver.LabelAllocID, allocID))
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	out := map[string]ctrTask{}
	for _, ct := range ctrs {
		labels, err := ct.Labels(ctx)
		if err != nil {
			t.Fatalf("container %s labels: %v", ct.ID(), err)
		}
		ti := ctrTask{id: ct.ID(), task: labels[ctrdriver.LabelTask]}
		if task, err := ct.Task(ctx, nil); err == nil {
			if st, err := task.Status(ctx); err == nil {
				ti.status = st.Status
			}
			ti.pid = task.Pid()
		}
		out[ti.task] = ti
	}
	return out
}

// TestE2EContainerd runs examples/web-containerd.hcl (one replica, the
// busybox OCI archive as its image, plus a task that prints its memory
// limit) on a dev agent started from the built binary against a private
// containerd: the alloc runs, the page and the limit are served, image
// import shows as a Driver task event; the agent is SIGKILLed, the
// containers keep running, a restarted agent on the same data dir
// reattaches to the same containers (no restart, "Reattached") and
// reports a stray container in its namespace without touching it; `job
// stop` completes the alloc and removes its containers.
func TestE2EContainerd(t *testing.T) {
	daemon, archive := ownContainerd(t)
	image := ctrdriver.ArchivePrefix + archive
	ctr, err := containerd.New(daemon.Address, containerd.WithDefaultNamespace(ctrdriver.DefaultNamespace))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctr.Close() })

	// The job: the example with the archive image and one replica, plus
	// limitsTask.
	src, err := os.ReadFile(filepath.Join("..", "examples", "web-containerd.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := jobspec.Parse("web-containerd.hcl", src, &jobspec.Options{
		Vars: map[string]string{"image": image, "replicas": "1"}, Env: []string{}})
	if err != nil {
		t.Fatalf("parse the example: %v", err)
	}
	extra, err := jobspec.Parse("limits.hcl", fmt.Appendf(nil, limitsTask, image), &jobspec.Options{Env: []string{}})
	if err != nil {
		t.Fatalf("parse the limits task: %v", err)
	}
	job.TaskGroups[0].Tasks = append(job.TaskGroups[0].Tasks, extra.TaskGroups[0].Tasks[0])
	job.TaskGroups[0].Volumes = extra.TaskGroups[0].Volumes
	weights := t.TempDir()
	if err := os.WriteFile(filepath.Join(weights, "model.txt"), []byte("llama-7b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(weights, 0o777); err != nil { // only the read-only mount stops writes
		t.Fatal(err)
	}
	body, err := json.Marshal(map[string]any{"Job": job})
	if err != nil {
		t.Fatal(err)
	}

	dataDir := t.TempDir()
	httpPort, raftPort := freePort(t), freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	env := []string{"CONTAINERD_ADDRESS=" + daemon.Address}
	args := []string{"-dev", "-data-dir", dataDir, "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(raftPort), "-host-volume", "weights=" + weights}
	p, _ := startAgentEnv(t, env, args...)
	waitLeader(t, p, base)

	var reg api.JobRegisterResponse
	if code := call(t, "PUT", base+"/v1/jobs", string(body), &reg); code != 200 {
		t.Fatalf("PUT /v1/jobs = %d", code)
	}

	// Blocking queries until the alloc runs.
	var alloc api.Allocation
	var idx uint64
	deadline := time.Now().Add(90 * time.Second)
	for alloc.ID == "" {
		if time.Now().After(deadline) {
			t.Fatal("the allocation did not run within 90s")
		}
		var stubs []*api.AllocListStub
		idx = getBlocking(t, fmt.Sprintf("%s/v1/job/web/allocations?index=%d&wait=5s", base, idx), &stubs)
		for _, s := range stubs {
			switch s.ClientStatus {
			case api.AllocClientStatusRunning:
				call(t, "GET", base+"/v1/allocation/"+s.ID, "", &alloc)
			case api.AllocClientStatusFailed:
				var a api.Allocation
				call(t, "GET", base+"/v1/allocation/"+s.ID, "", &a)
				b, _ := json.Marshal(a.TaskStates)
				t.Fatalf("the allocation failed: %s", b)
			}
		}
	}
	// Both tasks run (the alloc is running as soon as one does).
	testproc.Eventually(t, 30*time.Second, "both tasks running", func() bool {
		call(t, "GET", base+"/v1/allocation/"+alloc.ID, "", &alloc)
		return alloc.TaskStates["httpd"] != nil && alloc.TaskStates["httpd"].State == api.TaskStateRunning &&
			alloc.TaskStates["limits"] != nil && alloc.TaskStates["limits"].State == api.TaskStateRunning
	})

	// The archive import reached the task events as a Driver event.
	var driverEvents []string
	for _, name := range []string{"httpd", "limits"} {
		for _, e := range alloc.TaskStates[name].Events {
			if e.Type == api.TaskDriverMessage {
				driverEvents = append(driverEvents, name+": "+e.DisplayMessage)
			}
		}
	}
	t.Logf("Driver task events: %q", driverEvents)
	if !strings.Contains(strings.Join(driverEvents, "\n"), "importing image archive "+archive) {
		t.Errorf("Driver task events = %q, want the archive import", driverEvents)
	}

	logs := func(task string) string {
		t.Helper()
		r, err := http.Get(base + "/v1/client/fs/logs/" + alloc.ID + "?task=" + task + "&type=stdout&plain=true")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			t.Fatalf("logs of %s = %d %s", task, r.StatusCode, b)
		}
		return string(b)
	}
	wantLimit := fmt.Sprintf("memory limit: %d\nmodel: llama-7b\nmodels=readonly\n", 48<<20)
	testproc.Eventually(t, 20*time.Second, "the limits task's lines in its logs", func() bool { return strings.Contains(logs("limits"), "models=") })
	if got := logs("limits"); got != wantLimit {
		t.Errorf("limits task stdout = %q, want %q (the limit seen inside the container)", got, wantLimit)
	}

	// The example's httpd serves its rendered page on the group's port.
	hostPort := 0
	if ar := alloc.AllocatedResources; ar != nil {
		for _, pt := range ar.Shared.Ports {
			if pt.Label == "http" {
				hostPort = pt.Value
			}
		}
	}
	if hostPort == 0 {
		t.Fatalf("alloc has no http port: %+v", alloc.AllocatedResources)
	}
	page := func() string {
		r, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d/", hostPort))
		if err != nil {
			return ""
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	wantPage := "<h1>hello from web.web[0]</h1>\n"
	testproc.Eventually(t, 20*time.Second, "httpd to serve the page", func() bool { return page() == wantPage })

	before := allocContainers(t, ctr, alloc.ID)
	for _, name := range []string{"httpd", "limits"} {
		if c := before[name]; c.status != containerd.Running || c.pid == 0 {
			t.Fatalf("container of %s = %+v, want running with a pid", name, c)
		}
	}

	t.Logf("containers before the agent's SIGKILL: %+v", before)

	// SIGKILL the agent: the containers keep running without it.
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	orphaned := allocContainers(t, ctr, alloc.ID)
	for _, name := range []string{"httpd", "limits"} {
		c := orphaned[name]
		if c.status != containerd.Running || c.pid != before[name].pid {
			t.Errorf("after SIGKILL of the agent, %s = %+v, want still running as pid %d", name, c, before[name].pid)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", c.pid)); err != nil {
			t.Errorf("task process of %s (pid %d) is gone from the host: %v", name, c.pid, err)
		}
	}
	if got := page(); got != wantPage {
		t.Errorf("httpd without an agent answered %q, want the page", got)
	}

	// A container in the driver's namespace that no alloc owns: the
	// restarted agent must report it and leave it alone.
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stray, err := ctr.NewContainer(sctx, "stray-e2e", containerd.WithSpec(&specs.Spec{Version: specs.Version}),
		func(_ context.Context, _ *containerd.Client, c *containers.Container) error {
			c.Labels = map[string]string{"origin": "not drover"}
			return nil
		})
	if err != nil {
		t.Fatalf("create the stray container: %v", err)
	}

	// Restart on the same data dir: the same containers are reattached.
	p2, out2 := startAgentEnv(t, env, args...)
	waitLeader(t, p2, base)
	var again api.Allocation
	testproc.Eventually(t, 30*time.Second, "the restarted agent to reattach", func() bool {
		call(t, "GET", base+"/v1/allocation/"+alloc.ID, "", &again)
		for _, name := range []string{"httpd", "limits"} {
			ts := again.TaskStates[name]
			if ts == nil || !slices.ContainsFunc(ts.Events, func(e *api.TaskEvent) bool { return e.Type == api.TaskReattached }) {
				return false
			}
		}
		return true
	})
	if again.ClientStatus != api.AllocClientStatusRunning {
		t.Errorf("alloc after the agent restart = %q, want running", again.ClientStatus)
	}
	for _, name := range []string{"httpd", "limits"} {
		if ts := again.TaskStates[name]; ts.State != api.TaskStateRunning || ts.Restarts != 0 {
			t.Errorf("task %s after the agent restart: %s with %d restarts, want running with 0", name, ts.State, ts.Restarts)
		}
	}
	after := allocContainers(t, ctr, alloc.ID)
	for _, name := range []string{"httpd", "limits"} {
		if a, b := after[name], before[name]; a.id != b.id || a.pid != b.pid || a.status != containerd.Running {
			t.Errorf("container of %s after the agent restart = %+v, want the same one (%s, pid %d) running", name, a, b.id, b.pid)
		}
	}
	var stubs []*api.AllocListStub
	call(t, "GET", base+"/v1/job/web/allocations", "", &stubs)
	if len(stubs) != 1 || stubs[0].ID != alloc.ID {
		t.Errorf("job allocations after the agent restart = %d, want only %s (nothing replaced)", len(stubs), alloc.ID)
	}
	if got := logs("limits"); got != wantLimit {
		t.Errorf("limits task stdout after the restart = %q, want %q", got, wantLimit)
	}
	if got := page(); got != wantPage {
		t.Errorf("httpd after the agent restart answered %q, want the page", got)
	}
	log2 := out2.String()
	for _, l := range strings.Split(log2, "\n") {
		if strings.Contains(l, "leftover") {
			t.Logf("restarted agent: %s", l)
		}
	}
	if !strings.Contains(log2, `msg="leftover container not managed by drover"`) || !strings.Contains(log2, "id=stray-e2e") {
		t.Errorf("the restarted agent did not report the stray container at WARN")
	}
	for _, c := range after {
		if strings.Contains(log2, "id="+c.id) {
			t.Errorf("the restarted agent reported its own container %s as a leftover", c.id)
		}
	}

	// job stop through the CLI: the alloc completes, its containers go.
	cmd := exec.Command(droverBin(t), "job", "stop", "-detach", "web")
	cmd.Env = append(os.Environ(), "DROVER_ADDR="+base)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("drover job stop: %v\n%s", err, out)
	}
	testproc.Eventually(t, 60*time.Second, "the allocation to complete after job stop", func() bool {
		call(t, "GET", base+"/v1/allocation/"+alloc.ID, "", &again)
		return again.ClientTerminalStatus()
	})
	if again.ClientStatus != api.AllocClientStatusComplete {
		t.Errorf("alloc after job stop = %q, want complete", again.ClientStatus)
	}
	testproc.Eventually(t, 30*time.Second, "the alloc's containers to be removed", func() bool {
		return len(allocContainers(t, ctr, alloc.ID)) == 0
	})
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	if _, err := ctr.LoadContainer(lctx, stray.ID()); err != nil {
		t.Errorf("the stray container is gone (%v): leftovers must only be reported", err)
	}
	p2.stop(t)
}
