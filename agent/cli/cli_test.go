package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/server"
)

// startAPI runs a real server-only agent (in-memory Raft) on a free port
// and returns its address.
func startAPI(t *testing.T) string {
	t.Helper()
	return startAgent(t, false)
}

// startAgent runs a real dev agent, with the client role when client is
// set, on a free port and returns its address once its server is ready.
func startAgent(t *testing.T, client bool, mod ...func(*config.Config)) string {
	t.Helper()
	addr, _ := startAgentServer(t, client, mod...)
	return addr
}

// startAgentServer is startAgent that also returns the agent's server,
// whose signals and state the test waits on.
func startAgentServer(t *testing.T, client bool, mod ...func(*config.Config)) (string, *server.Server) {
	t.Helper()
	cfg := config.Dev()
	cfg.Client.Enabled = client
	for _, m := range mod {
		m(cfg)
	}
	cfg.Ports.HTTP = 0
	cfg.Name = "cli-test"
	a := testcluster.StartAgent(t, cfg)
	testcluster.WaitReady(t, a.Server())
	return "http://" + a.HTTPAddr(), a.Server()
}

const webHCL = `job "web" {
  group "web" {
    count = 2
    task "srv" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`

func TestCLIUsageExitCodes(t *testing.T) {
	for _, args := range [][]string{
		{"job", "run"},
		{"job", "status", "a", "b"},
		{"job", "stop"},
		{"job", "plan"},
		{"job", "inspect"},
		{"node", "drain", "n1"},
		{"node", "drain", "-enable", "-disable", "n1"},
		{"node", "eligibility", "n1"},
		{"alloc", "status"},
		{"alloc", "logs"},
		{"eval", "status"},
		{"job", "status", "-bogus-flag"},
		{"nosuchcommand"},
		{"job", "nosuchverb"},
		{"node", "nosuchverb", "x"},
		{"operator", "raft", "nosuchverb"},
		{"agent"},
		{"agent", "-server"},
		{"agent", "-dev", "-log-level", "loud"},
		{"agent", "-dev", "-bind", "not-an-ip"},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != ExitUsage {
			t.Errorf("drover %s: exit %d (stderr %q), want %d", strings.Join(args, " "), code, stderr, ExitUsage)
		}
		if stderr == "" {
			t.Errorf("drover %s: no message on stderr", strings.Join(args, " "))
		}
	}
}

// TestCLIAgentRefusesOpenBind: an agent other machines could reach with
// ACLs off is refused unless -insecure says so.
func TestCLIAgentRefusesOpenBind(t *testing.T) {
	code, _, stderr := runCLI(t, "agent", "-server", "-data-dir", t.TempDir(), "-bind", "0.0.0.0", "-encrypt", gossipKey)
	if code != ExitUsage || !strings.Contains(stderr, "ACLs are off") || !strings.Contains(stderr, "-insecure") {
		t.Errorf("agent -bind 0.0.0.0 without ACLs: exit %d stderr %q, want %d naming -insecure", code, stderr, ExitUsage)
	}
}

// TestCLIAgentNeedsGossipKey: a server outside dev mode gossips only
// encrypted, so that a process without the key cannot join as a server.
func TestCLIAgentNeedsGossipKey(t *testing.T) {
	code, _, stderr := runCLI(t, "agent", "-server", "-data-dir", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, "gossip encryption key") {
		t.Errorf("agent -server without -encrypt: exit %d stderr %q, want %d naming the gossip key", code, stderr, ExitUsage)
	}
}

func TestCLIAgentBadConfigFile(t *testing.T) {
	p := writeFile(t, t.TempDir(), "agent.hcl", "server {\n  bootstrap_expekt = 1\n}\n")
	code, _, stderr := runCLI(t, "agent", "-dev", "-config", p)
	if code != ExitUsage || !strings.Contains(stderr, "agent.hcl:2") {
		t.Errorf("agent -config with a typo: exit %d stderr %q, want 2 naming agent.hcl:2", code, stderr)
	}
}

func TestCLIUnreachable(t *testing.T) {
	code, _, stderr := runCLI(t, "job", "status", "-address", "http://127.0.0.1:1")
	if code != ExitError || stderr == "" {
		t.Errorf("unreachable agent: exit %d stderr %q, want 1 with a message", code, stderr)
	}
}

func TestCLIAgainstServer(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "web.hcl", webHCL)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}

	// -output prints the JSON without submitting.
	code, out, stderr := cli("job", "run", "-output", file)
	var req api.JobRegisterRequest
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil || req.Job == nil || req.Job.ID != "web" {
		t.Fatalf("job run -output: exit %d out %q stderr %q, want {\"Job\":{...web...}}", code, out, stderr)
	}
	code, out, _ = cli("job", "status")
	if code != 0 || !strings.Contains(out, "No running jobs") {
		t.Fatalf("after -output, job status: exit %d %q, want no jobs", code, out)
	}

	// Plan: no client nodes, so placements would fail: exit 1.
	code, out, stderr = cli("job", "plan", file)
	if code != ExitError || !strings.Contains(out, "Failed to place") || !strings.Contains(out, `Task Group: "web"`) {
		t.Errorf("job plan without nodes: exit %d out %q stderr %q, want 1 and the failure", code, out, stderr)
	}
	if !strings.Contains(out, "Why pending:\n      - no ready nodes in the job's datacenters and node pool") {
		t.Errorf("job plan without nodes: %q, want the structured why-pending reason", out)
	}
	code, out, _ = cli("job", "plan", "-json", file)
	var plan api.JobPlanResponse
	if code != ExitError || json.Unmarshal([]byte(out), &plan) != nil || len(plan.FailedTGAllocs) == 0 {
		t.Errorf("job plan -json: exit %d out %q, want 1 and JSON with FailedTGAllocs", code, out)
	} else if m := plan.FailedTGAllocs["web"]; m == nil || len(m.Reasons) == 0 || m.Reasons[0].Kind != api.PendingNoNodes {
		t.Errorf("job plan -json: FailedTGAllocs %+v, want web with a %q reason", plan.FailedTGAllocs, api.PendingNoNodes)
	}

	// Run and monitor: registered, but nothing can be placed: exit 2 like Nomad.
	code, out, stderr = cli("job", "run", file)
	if code != ExitUsage || !strings.Contains(out, "failed to place all allocations") || !strings.Contains(out, "Monitoring evaluation") {
		t.Errorf("job run: exit %d out %q stderr %q, want 2 and the monitor's failure report", code, out, stderr)
	}
	code, out, _ = cli("job", "run", "-detach", "-var-file", writeFile(t, dir, "empty.hcl", ""), file)
	if code != 0 || !strings.Contains(out, "Evaluation ID: ") {
		t.Errorf("job run -detach: exit %d out %q, want 0 and the eval ID", code, out)
	}
	code, out, _ = cli("job", "run", "-detach", "-json", file)
	var rr api.JobRegisterResponse
	if code != 0 || json.Unmarshal([]byte(out), &rr) != nil || rr.EvalID == "" {
		t.Errorf("job run -json: exit %d out %q, want the register response", code, out)
	}

	code, out, _ = cli("job", "status")
	if code != 0 || !strings.Contains(out, "web") || !strings.Contains(out, "service") {
		t.Errorf("job status: exit %d out %q", code, out)
	}
	code, out, _ = cli("job", "status", "-json")
	var stubs []*api.JobListStub
	if code != 0 || json.Unmarshal([]byte(out), &stubs) != nil || len(stubs) != 1 {
		t.Errorf("job status -json: exit %d out %q, want one job", code, out)
	}
	code, out, _ = cli("job", "status", "web")
	if code != 0 || !strings.Contains(out, "Placement Failure") && !strings.Contains(out, "blocked") {
		t.Errorf("job status web: exit %d out %q, want the placement failure or blocked eval", code, out)
	}
	if strings.Contains(out, "Placement Failure") && !strings.Contains(out, "Why pending:\n    - no ready nodes") {
		t.Errorf("job status web: %q, want the structured why-pending reason", out)
	}
	code, out, _ = cli("job", "status", "-json", "web")
	var detail struct {
		Job         *api.Job
		Evaluations []*api.Evaluation
	}
	if code != 0 || json.Unmarshal([]byte(out), &detail) != nil || detail.Job == nil || len(detail.Evaluations) == 0 {
		t.Errorf("job status -json web: exit %d out %q", code, out)
	}
	code, _, stderr = cli("job", "status", "nope")
	if code != ExitError || !strings.Contains(stderr, "not found") {
		t.Errorf("job status nope: exit %d stderr %q, want 1 and not found", code, stderr)
	}

	code, out, _ = cli("job", "inspect", "web")
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil || req.Job.ID != "web" {
		t.Errorf("job inspect: exit %d out %q", code, out)
	}
	code, out, _ = cli("job", "inspect", "-local", file)
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil || req.Job.ID != "web" {
		t.Errorf("job inspect -local: exit %d out %q", code, out)
	}
	code, out, _ = cli("job", "history", "-json", "web")
	var vs api.JobVersionsResponse
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs.Versions) == 0 {
		t.Errorf("job history -json: exit %d out %q", code, out)
	}
	scaled := writeFile(t, dir, "web3.hcl", strings.Replace(webHCL, "count = 2", "count = 3", 1))
	if code, out, stderr = cli("job", "run", "-detach", scaled); code != 0 {
		t.Fatalf("job run -detach (count 3): exit %d out %q stderr %q", code, out, stderr)
	}
	code, out, _ = cli("job", "history", "-p", "web")
	if code != 0 || !strings.Contains(out, `+/- Task Group: "web"`) || !strings.Contains(out, `+/- Count: "2" => "3"`) {
		t.Errorf("job history -p: exit %d out %q, want the group's Count 2 => 3", code, out)
	}

	code, out, _ = cli("eval", "status", "-json", rr.EvalID[:8])
	var ev api.Evaluation
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.ID != rr.EvalID {
		t.Errorf("eval status by prefix: exit %d out %q, want eval %s", code, out, rr.EvalID)
	}
	code, out, _ = cli("eval", "status", rr.EvalID)
	if code != 0 || !strings.Contains(out, rr.EvalID) {
		t.Errorf("eval status: exit %d out %q", code, out)
	}

	code, out, _ = cli("node", "status")
	if code != 0 || !strings.Contains(out, "No nodes registered") {
		t.Errorf("node status: exit %d out %q", code, out)
	}
	code, out, _ = cli("node", "status", "-json")
	var nodes []*api.NodeListStub
	if code != 0 || json.Unmarshal([]byte(out), &nodes) != nil || len(nodes) != 0 {
		t.Errorf("node status -json: exit %d out %q, want []", code, out)
	}
	code, _, _ = cli("node", "eligibility", "-enable", "nope")
	if code != ExitError {
		t.Errorf("node eligibility of unknown node: exit %d, want 1", code)
	}
	code, _, _ = cli("alloc", "status", "nope")
	if code != ExitError {
		t.Errorf("alloc status nope: exit %d, want 1", code)
	}

	code, out, _ = cli("server", "members", "-json")
	var m api.ServerMembers
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || len(m.Members) != 1 {
		t.Errorf("server members -json: exit %d out %q, want one member", code, out)
	}
	code, out, _ = cli("status")
	if code != 0 || !strings.Contains(out, "web") {
		t.Errorf("status: exit %d out %q", code, out)
	}

	code, out, _ = cli("job", "stop", "-detach", "web")
	if code != 0 || !strings.Contains(out, "stopped") {
		t.Errorf("job stop: exit %d out %q", code, out)
	}
	code, _, _ = cli("job", "stop", "-purge", "web")
	if code != 0 {
		t.Errorf("job stop -purge: exit %d", code)
	}
	code, _, _ = cli("job", "status", "web")
	if code != ExitError {
		t.Errorf("job status after purge: exit %d, want 1", code)
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb\n"},
		{"a\nb\n", 0, ""},
		{"", 3, ""},
	} {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
