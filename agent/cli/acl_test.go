package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// acl bootstrap | policy apply | token create | token self on a dev agent
// with ACLs on: its client registers and reports a job's allocs with its
// node secret;
// a client token runs jobs in its namespace and is refused elsewhere;
// without a token the CLI exits 1 with the permission error.
func TestCLIACL(t *testing.T) {
	addr, srv := startAgentServer(t, true, func(c *config.Config) { c.ACLEnabled = true })
	dir := t.TempDir()
	cli := func(token string, args ...string) (int, string, string) {
		t.Helper()
		args = append(args, "-address", addr)
		if token != "" {
			args = append(args, "-token", token)
		}
		return runCLI(t, args...)
	}
	code, out, stderr := cli("", "acl", "bootstrap", "-json")
	var boot api.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &boot) != nil || boot.SecretID == "" {
		t.Fatalf("acl bootstrap: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := cli("", "acl", "bootstrap"); code != ExitError || !strings.Contains(stderr, "already done") {
		t.Errorf("second bootstrap: %d %q", code, stderr)
	}
	mgmt := boot.SecretID
	rules := writeFile(t, dir, "dev.hcl", "namespace \"default\" {\n  policy = \"write\"\n}\nnode {\n  policy = \"read\"\n}\n")
	if code, out, stderr := cli(mgmt, "acl", "policy", "apply", "dev", rules); code != 0 || !strings.Contains(out, `"dev"`) {
		t.Fatalf("policy apply: %d %q %q", code, out, stderr)
	}
	code, out, stderr = cli(mgmt, "acl", "token", "create", "-name", "ci", "-policy", "dev", "-json")
	var tok api.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.SecretID == "" {
		t.Fatalf("token create: %d %q %q", code, out, stderr)
	}
	if code, out, _ := cli(tok.SecretID, "acl", "token", "self"); code != 0 || !strings.Contains(out, tok.AccessorID) || !strings.Contains(out, "dev") {
		t.Errorf("token self: %d %q", code, out)
	}
	if code, _, stderr := cli("", "job", "status"); code != ExitError || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("job status without a token: %d %q", code, stderr)
	}
	job := writeFile(t, dir, "web.hcl", rootJobHCL)
	if code, _, stderr := cli(tok.SecretID, "job", "run", "-detach", job); code != 0 {
		t.Fatalf("job run with the client token: %d %q", code, stderr)
	}
	if code, _, stderr := cli(tok.SecretID, "namespace", "apply", "other"); code != ExitError || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("namespace apply with a client token: %d %q", code, stderr)
	}
	// The client registered with its node secret, fetched its allocs and
	// reported them failed: exec refuses root before any executor starts
	// (this in-process agent has no executor binary).
	c := api.NewClient(addr)
	c.Token = mgmt
	testcluster.WaitState(t, srv, 60*time.Second, "the client to report web's allocs under ACLs", func() bool {
		allocs, _, err := c.JobAllocations(t.Context(), "web", nil)
		reported := 0
		for _, a := range allocs {
			if ts := a.TaskStates["srv"]; a.ClientStatus == api.AllocClientStatusFailed && ts != nil && len(ts.Events) > 0 {
				reported++
			}
		}
		return err == nil && reported == 2
	})
	if code, out, _ := cli(tok.SecretID, "node", "status"); code != 0 || !strings.Contains(out, "ready") {
		t.Errorf("node status with node read: %d %q", code, out)
	}
	if code, out, _ := cli(mgmt, "acl", "token", "list"); code != 0 || !strings.Contains(out, "ci") || strings.Contains(out, tok.SecretID) {
		t.Errorf("token list: %d %q", code, out)
	}
}

// rootJobHCL fails on the client at once: exec denies root by default.
const rootJobHCL = `job "web" {
  group "web" {
    count = 2
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "srv" {
      driver = "exec"
      user   = "root"
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

// node intro create on a dev agent with ACLs on (whose own client joined
// with an introduction it signed itself): a token for a pool with a TTL,
// refused without node write.
func TestCLINodeIntro(t *testing.T) {
	addr, srv := startAgentServer(t, true, func(c *config.Config) { c.ACLEnabled = true })
	code, out, stderr := runCLI(t, "acl", "bootstrap", "-json", "-address", addr)
	var boot api.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &boot) != nil {
		t.Fatalf("acl bootstrap: %d %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "node", "intro", "create", "-node-name", "gpu-7", "-ttl", "2m", "-json", "-address", addr, "-token", boot.SecretID)
	var resp api.NodeIntroResponse
	if code != 0 || json.Unmarshal([]byte(out), &resp) != nil || strings.Count(resp.Token, ".") != 2 {
		t.Fatalf("node intro create: %d %q %q", code, out, stderr)
	}
	if left := time.Until(resp.Expiration); left <= time.Minute || left > 2*time.Minute {
		t.Errorf("token valid for %s, want about 2m", left)
	}
	if code, _, stderr := runCLI(t, "node", "intro", "create", "-address", addr); code != ExitError || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("node intro create without a token: %d %q", code, stderr)
	}
	// The dev agent's own client registered: it introduced itself.
	testcluster.WaitState(t, srv, 15*time.Second, "the dev agent's client to register", func() bool {
		code, out, _ := runCLI(t, "node", "status", "-json", "-address", addr, "-token", boot.SecretID)
		return code == 0 && strings.Contains(out, `"ready"`)
	})
}
