package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// node pool apply|list|info|nodes|jobs|delete against a real dev agent; a
// job naming a pool that does not exist is refused (as Nomad) until the
// pool is applied; a bad pool file is file:line:col.
func TestCLINodePools(t *testing.T) {
	addr, srv := startAgentServer(t, true)
	dir := t.TempDir()
	poolFile := filepath.Join(dir, "gpu.hcl")
	if err := os.WriteFile(poolFile, []byte("node_pool \"gpu\" {\n  description = \"H100 nodes\"\n  meta {\n    team = \"ml\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jobFile := filepath.Join(dir, "job.hcl")
	if err := os.WriteFile(jobFile, []byte("job \"p\" {\n  node_pool = \"gpu\"\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n"+
		"      config { command = \"/bin/true\" }\n    }\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "job", "run", "-address", addr, "-detach", jobFile); code != 1 || !strings.Contains(stderr, `nonexistent node pool "gpu"`) {
		t.Fatalf("job in a missing pool: exit %d stderr %q", code, stderr)
	}
	if code, out, stderr := runCLI(t, "node", "pool", "apply", "-address", addr, poolFile); code != 0 || !strings.Contains(out, `"gpu"`) {
		t.Fatalf("apply: exit %d out %q stderr %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "job", "run", "-address", addr, "-detach", jobFile); code != 0 {
		t.Fatalf("job in the applied pool: exit %d stderr %q", code, stderr)
	}
	code, out, _ := runCLI(t, "node", "pool", "list", "-address", addr, "-json")
	var pools []*api.NodePool
	if code != 0 || json.Unmarshal([]byte(out), &pools) != nil || len(pools) != 3 || pools[2].Name != "gpu" || pools[2].Meta["team"] != "ml" {
		t.Fatalf("list -json: exit %d out %q", code, out)
	}
	if code, out, _ := runCLI(t, "node", "pool", "info", "-address", addr, "gpu"); code != 0 || !strings.Contains(out, "H100 nodes") || !strings.Contains(out, "team") {
		t.Errorf("info: exit %d out %q", code, out)
	}
	if code, out, _ := runCLI(t, "node", "pool", "jobs", "-address", addr, "gpu"); code != 0 || !strings.Contains(out, "p ") {
		t.Errorf("jobs: exit %d out %q", code, out)
	}
	testcluster.WaitState(t, srv, 15*time.Second, "one node in pool default", func() bool {
		code, out, _ := runCLI(t, "node", "pool", "nodes", "-address", addr, "-json", "default")
		return code == 0 && strings.Count(out, `"ID"`) == 1
	})
	if code, _, stderr := runCLI(t, "node", "pool", "delete", "-address", addr, "gpu"); code != 1 || !strings.Contains(stderr, "live job") {
		t.Errorf("delete a pool with a live job: exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "node", "pool", "delete", "-address", addr, "default"); code != 1 || !strings.Contains(stderr, "built in") {
		t.Errorf("delete default: exit %d stderr %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "job", "stop", "-address", addr, "-purge", "p"); code != 0 {
		t.Fatalf("job stop -purge: exit %d", code)
	}
	if code, _, stderr := runCLI(t, "node", "pool", "delete", "-address", addr, "gpu"); code != 0 {
		t.Errorf("delete: exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "node", "pool", "info", "-address", addr, "gpu"); code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("info after delete: exit %d stderr %q", code, stderr)
	}
	bad := filepath.Join(dir, "bad.hcl")
	if err := os.WriteFile(bad, []byte("node_pool \"x\" {\n  colour = 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "node", "pool", "apply", "-address", addr, bad); code != 1 || !strings.Contains(stderr, "bad.hcl:2:3:") {
		t.Errorf("bad file: exit %d stderr %q", code, stderr)
	}
}
