package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

const teamQueues = `queue "team-a" {
  description = "team A"
  weight      = 2
  guaranteed {
    gpu        = 8
    cpu        = 32000
    memory     = 65536
    gpu_models = { "nvidia/gpu/H100" = 8 }
  }
  limit {
    cpu = 40000
  }
}

queue "team-a/train" {
  priority = 10
  guaranteed { gpu = 4 }
}
`

// queue apply|list|status|delete against a real dev agent (with a
// client): a file with a parent and child applies as one; a job naming a
// missing queue is refused; a running job's CPU and memory show in its
// queue and its parent; busy queues can't be deleted; bad files are
// file:line:col.
func TestCLIQueues(t *testing.T) {
	addr, srv := startAgentServer(t, true)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	qf := write("q.hcl", teamQueues)
	jobFile := write("job.hcl", strings.Replace(webHCL, `job "web" {`, "job \"web\" {\n  queue = \"team-a/train\"", 1))
	if code, _, stderr := runCLI(t, "job", "run", "-address", addr, "-detach", jobFile); code != 1 || !strings.Contains(stderr, `nonexistent queue "team-a/train"`) {
		t.Fatalf("job in a missing queue: exit %d stderr %q", code, stderr)
	}
	if code, out, stderr := runCLI(t, "queue", "apply", "-address", addr, qf); code != 0 || !strings.Contains(out, `"team-a/train"`) {
		t.Fatalf("apply: exit %d out %q stderr %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "job", "run", "-address", addr, "-detach", jobFile); code != 0 {
		t.Fatalf("job in the applied queue: exit %d stderr %q", code, stderr)
	}
	var st api.QueueStatus
	testcluster.WaitState(t, srv, 20*time.Second, "team-a with 2 allocs holding 200 MHz and 128 MB", func() bool {
		code, out, _ := runCLI(t, "queue", "status", "-address", addr, "-json", "team-a")
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.RunningAllocs == 2 && st.Allocated.CPU == 200 && st.Allocated.MemoryMB == 128
	})
	code, out, _ := runCLI(t, "queue", "status", "-address", addr, "team-a/train")
	for _, want := range []string{"Parent         = team-a", "Priority       = 10", "Running Allocs = 2", "cpu (MHz)", "200", "gpu "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status team-a/train: exit %d out %q, want %q", code, out, want)
		}
	}
	code, out, _ = runCLI(t, "queue", "status", "-address", addr, "team-a")
	if code != 0 || !strings.Contains(out, "gpu nvidia/gpu/H100") || !strings.Contains(out, "32000") || !strings.Contains(out, "40000") {
		t.Errorf("status team-a: exit %d out %q", code, out)
	}
	code, out, _ = runCLI(t, "queue", "list", "-address", addr)
	if code != 0 || !strings.Contains(out, "default") || !strings.Contains(out, "200/32000/40000") || !strings.Contains(out, "0/4/-") {
		t.Errorf("list: exit %d out %q", code, out)
	}
	if code, _, stderr := runCLI(t, "queue", "delete", "-address", addr, "team-a/train"); code != 1 || !strings.Contains(stderr, "live job") {
		t.Errorf("delete a queue with a live job: exit %d stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "queue", "delete", "-address", addr, "team-a"); code != 1 || !strings.Contains(stderr, "child queue") {
		t.Errorf("delete a parent: exit %d stderr %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "job", "stop", "-address", addr, "-purge", "web"); code != 0 {
		t.Fatalf("job stop -purge: exit %d", code)
	}
	for _, q := range []string{"team-a/train", "team-a"} {
		if code, _, stderr := runCLI(t, "queue", "delete", "-address", addr, q); code != 0 {
			t.Errorf("delete %s: exit %d stderr %q", q, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "queue", "status", "-address", addr, "team-a"); code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("status after delete: exit %d stderr %q", code, stderr)
	}
	bad := write("bad.hcl", "queue \"x\" {\n  guaranteed {\n    gpus = 1\n  }\n}\n")
	if code, _, stderr := runCLI(t, "queue", "apply", "-address", addr, bad); code != 1 || !strings.Contains(stderr, "bad.hcl:3:5:") {
		t.Errorf("bad file: exit %d stderr %q", code, stderr)
	}
	js := write("q.json", `{"Name":"solo","Limit":{"GPUs":2}}`)
	if code, _, stderr := runCLI(t, "queue", "apply", "-address", addr, js); code != 0 {
		t.Errorf("apply JSON: exit %d stderr %q", code, stderr)
	}
}

// The queue file reader: the documented shape decodes, and errors carry
// positions; duplicates, bad values and too many blocks are refused.
func TestParseQueues(t *testing.T) {
	qs, err := parseQueues("q.hcl", []byte(teamQueues))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].Guaranteed.GPUsByModel["nvidia/gpu/H100"] != 8 || qs[0].Limit.CPU != 40000 || qs[0].Weight != 2 ||
		qs[1].Parent != "team-a" || qs[1].Priority != 10 || qs[1].Guaranteed.GPUs != 4 {
		t.Fatalf("parsed %+v %+v", qs[0], qs[1])
	}
	for name, c := range map[string]struct{ src, want string }{
		"duplicate":   {"queue \"a\" {}\nqueue \"a\" {}\n", "q.hcl:2:1: queue \"a\" is defined twice"},
		"bad type":    {"queue \"a\" {\n  weight = \"x\"\n}\n", "q.hcl:2:"},
		"two limits":  {"queue \"a\" {\n  limit {}\n  limit {}\n}\n", "q.hcl:3:3: Duplicate limit block"},
		"bad name":    {"queue \"a b\" {}\n", "q.hcl:1:1:"},
		"bad parent":  {"queue \"a/b\" {\n  parent = \"c\"\n}\n", "parent must be"},
		"negative":    {"queue \"a\" {\n  limit { gpu = -1 }\n}\n", "negative"},
		"none":        {"# nothing\n", "want 1 to 256 queue blocks"},
		"json extra":  {`{"Name":"a","Bogus":1}`, "unknown field"},
		"json null":   {`[null]`, "null queue"},
		"json batch":  {`{"Queues":[]}`, "want 1 to 256 queues"},
		"over blocks": {manyQueues(257), "want 1 to 256"},
	} {
		_, err := parseQueues("q.hcl", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
	if _, err := parseQueues("q.hcl", make([]byte, maxQueueFile+1)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized file: %v", err)
	}
}

func manyQueues(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "queue \"q%d\" {}\n", i)
	}
	return b.String()
}

// FuzzParseQueues: the reader never panics and whatever it accepts is valid.
func FuzzParseQueues(f *testing.F) {
	f.Add([]byte(teamQueues))
	f.Add([]byte(`{"Queues":[{"Name":"a","Limit":{"GPUsByModel":{"nvidia/gpu/H100":1}}}]}`))
	f.Add([]byte(`[{"Name":"a/b"}]`))
	f.Add([]byte("queue \"a\" { limit { gpu_models = { x = 1 } } }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		qs, err := parseQueues("f.hcl", src)
		if err != nil {
			return
		}
		for _, q := range qs {
			if err := q.Validate(); err != nil {
				t.Fatalf("accepted an invalid queue %+v: %v", q, err)
			}
		}
	})
}
