package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// droverBin and freePort are the shared test helpers (one binary per test
// process, built as `make build` builds it).
func droverBin(t testing.TB) string { return testproc.Binary(t) }

func freePort(t testing.TB) int { return testproc.FreePort(t) }

// agentProc is a running `drover agent` process.
type agentProc struct {
	cmd  *exec.Cmd
	done chan error
	log  *bytes.Buffer
}

type syncBuf struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// testGossipKey is the gossip key of servers the tests start outside dev
// mode (which needs one).
const testGossipKey = "KYED7/CBebtGgPJzlH4od8NnEqi7sp1yHIgRgYtuAOo="

func startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	cmd := exec.Command(droverBin(t), append([]string{"agent"}, args...)...)
	buf := &bytes.Buffer{}
	w := &syncBuf{b: buf}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agent: %v", err)
	}
	p := &agentProc{cmd: cmd, done: make(chan error, 1), log: buf}
	exited := make(chan struct{})
	go func() {
		p.done <- cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
			// Stopped or killed by the test: its tasks may run on under
			// its data dir.
			if killed := testproc.Reap(nil, testproc.ArgValue(args, "data-dir")); len(killed) > 0 {
				t.Logf("agent left %d processes running; killed: %s", len(killed), strings.Join(killed, "; "))
			}
		default:
			stopAgentProc(t, p.cmd, exited, args)
		}
		if t.Failed() {
			w.mu.Lock()
			t.Logf("agent output:\n%s", buf.String())
			w.mu.Unlock()
		}
	})
	return p
}

// stopAgentProc ends a test's agent process: SIGTERM (a dev agent stops
// its tasks and removes its temporary data dir), SIGKILL after 10 s;
// then the tasks it started, and any under its -data-dir (an agent with
// a data dir leaves them for the next run to reattach), are killed, so
// that no test leaves busybox httpd or `sleep 3600` behind (issue 47).
func stopAgentProc(t *testing.T, cmd *exec.Cmd, exited <-chan struct{}, args []string) {
	tasks := testproc.Descendants(cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	if killed := testproc.Reap(tasks, testproc.ArgValue(args, "data-dir")); len(killed) > 0 {
		t.Logf("agent left %d processes running; killed: %s", len(killed), strings.Join(killed, "; "))
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *agentProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("agent exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not exit within 30s of SIGTERM")
	}
}

// waitLeader polls the agent process's API (no signal crosses the
// process boundary) until it names a leader.
func waitLeader(t *testing.T, p *agentProc, base string) {
	t.Helper()
	testproc.Eventually(t, 20*time.Second, "a leader named by "+base, func() bool {
		select {
		case err := <-p.done:
			t.Fatalf("agent exited early: %v", err)
		default:
		}
		r, err := http.Get(base + "/v1/status/leader")
		if err != nil {
			return false
		}
		var leader string
		_ = json.NewDecoder(r.Body).Decode(&leader)
		r.Body.Close()
		return r.StatusCode == 200 && leader != ""
	})
}

func call(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if out != nil && r.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, url, b, err)
		}
	}
	if r.StatusCode != 200 {
		var eb api.ErrorBody
		if err := json.Unmarshal(b, &eb); err != nil || eb.Error == nil || eb.Error.Code == "" {
			t.Errorf("%s %s = %d with body %q, want a JSON error", method, url, r.StatusCode, b)
		}
	}
	return r.StatusCode
}

const e2eJob = `{"Job":{"ID":"web","TaskGroups":[{"Name":"web","Count":3,"Tasks":[{"Name":"srv","Driver":"exec",
"Config":{"command":"/bin/sleep","args":["300"]},"Resources":{"CPU":500,"MemoryMB":256}}]}]}}`

// TestE2EServerJobLifecycle runs the real binary as a single server
// without clients: a job registers, its eval completes with a blocked
// follow-up, bad input is rejected, and the job survives a restart.
func TestE2EServerJobLifecycle(t *testing.T) {
	dataDir := t.TempDir()
	httpPort, raftPort := freePort(t), freePort(t)
	args := []string{"-server", "-encrypt", testGossipKey, "-bootstrap-expect", "1", "-data-dir", dataDir, "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(raftPort)}
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)

	p := startAgent(t, args...)
	waitLeader(t, p, base)

	var leader string
	call(t, "GET", base+"/v1/status/leader", "", &leader)
	if want := fmt.Sprintf("127.0.0.1:%d", raftPort); leader != want {
		t.Errorf("leader = %q, want %q", leader, want)
	}

	var reg api.JobRegisterResponse
	if code := call(t, "PUT", base+"/v1/jobs", e2eJob, &reg); code != 200 || reg.EvalID == "" {
		t.Fatalf("PUT /v1/jobs = %d %+v, want 200 with an EvalID", code, reg)
	}

	// Follow the eval with blocking queries until it completes.
	var ev api.Evaluation
	var idx uint64
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := http.Get(fmt.Sprintf("%s/v1/evaluation/%s?index=%d&wait=5s", base, reg.EvalID, idx))
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		r.Body.Close()
		idx, _ = strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		if ev.TerminalStatus() || time.Now().After(deadline) {
			break
		}
	}
	if ev.Status != api.EvalStatusComplete || ev.BlockedEval == "" || len(ev.FailedTGAllocs) == 0 {
		t.Errorf("eval = status %q blocked %q failed %v, want complete with a blocked follow-up", ev.Status, ev.BlockedEval, ev.FailedTGAllocs)
	}

	var job api.Job
	if code := call(t, "GET", base+"/v1/job/web", "", &job); code != 200 || job.ID != "web" || job.TaskGroups[0].Count != 3 {
		t.Fatalf("GET /v1/job/web = %d %+v", code, job)
	}
	if job.Status != api.JobStatusPending {
		t.Errorf("job status %q, want pending (no clients)", job.Status)
	}
	var evals []*api.Evaluation
	call(t, "GET", base+"/v1/job/web/evaluations", "", &evals)
	var sawReg, sawBlocked bool
	for _, e := range evals {
		sawReg = sawReg || e.ID == reg.EvalID
		sawBlocked = sawBlocked || (e.ID == ev.BlockedEval && e.Status == api.EvalStatusBlocked)
	}
	if !sawReg || !sawBlocked {
		t.Errorf("job evaluations %d: register eval listed %v, blocked eval listed %v; want both", len(evals), sawReg, sawBlocked)
	}

	bad := `{"Job":{"ID":"bad","TaskGroups":[{"Name":"g","Count":-1,"Tasks":[{"Name":"t","Driver":"exec","Config":{"command":"/bin/true"}}]}]}}`
	if code := call(t, "PUT", base+"/v1/jobs", bad, nil); code != 400 {
		t.Errorf("Count -1: status %d, want 400", code)
	}
	if code := call(t, "GET", base+"/v1/job/nope", "", nil); code != 404 {
		t.Errorf("unknown job: status %d, want 404", code)
	}

	// Restart: the job is still there, unchanged.
	p.stop(t)
	p2 := startAgent(t, args...)
	waitLeader(t, p2, base)
	// A restarted server replays its Raft log once it leads again: poll
	// (with a deadline) until its state index reaches the job's write.
	testproc.Eventually(t, 20*time.Second, fmt.Sprintf("the restarted server replayed to index %d", job.JobModifyIndex), func() bool {
		r, err := http.Get(base + "/v1/jobs")
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		n, _ := strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		return n >= job.JobModifyIndex
	})
	var again api.Job
	if code := call(t, "GET", base+"/v1/job/web", "", &again); code != 200 {
		t.Fatalf("after restart GET /v1/job/web = %d, want 200", code)
	}
	if again.JobModifyIndex != job.JobModifyIndex || again.TaskGroups[0].Count != 3 {
		t.Errorf("after restart job index %d count %d, want %d and 3", again.JobModifyIndex, again.TaskGroups[0].Count, job.JobModifyIndex)
	}
	if code := call(t, "GET", base+"/v1/job/bad", "", nil); code != 404 {
		t.Errorf("rejected job exists after restart: status %d", code)
	}
	p2.stop(t)
}

// TestE2EClientForwarding runs a server and a separate client process:
// a raw_exec task's logs are read through the server's API, which
// forwards /v1/client/... to the client holding the allocation, and
// through `drover alloc logs` against the server.
func TestE2EClientForwarding(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	srvHTTP, srvRaft, cliHTTP := freePort(t), freePort(t), freePort(t)
	srvBase := fmt.Sprintf("http://127.0.0.1:%d", srvHTTP)
	cliBase := fmt.Sprintf("http://127.0.0.1:%d", cliHTTP)
	srv := startAgent(t, "-server", "-encrypt", testGossipKey, "-bootstrap-expect", "1", "-data-dir", t.TempDir(), "-bind", "127.0.0.1",
		"-http-port", strconv.Itoa(srvHTTP), "-raft-port", strconv.Itoa(srvRaft))
	waitLeader(t, srv, srvBase)

	cfgFile := filepath.Join(t.TempDir(), "client.hcl")
	if err := os.WriteFile(cfgFile, []byte("plugin \"raw_exec\" {\n  config {\n    enabled = true\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := startAgent(t, "-client", "-servers", fmt.Sprintf("127.0.0.1:%d", srvHTTP), "-data-dir", t.TempDir(),
		"-bind", "127.0.0.1", "-http-port", strconv.Itoa(cliHTTP), "-config", cfgFile, "-node", "e2e-client")

	job := `{"Job":{"ID":"hello","TaskGroups":[{"Name":"hello","Count":1,"Tasks":[{"Name":"hello","Driver":"raw_exec",
"Config":{"command":"/bin/sh","args":["-c","echo hello from drover; exec sleep 300"]},"Resources":{"CPU":100,"MemoryMB":64}}]}]}}`
	var reg api.JobRegisterResponse
	if code := call(t, "PUT", srvBase+"/v1/jobs", job, &reg); code != 200 {
		t.Fatalf("register = %d", code)
	}

	// Wait (blocking queries) until the allocation runs on the client.
	var allocID string
	var idx uint64
	deadline := time.Now().Add(30 * time.Second)
	for allocID == "" {
		if time.Now().After(deadline) {
			t.Fatal("allocation not running within 30s")
		}
		r, err := http.Get(fmt.Sprintf("%s/v1/job/hello/allocations?index=%d&wait=5s", srvBase, idx))
		if err != nil {
			t.Fatal(err)
		}
		var stubs []*api.AllocListStub
		_ = json.NewDecoder(r.Body).Decode(&stubs)
		r.Body.Close()
		idx, _ = strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		for _, s := range stubs {
			if s.ClientStatus == api.AllocClientStatusRunning {
				allocID = s.ID
			}
		}
	}

	// The log line is written by the task itself; poll with a deadline.
	logs := func(base string) string {
		r, err := http.Get(base + "/v1/client/fs/logs/" + allocID + "?task=hello&type=stdout&plain=true")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			t.Fatalf("GET %s logs = %d %s", base, r.StatusCode, b)
		}
		return string(b)
	}
	testproc.Eventually(t, 10*time.Second, "the log line on the client", func() bool {
		return bytes.Contains([]byte(logs(cliBase)), []byte("hello from drover"))
	})
	if got := logs(srvBase); !bytes.Contains([]byte(got), []byte("hello from drover")) {
		t.Errorf("logs through the server = %q, want the task's line (forwarded to the client)", got)
	}
	out, err := exec.Command(droverBin(t), "alloc", "logs", "-address", srvBase, allocID[:8]).CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("hello from drover")) {
		t.Errorf("drover alloc logs via the server: %v %q", err, out)
	}
	drover := func(args ...string) (string, error) {
		out, err := exec.Command(droverBin(t), append(args, "-address", srvBase)...).CombinedOutput()
		return string(out), err
	}
	if out, err := drover("alloc", "fs", allocID[:8]); err != nil || !bytes.Contains([]byte(out), []byte("hello/")) || !bytes.Contains([]byte(out), []byte("alloc/")) {
		t.Errorf("drover alloc fs via the server: %v %q, want the alloc dir listing", err, out)
	}
	if out, err := drover("alloc", "fs", allocID[:8], "alloc/logs"); err != nil || !bytes.Contains([]byte(out), []byte("hello.stdout")) {
		t.Errorf("drover alloc fs alloc/logs: %v %q, want the task's log files", err, out)
	}
	if out, err := drover("alloc", "logs", "-tail", "-n", "1", allocID[:8], "hello"); err != nil || string(out) != "hello from drover\n" {
		t.Errorf("drover alloc logs -tail -n 1: %v %q, want the last line", err, out)
	}
	if out, err := drover("alloc", "signal", "-s", "SIGCONT", allocID[:8], "hello"); err != nil {
		t.Errorf("drover alloc signal: %v %q", err, out)
	}
	if out, err := drover("alloc", "status", allocID[:8]); err != nil || !bytes.Contains([]byte(out), []byte(`Task "hello" is "running"`)) {
		t.Errorf("drover alloc status: %v %q", err, out)
	}
	if out, err := drover("job", "status", "hello"); err != nil || !bytes.Contains([]byte(out), []byte("Recent Task Events")) || !bytes.Contains([]byte(out), []byte("running")) {
		t.Errorf("drover job status hello: %v %q, want the running allocation and its task events", err, out)
	}
	// The client agent has no server role: it proxies server API calls.
	var viaClient api.Job
	if code := call(t, "GET", cliBase+"/v1/job/hello", "", &viaClient); code != 200 || viaClient.ID != "hello" {
		t.Errorf("GET /v1/job/hello on the client agent = %d %+v, want the job (proxied to the server)", code, viaClient.ID)
	}
	if code := call(t, "GET", cliBase+"/v1/job/nope", "", nil); code != 404 {
		t.Errorf("GET /v1/job/nope on the client agent = %d, want 404 from the server", code)
	}
	if out, err := drover("node", "status", "-json"); err != nil || !bytes.Contains([]byte(out), []byte("e2e-client")) {
		t.Errorf("drover node status -json: %v %q, want the client node", err, out)
	}
	if code := call(t, "GET", srvBase+"/v1/client/fs/logs/00000000-0000-0000-0000-000000000000?task=x&type=stdout", "", nil); code != 404 {
		t.Errorf("logs of an unknown alloc through the server: %d, want 404", code)
	}

	// Stop the job and wait until the task is gone before stopping the agents
	// (a non-dev client leaves tasks running across its own restarts).
	call(t, "DELETE", srvBase+"/v1/job/hello?purge=false", "", nil)
	deadline = time.Now().Add(30 * time.Second)
	for {
		var a api.Allocation
		r, err := http.Get(fmt.Sprintf("%s/v1/allocation/%s?index=%d&wait=5s", srvBase, allocID, idx))
		if err != nil {
			t.Fatal(err)
		}
		_ = json.NewDecoder(r.Body).Decode(&a)
		r.Body.Close()
		idx, _ = strconv.ParseUint(r.Header.Get(api.HeaderIndex), 10, 64)
		if a.ClientTerminalStatus() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("allocation still %q 30s after the job stopped", a.ClientStatus)
		}
	}
	var nodes []*api.NodeListStub
	call(t, "GET", srvBase+"/v1/nodes", "", &nodes)
	if len(nodes) != 1 {
		t.Fatalf("nodes = %d, want 1", len(nodes))
	}
	if out, err := drover("node", "eligibility", "-disable", nodes[0].ID[:8]); err != nil {
		t.Errorf("drover node eligibility -disable: %v %q", err, out)
	}
	if out, err := drover("node", "drain", "-enable", "-yes", "-deadline", "1m", nodes[0].ID[:8]); err != nil {
		t.Errorf("drover node drain -enable: %v %q", err, out)
	}
	var node api.Node
	call(t, "GET", srvBase+"/v1/node/"+nodes[0].ID, "", &node)
	if node.SchedulingEligibility != api.NodeSchedulingIneligible || (!node.Drain && node.LastDrain == nil) {
		t.Errorf("after drain: eligibility %q drain %v last %v, want ineligible and a drain", node.SchedulingEligibility, node.Drain, node.LastDrain)
	}
	if out, err := drover("node", "drain", "-disable", nodes[0].ID[:8]); err != nil {
		t.Errorf("drover node drain -disable: %v %q", err, out)
	}
	call(t, "GET", srvBase+"/v1/node/"+nodes[0].ID, "", &node)
	if node.Drain || node.SchedulingEligibility != api.NodeSchedulingEligible {
		t.Errorf("after drain -disable: drain %v eligibility %q, want eligible", node.Drain, node.SchedulingEligibility)
	}
	cli.stop(t)
	srv.stop(t)
}

// BenchmarkDevAgentStartInProcess measures `drover agent -dev` start-up in
// process: from New to a leader and a ready client node (target < 0.5 s).
func BenchmarkDevAgentStartInProcess(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("the client role needs root")
	}
	for i := 0; i < b.N; i++ {
		cfg := config.Dev()
		cfg.Ports.HTTP = 0
		cfg.Name = "bench"
		a, err := agent.New(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		if err := a.Start(ctx); err != nil {
			b.Fatal(err)
		}
		c := api.NewClient(a.HTTPAddr())
		var idx uint64
		for {
			// Blocking query on the node list: wakes when the node registers.
			nodes, m, err := c.Nodes(ctx, &api.QueryOptions{WaitIndex: idx, WaitTime: 5 * time.Second})
			if err == nil && len(nodes) == 1 && nodes[0].Status == api.NodeStatusReady {
				break
			}
			if m != nil {
				idx = m.LastIndex
			}
		}
		b.StopTimer()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := a.Shutdown(sctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		b.StartTimer()
	}
}
