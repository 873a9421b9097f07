package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// devDeadline bounds every wait of the dev-agent tests: generous, since
// `make test` runs them on a loaded 2-core machine.
const devDeadline = 60 * time.Second

// devCluster is one `drover agent -dev` with a data dir, restartable on it.
type devCluster struct {
	t       *testing.T
	bin     string
	dataDir string
	base    string
	args    []string
	p       *agentProc
}

// startDevCluster starts a dev agent; extra are more agent flags
// ("-dev-gpus", "dgxh100").
func startDevCluster(t *testing.T, extra ...string) *devCluster {
	t.Helper()
	d := &devCluster{t: t, bin: droverBin(t), dataDir: t.TempDir()}
	httpPort := freePort(t)
	d.base = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	d.args = []string{"-dev", "-data-dir", d.dataDir, "-bind", "127.0.0.1", "-http-port", strconv.Itoa(httpPort),
		"-raft-port", strconv.Itoa(freePort(t)), "-gossip-port", strconv.Itoa(freePort(t))}
	d.args = append(d.args, extra...)
	d.start()
	return d
}

// start runs the agent on the data dir and waits for a leader and a
// ready client node. A test that fails leaves no task behind: the agent
// is stopped with SIGTERM first (a dev agent stops its allocations on
// the way out) before startAgent's cleanup kills it.
func (d *devCluster) start() {
	t := d.t
	t.Helper()
	p := startAgent(t, d.args...)
	d.p = p
	t.Cleanup(func() {
		if p.cmd.ProcessState != nil {
			return // stopped or killed by the test
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(30 * time.Second):
		}
	})
	waitLeader(t, p, d.base)
	waitFor(t, devDeadline, "a ready client node", func() (bool, string) {
		var nodes []*api.NodeListStub
		if code := devGet(d.base+"/v1/nodes", &nodes); code != 200 || len(nodes) != 1 {
			return false, fmt.Sprintf("status %d, %d nodes", code, len(nodes))
		}
		return nodes[0].Status == api.NodeStatusReady, "node " + nodes[0].Status
	})
}

// kill SIGKILLs the agent and waits for it to be gone.
func (d *devCluster) kill() {
	d.t.Helper()
	if err := d.p.cmd.Process.Kill(); err != nil {
		d.t.Fatal(err)
	}
	<-d.p.done
}

// drover runs the real CLI against the agent.
func (d *devCluster) drover(args ...string) (string, error) {
	cmd := exec.Command(d.bin, args...)
	cmd.Env = append(os.Environ(), "DROVER_ADDR="+d.base)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runJob submits an HCL job file with `drover job run` and returns its
// single allocation once it runs.
func (d *devCluster) runJob(file, jobID string) string {
	d.t.Helper()
	if out, err := d.drover("job", "run", file); err != nil {
		d.t.Fatalf("drover job run %s: %v\n%s", file, err, out)
	}
	var allocID string
	d.waitBlocking("/v1/job/"+jobID+"/allocations", "a running allocation of "+jobID, func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, s := range stubs {
			got = append(got, s.ClientStatus)
			if s.ClientStatus == api.AllocClientStatusRunning {
				allocID = s.ID
			}
		}
		return allocID != "", fmt.Sprint(got)
	})
	return allocID
}

// waitBlocking follows path with blocking queries until cond holds.
func (d *devCluster) waitBlocking(path, what string, cond func(body []byte) (bool, string)) {
	d.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var idx uint64
	waitFor(d.t, devDeadline, what, func() (bool, string) {
		r, err := http.Get(fmt.Sprintf("%s%s%sindex=%d&wait=5s", d.base, path, sep, idx))
		if err != nil {
			return false, err.Error()
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			return false, fmt.Sprintf("status %d: %s", r.StatusCode, b)
		}
		idx, _ = strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		return cond(b)
	})
}

// alloc waits until the allocation satisfies cond and returns it.
func (d *devCluster) alloc(id, what string, cond func(a *api.Allocation) (bool, string)) *api.Allocation {
	d.t.Helper()
	var a *api.Allocation
	d.waitBlocking("/v1/allocation/"+id, what, func(b []byte) (bool, string) {
		a = &api.Allocation{}
		if err := json.Unmarshal(b, a); err != nil {
			return false, err.Error()
		}
		return cond(a)
	})
	return a
}

// logs reads a task's stdout through the client API.
func (d *devCluster) logs(allocID, task string) string {
	r, err := http.Get(d.base + "/v1/client/fs/logs/" + allocID + "?task=" + task + "&type=stdout&plain=true")
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		return ""
	}
	return string(b)
}

var pidLine = regexp.MustCompile(`(?m)^pid=(\d+)$`)

// taskPID waits for the task's "pid=N" line and returns N.
func (d *devCluster) taskPID(allocID, task string) int {
	d.t.Helper()
	var pid int
	waitFor(d.t, devDeadline, "the task's pid line", func() (bool, string) {
		out := d.logs(allocID, task)
		m := pidLine.FindStringSubmatch(out)
		if m == nil {
			return false, fmt.Sprintf("stdout %q", out)
		}
		pid, _ = strconv.Atoi(m[1])
		return true, ""
	})
	return pid
}

func devGet(url string, out any) int {
	r, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer r.Body.Close()
	if r.StatusCode == 200 && out != nil && json.NewDecoder(r.Body).Decode(out) != nil {
		return -1
	}
	return r.StatusCode
}

// allocProcs lists the live processes whose environment carries the
// allocation's ID (the task and anything it started, not its executor).
func allocProcs(allocID string) []int {
	ents, _ := os.ReadDir("/proc")
	want := []byte("DROVER_ALLOC_ID=" + allocID + "\x00")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if st, err := procState(pid); err == nil && st != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// taskProcs maps each task of the allocation to its live processes (by
// DROVER_TASK_NAME in their environment).
func taskProcs(allocID string) map[string][]int {
	out := map[string][]int{}
	for _, pid := range allocProcs(allocID) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if name, ok := strings.CutPrefix(kv, "DROVER_TASK_NAME="); ok {
				out[name] = append(out[name], pid)
			}
		}
	}
	return out
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	st, err := procState(pid)
	return err == nil && st != "Z"
}

// reapTasks kills what an allocation left running when a test fails
// before it could stop its job.
func reapTasks(t *testing.T, allocID string) {
	t.Cleanup(func() {
		for _, pid := range allocProcs(allocID) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func events(ts *api.TaskState) (types []string, n map[string]int) {
	n = map[string]int{}
	for _, e := range ts.Events {
		types = append(types, e.Type)
		n[e.Type]++
	}
	return types, n
}

// everyTask reports whether ok holds for each of the tasks' states (and
// their event counts), and the states with their events.
func everyTask(a *api.Allocation, tasks []string, ok func(ts *api.TaskState, n map[string]int) bool) (bool, string) {
	var st []string
	all := true
	for _, task := range tasks {
		ts := a.TaskStates[task]
		if ts == nil {
			return false, "no state for " + task
		}
		types, n := events(ts)
		st = append(st, fmt.Sprintf("%s: %s %v", task, ts.State, types))
		all = all && ok(ts, n)
	}
	return all, strings.Join(st, "; ")
}

// pidJobHCL runs the same long task three ways: exec sharing the host's
// PID namespace (so it prints its host PID), exec in its own PID
// namespace (the default), and raw_exec.
const pidJobHCL = `job "pidjob" {
  group "g" {
    task "long" {
      driver = "exec"
      config {
        command  = "/bin/sh"
        args     = ["-c", "echo pid=$$; exec sleep 3600"]
        pid_mode = "host"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
    task "isolated" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo pid=$$; exec sleep 3600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
    task "raw" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo pid=$$; exec sleep 3600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

var pidJobTasks = []string{"long", "isolated", "raw"}

// exitJobHCL's task prints its PID, waits for the test to create
// /alloc/go (while the agent is down), prints a line and exits 3; it
// must be neither restarted nor rescheduled.
const exitJobHCL = `job "exit3" {
  type = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "exit3" {
      driver = "exec"
      config {
        command  = "/bin/sh"
        args     = ["-c", "echo pid=$$; while [ ! -e /alloc/go ]; do sleep 0.05; done; echo released; exit 3"]
        pid_mode = "host"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

// TestE2EDevAgent is issue 4's end-to-end check with the built binary:
// `drover agent -dev` runs examples/hello-exec.hcl submitted by the real
// CLI, serves its log, stops it; a long task survives a SIGKILLed agent
// and is reattached (same process, no restart, no duplicate); a task
// that exits while the agent is down has its exit code captured after
// the restart and is not run again.
func TestE2EDevAgent(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the exec driver needs root outside CI")
	}
	d := startDevCluster(t)

	// 1. hello-exec.hcl through the CLI: running, its log, stopped.
	hello := d.runJob("../examples/hello-exec.hcl", "hello")
	reapTasks(t, hello)
	waitFor(t, devDeadline, "hello's log line", func() (bool, string) {
		out := d.logs(hello, "hello")
		return strings.Contains(out, "hello from drover"), fmt.Sprintf("stdout %q", out)
	})
	if out, err := d.drover("job", "stop", "hello"); err != nil {
		t.Fatalf("drover job stop hello: %v\n%s", err, out)
	}
	d.alloc(hello, "hello's allocation complete", func(a *api.Allocation) (bool, string) {
		return a.ClientStatus == api.AllocClientStatusComplete, a.ClientStatus
	})
	waitFor(t, devDeadline, "hello's task process gone", func() (bool, string) {
		p := allocProcs(hello)
		return len(p) == 0, fmt.Sprint(p)
	})

	// 2. A long task survives a SIGKILLed agent and is reattached.
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pidjob.hcl")
	exitFile := filepath.Join(dir, "exit3.hcl")
	for f, s := range map[string]string{pidFile: pidJobHCL, exitFile: exitJobHCL} {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := d.runJob(pidFile, "pidjob")
	reapTasks(t, long)
	// The alloc reads running once one task runs; a task's process runs
	// (and prints its pid) a moment before the client has stored its
	// handle. Kill only once the client reported every task started: it
	// reports after storing the handle that reattaching needs.
	d.alloc(long, "every task of pidjob reported started", func(a *api.Allocation) (bool, string) {
		return everyTask(a, pidJobTasks, func(ts *api.TaskState, n map[string]int) bool {
			return ts.State == api.TaskStateRunning && n[api.TaskStarted] > 0
		})
	})
	pid := d.taskPID(long, "long")
	for _, task := range pidJobTasks[1:] {
		d.taskPID(long, task) // each task has started its sleep
	}
	// A task prints its pid just before it execs sleep; while the exec is
	// under way its environment cannot be read, so look until it settles.
	var before map[string][]int
	waitFor(t, devDeadline, fmt.Sprintf("one process per task, long's being pid %d (the one it printed)", pid), func() (bool, string) {
		before = taskProcs(long)
		ok := len(before) == 3 && len(before["long"]) == 1 && before["long"][0] == pid && len(before["isolated"]) == 1 && len(before["raw"]) == 1
		return ok, fmt.Sprint(before)
	})
	d.kill()
	for task, pids := range before {
		if !alive(pids[0]) {
			t.Fatalf("task %s (pid %d) died with the agent", task, pids[0])
		}
	}
	d.start()
	a := d.alloc(long, "every task of pidjob reattached", func(a *api.Allocation) (bool, string) {
		return everyTask(a, pidJobTasks, func(_ *api.TaskState, n map[string]int) bool { return n[api.TaskReattached] > 0 })
	})
	if a.ClientStatus != api.AllocClientStatusRunning {
		t.Errorf("after reattach: alloc %s, want running", a.ClientStatus)
	}
	for _, task := range pidJobTasks {
		ts := a.TaskStates[task]
		types, n := events(ts)
		if ts.State != api.TaskStateRunning || ts.Restarts != 0 || n[api.TaskStarted] != 1 {
			t.Errorf("after reattach: task %s %s, restarts %d, events %v; want running, 0, one Started",
				task, ts.State, ts.Restarts, types)
		}
		if out := d.logs(long, task); len(pidLine.FindAllString(out, -1)) != 1 {
			t.Errorf("task %s stdout after restart %q, want a single pid line (started once)", task, out)
		}
	}
	t.Logf("pidjob reattached: processes %v", before)
	if after := taskProcs(long); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("task processes after restart = %v, want the same %v (no duplicate, none lost)", after, before)
	}
	var stubs []*api.AllocListStub
	if code := devGet(d.base+"/v1/job/pidjob/allocations", &stubs); code != 200 || len(stubs) != 1 {
		t.Errorf("pidjob allocations = %d (status %d), want 1", len(stubs), code)
	}
	if out, err := d.drover("job", "stop", "pidjob"); err != nil {
		t.Fatalf("drover job stop pidjob: %v\n%s", err, out)
	}
	d.alloc(long, "the reattached allocation complete", func(a *api.Allocation) (bool, string) {
		return a.ClientStatus == api.AllocClientStatusComplete, a.ClientStatus
	})
	waitFor(t, devDeadline, "the reattached tasks' processes gone", func() (bool, string) {
		var left []int
		for _, pids := range before {
			for _, p := range pids {
				if alive(p) {
					left = append(left, p)
				}
			}
		}
		return len(left) == 0, fmt.Sprintf("alive: %v", left)
	})

	// 3. A task that exits while the agent is down: its exit code is
	// captured after the restart; it is neither restarted nor rescheduled.
	batch := d.runJob(exitFile, "exit3")
	reapTasks(t, batch)
	bpid := d.taskPID(batch, "exit3")
	d.kill()
	if !alive(bpid) {
		t.Fatalf("batch task pid %d died with the agent", bpid)
	}
	gate := filepath.Join(d.dataDir, "client", "alloc", batch, "alloc", "go")
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatalf("release the batch task: %v", err)
	}
	waitFor(t, devDeadline, "the batch task's exit while the agent is down", func() (bool, string) {
		return !alive(bpid), fmt.Sprintf("pid %d alive", bpid)
	})
	d.start()
	a = d.alloc(batch, "the batch allocation failed", func(a *api.Allocation) (bool, string) {
		return a.ClientStatus == api.AllocClientStatusFailed, a.ClientStatus
	})
	ts := a.TaskStates["exit3"]
	if ts == nil {
		t.Fatalf("failed allocation has no state for task exit3: %+v", a.TaskStates)
	}
	types, n := events(ts)
	var term *api.TaskEvent
	for _, e := range ts.Events {
		if e.Type == api.TaskTerminated {
			term = e
		}
	}
	t.Logf("batch task pid %d exited while the agent was down: events %v", bpid, types)
	if term == nil || term.ExitCode != 3 {
		t.Errorf("batch task events %v, want a Terminated event with exit code 3 (got %+v)", types, term)
	}
	if ts.State != api.TaskStateDead || !ts.Failed || ts.Restarts != 0 || n[api.TaskStarted] != 1 {
		t.Errorf("batch task: state %s failed %v restarts %d events %v; want dead, failed, 0 restarts, one Started",
			ts.State, ts.Failed, ts.Restarts, types)
	}
	// Not re-run: once every evaluation of the job is done, it still has
	// its one allocation.
	d.waitBlocking("/v1/job/exit3/evaluations", "exit3's evaluations done", func(b []byte) (bool, string) {
		var evals []*api.Evaluation
		if err := json.Unmarshal(b, &evals); err != nil {
			return false, err.Error()
		}
		var st []string
		done := true
		for _, e := range evals {
			st = append(st, e.Status)
			done = done && e.TerminalStatus()
		}
		return done, fmt.Sprint(st)
	})
	if code := devGet(d.base+"/v1/job/exit3/allocations", &stubs); code != 200 || len(stubs) != 1 {
		t.Errorf("exit3 allocations = %d (status %d), want 1 (not rescheduled)", len(stubs), code)
	}
	if out := d.logs(batch, "exit3"); len(pidLine.FindAllString(out, -1)) != 1 || !strings.HasSuffix(out, "\nreleased\n") {
		t.Errorf("batch stdout %q, want a single pid line (not restarted) and the line written while the agent was down", out)
	}
	d.p.stop(t)
}

// TestE2EJobFileCLI is issue 2's check with the binary `make build`
// produces: every example validates, a job file with a typo'd attribute
// and `count = "x"` fails with both errors as file:line:col, and
// `job run -output` prints the job's JSON without any server.
func TestE2EJobFileCLI(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("make is missing: %v", err)
		}
		t.Skip("make is not installed")
	}
	// `make build` writes bin/drover; here it builds into a temp dir, so
	// that the test leaves the tree alone.
	dry := exec.Command("make", "-n", "build")
	dry.Dir = ".."
	if out, err := dry.CombinedOutput(); err != nil || !strings.Contains(string(out), "-o bin/drover") {
		t.Errorf("make -n build: %v %q, want a build to bin/drover", err, out)
	}
	bin := filepath.Join(t.TempDir(), "bin", "drover")
	mk := exec.Command("make", "build", "BIN="+bin)
	mk.Dir = ".."
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	if st, err := os.Stat(bin); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("make build left no executable at %s: %v", bin, err)
	}
	drover := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		// Nothing listens there: these commands must not need a server.
		cmd.Env = append(os.Environ(), fmt.Sprintf("DROVER_ADDR=http://127.0.0.1:%d", freePort(t)))
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			code = ee.ExitCode()
		default:
			t.Fatalf("run drover %v: %v", args, err)
		}
		return code, o.String(), e.String()
	}

	examples, err := filepath.Glob("../examples/*.hcl")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	code, out, errOut := drover(append([]string{"job", "validate"}, examples...)...)
	if code != 0 {
		t.Errorf("drover job validate examples/*.hcl: exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, f := range examples {
		if !strings.Contains(out, f+": Job validation successful") {
			t.Errorf("validate output %q does not report %s valid", out, f)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.hcl")
	if err := os.WriteFile(bad, []byte(`job "bad" {
  group "g" {
    count = "x"
    task "t" {
      drivr = "exec"
    }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = drover("job", "validate", bad)
	if code != 1 {
		t.Errorf("validate a bad file: exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{bad + `:3:13: Invalid value for "count"`, bad + `:5:7: Unsupported argument: An argument named "drivr"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not contain %q", errOut, want)
		}
	}

	code, out, errOut = drover("job", "run", "-output", "../examples/hello-exec.hcl")
	var req struct {
		Job map[string]json.RawMessage
	}
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil {
		t.Fatalf("job run -output: exit %d, stdout %q, stderr %q; want 0 and JSON", code, out, errOut)
	}
	var groups []*api.TaskGroup
	if err := json.Unmarshal(req.Job["TaskGroups"], &groups); err != nil || len(groups) != 1 || groups[0].Name != "hello" {
		t.Errorf("job run -output: TaskGroups %s (%v), want the hello group", req.Job["TaskGroups"], err)
	}
}

// TestE2EServerBlockingQuery completes issue 3's checks on a single
// server process (TestE2EServerJobLifecycle covers the rest): a blocking
// query with ?index= and no change holds for its wait and answers the
// same index; one held when a job registers returns with the job and a
// higher index; the job's evaluation is listed as complete.
func TestE2EServerBlockingQuery(t *testing.T) {
	httpPort := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p := startAgent(t, "-server", "-encrypt", testGossipKey, "-bootstrap-expect", "1", "-data-dir", t.TempDir(), "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(freePort(t)), "-gossip-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)

	type answer struct {
		jobs    []*api.JobListStub
		index   uint64
		elapsed time.Duration
		err     error
	}
	jobs := func(index uint64, wait string) answer {
		start := time.Now()
		r, err := http.Get(fmt.Sprintf("%s/v1/jobs?index=%d&wait=%s", base, index, wait))
		if err != nil {
			return answer{err: err}
		}
		defer r.Body.Close()
		var a answer
		if r.StatusCode != 200 {
			b, _ := io.ReadAll(r.Body)
			return answer{err: fmt.Errorf("status %d: %s", r.StatusCode, b)}
		}
		a.err = json.NewDecoder(r.Body).Decode(&a.jobs)
		a.index, _ = strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		a.elapsed = time.Since(start)
		return a
	}
	first := jobs(0, "1s")
	if first.err != nil || first.index == 0 || len(first.jobs) != 0 {
		t.Fatalf("GET /v1/jobs = %+v, want no jobs and an index", first)
	}
	// Nothing changes: the query holds for its whole wait (a lower bound,
	// which load can only lengthen), then answers the same index.
	if idle := jobs(first.index, "1s"); idle.err != nil || idle.index != first.index || idle.elapsed < time.Second {
		t.Errorf("blocking query without a change = index %d after %v (%v), want index %d after >= 1s",
			idle.index, idle.elapsed, idle.err, first.index)
	}

	// A change: the held query returns with it.
	held := make(chan answer, 1)
	go func() { held <- jobs(first.index, "60s") }()
	var reg api.JobRegisterResponse
	if code := call(t, "PUT", base+"/v1/jobs", e2eJob, &reg); code != 200 {
		t.Fatalf("PUT /v1/jobs = %d", code)
	}
	got := <-held
	if got.err != nil || got.index <= first.index || len(got.jobs) != 1 || got.jobs[0].ID != "web" || got.elapsed >= 60*time.Second {
		t.Errorf("blocking query across a registration = %d jobs, index %d after %v (%v), want job web at an index > %d before the wait ends",
			len(got.jobs), got.index, got.elapsed, got.err, first.index)
	}

	// The registration's evaluation is listed under the job as complete.
	var idx uint64
	waitFor(t, devDeadline, "the register evaluation listed complete", func() (bool, string) {
		r, err := http.Get(fmt.Sprintf("%s/v1/job/web/evaluations?index=%d&wait=5s", base, idx))
		if err != nil {
			return false, err.Error()
		}
		defer r.Body.Close()
		var evals []*api.Evaluation
		if err := json.NewDecoder(r.Body).Decode(&evals); err != nil {
			return false, err.Error()
		}
		idx, _ = strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		for _, e := range evals {
			if e.ID == reg.EvalID {
				return e.Status == api.EvalStatusComplete, e.Status
			}
		}
		return false, fmt.Sprintf("%d evaluations, none is %s", len(evals), reg.EvalID)
	})
	p.stop(t)
}

// reapLeftovers registers a cleanup that SIGKILLs every process whose
// command line names dir (a client's executors: their config lives under
// its data dir) and all their descendants (the tasks). A client outside
// dev mode leaves its tasks running when it stops, by design; a test
// whose client it is must not leave them behind. Register it before the
// agent starts, so that it runs after the agent's own cleanup.
func reapLeftovers(t *testing.T, dir string) {
	t.Helper()
	t.Cleanup(func() {
		parent := map[int]int{}
		var roots []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) < 2 {
				continue
			}
			parent[pid], _ = strconv.Atoi(f[1])
			if cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && bytes.Contains(cmdline, []byte(dir)) {
				roots = append(roots, pid)
			}
		}
		var kill []int
		var under func(int)
		under = func(p int) {
			kill = append(kill, p)
			for c, pp := range parent {
				if pp == p {
					under(c)
				}
			}
		}
		for _, r := range roots {
			under(r)
		}
		for _, p := range kill {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if left := waitGone(kill, 10*time.Second); len(left) > 0 {
			t.Errorf("processes of %s still alive after SIGKILL: %v", dir, left)
		}
	})
}
