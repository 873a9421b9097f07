package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// namespace apply (flags and a spec file) | list | status | delete, and
// a namespace's default queue reaching the jobs that name none.
func TestCLINamespaces(t *testing.T) {
	addr := startAPI(t)
	dir := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "-address", addr)...)
	}
	queues := writeFile(t, dir, "q.hcl", "queue \"ml\" {\n  weight = 2\n}\n")
	if code, _, stderr := cli("queue", "apply", queues); code != 0 {
		t.Fatalf("queue apply: %d %q", code, stderr)
	}
	spec := writeFile(t, dir, "ns.hcl", "name = \"research\"\ndescription = \"the research team\"\nqueue = \"ml\"\nmeta {\n  owner = \"ana\"\n}\n")
	if code, out, stderr := cli("namespace", "apply", spec); code != 0 || !strings.Contains(out, `"research"`) {
		t.Fatalf("namespace apply FILE: %d %q %q", code, out, stderr)
	}
	bad := writeFile(t, dir, "bad.hcl", "name = \"x\"\nqueue = \"nope\"\n")
	if code, _, stderr := cli("namespace", "apply", bad); code != ExitError || !strings.Contains(stderr, `queue "nope" does not exist`) {
		t.Errorf("namespace with a missing queue: %d %q", code, stderr)
	}
	badHCL := writeFile(t, dir, "bad2.hcl", "name = \"x\"\ncolour = 1\n")
	if code, _, stderr := cli("namespace", "apply", badHCL); code != ExitError || !strings.Contains(stderr, "bad2.hcl:2:1:") {
		t.Errorf("namespace file with an unknown attribute: %d %q", code, stderr)
	}
	code, out, _ := cli("namespace", "list", "-json")
	var nss []*api.Namespace
	if code != 0 || json.Unmarshal([]byte(out), &nss) != nil || len(nss) != 2 || nss[0].Name != "default" || nss[1].Queue != "ml" {
		t.Fatalf("namespace list -json: %d %q", code, out)
	}
	if code, out, _ := cli("namespace", "status", "research"); code != 0 || !strings.Contains(out, "the research team") || !strings.Contains(out, "owner") {
		t.Errorf("namespace status: %d %q", code, out)
	}
	job := writeFile(t, dir, "web.hcl", webHCL)
	if code, _, stderr := cli("job", "run", "-detach", "-namespace", "research", job); code != 0 {
		t.Fatalf("job run in research: %d %q", code, stderr)
	}
	c := api.NewClient(addr)
	c.Namespace = "research"
	j, _, err := c.Job(t.Context(), "web", nil)
	if err != nil || j.Queue != "ml" {
		t.Fatalf("job in research: queue %q (%v), want the namespace's ml", j.Queue, err)
	}
	if code, _, stderr := cli("namespace", "delete", "research"); code != ExitError || !strings.Contains(stderr, "has the job") {
		t.Errorf("delete a namespace with a job: %d %q", code, stderr)
	}
	if code, _, stderr := cli("namespace", "delete", "default"); code != ExitError || !strings.Contains(stderr, "can't be deleted") {
		t.Errorf("delete default: %d %q", code, stderr)
	}
	if code, _, stderr := cli("job", "stop", "-purge", "-detach", "-namespace", "research", "web"); code != 0 {
		t.Fatalf("job stop -purge: %d %q", code, stderr)
	}
	if code, _, stderr := cli("namespace", "delete", "research"); code != 0 {
		t.Errorf("delete research: %d %q", code, stderr)
	}
	if code, _, stderr := cli("namespace", "status", "research"); code != ExitError || !strings.Contains(stderr, "not found") {
		t.Errorf("status after delete: %d %q", code, stderr)
	}
}
