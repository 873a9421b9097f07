package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// defragJobHCL is a batch job of one alloc asking for gpus simulated GPUs.
func defragJobHCL(id string, gpus int) string {
	return fmt.Sprintf(`job %q {
  type = "batch"
  group %q {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 1000
        memory = 256
        device "nvidia/gpu" {
          count = %d
        }
      }
    }
  }
}
`, id, id, gpus)
}

// `drover operator defrag` on two simulated DGX H100 nodes: two 4-GPU
// jobs placed on different nodes (the other node made ineligible for
// each) and an 8-GPU job waits. The dry run plans one move that unblocks it and changes
// nothing; the real run moves the alloc (stopped with the reason
// "defragmentation", replaced on the other node in the same plan) and the
// 8-GPU job then runs.
func TestE2EOperatorDefrag(t *testing.T) {
	d := startDevClients(t, 2, "-dev-gpus", "dgxh100")
	var nodes []*api.NodeListStub
	if code := devGet(d.base+"/v1/nodes", &nodes); code != 200 || len(nodes) != 2 {
		t.Fatalf("list nodes: status %d, %d nodes", code, len(nodes))
	}
	elig := func(flag, id string) {
		t.Helper()
		if out, err := d.drover("node", "eligibility", flag, id); err != nil {
			t.Fatalf("node eligibility %s %s: %v\n%s", flag, id, err, out)
		}
	}
	dir := t.TempDir()
	file := func(id string, gpus int) string {
		p := filepath.Join(dir, id+".hcl")
		if err := os.WriteFile(p, []byte(defragJobHCL(id, gpus)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	elig("-disable", nodes[1].ID)
	a := d.runJob(file("a", 4), "a")
	elig("-enable", nodes[1].ID)
	elig("-disable", nodes[0].ID)
	b := d.runJob(file("b", 4), "b")
	elig("-enable", nodes[0].ID)
	na := d.alloc(a, "a running", func(x *api.Allocation) (bool, string) { return true, "" }).NodeID
	nb := d.alloc(b, "b running", func(x *api.Allocation) (bool, string) { return true, "" }).NodeID
	if na == nb {
		t.Fatalf("both 4-GPU allocs on node %s", na)
	}
	if out, err := d.drover("job", "run", "-detach", file("big", 8)); err != nil {
		t.Fatalf("run big: %v\n%s", err, out)
	}
	d.waitBlocking("/v1/job/big/evaluations", "big blocked", func(body []byte) (bool, string) {
		var evals []*api.Evaluation
		_ = json.Unmarshal(body, &evals)
		for _, e := range evals {
			if e.Status == api.EvalStatusBlocked {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d evals, none blocked", len(evals))
	})

	out, err := d.drover("operator", "defrag", "-dry-run")
	if err != nil || !strings.Contains(out, "Unblocks: big.big") || !strings.Contains(out, "Dry run") {
		t.Fatalf("defrag -dry-run: %v\n%s", err, out)
	}
	for _, id := range []string{a, b} {
		if x := d.alloc(id, "alloc", func(*api.Allocation) (bool, string) { return true, "" }); x.DesiredStatus != api.AllocDesiredStatusRun {
			t.Fatalf("the dry run stopped alloc %s", id)
		}
	}

	out, err = d.drover("operator", "defrag", "-json")
	var plan api.DefragPlan
	if err != nil || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Moves) != 1 {
		t.Fatalf("defrag: %v\n%s", err, out)
	}
	m := plan.Moves[0]
	moved := d.alloc(m.AllocID, "the moved alloc stopped", func(x *api.Allocation) (bool, string) {
		return x.DesiredStatus == api.AllocDesiredStatusStop, x.DesiredStatus
	})
	if moved.DesiredDescription != api.DefragDescription {
		t.Errorf("moved alloc's reason %q, want %q", moved.DesiredDescription, api.DefragDescription)
	}
	waitRunningAlloc(d, m.JobID, "the replacement on "+m.To, func(x *api.Allocation) bool {
		return x.PreviousAllocation == m.AllocID && x.NodeID == m.To
	})
	waitRunningAlloc(d, "big", "big running on the freed node", func(x *api.Allocation) bool { return x.NodeID == m.From })
}

// waitRunningAlloc waits until a running alloc of job satisfies cond.
func waitRunningAlloc(d *devCluster, job, what string, cond func(*api.Allocation) bool) {
	d.t.Helper()
	d.waitBlocking("/v1/job/"+job+"/allocations", what, func(body []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(body, &stubs); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, s := range stubs {
			var a api.Allocation
			if devGet(d.base+"/v1/allocation/"+s.ID, &a) != 200 {
				continue
			}
			seen = append(seen, a.ClientStatus+" on "+a.NodeID)
			if a.ClientStatus == api.AllocClientStatusRunning && cond(&a) {
				return true, ""
			}
		}
		return false, fmt.Sprint(seen)
	})
}
