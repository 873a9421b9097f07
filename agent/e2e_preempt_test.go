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

// sleepJobHCL is a one-task raw_exec job of the type and priority given,
// asking for cpu MHz.
func sleepJobHCL(id, typ string, priority, cpu int) string {
	return fmt.Sprintf(`job %q {
  type     = %q
  priority = %d
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = %d
        memory = 32
      }
    }
  }
}
`, id, typ, priority, cpu)
}

// With service preemption switched on through the CLI, a high-priority
// job evicts a low-priority one on a full node, and the evicted job gets a
// preemption eval (it was never evaluated again before).
func TestE2EServicePreemptionThroughConfig(t *testing.T) {
	d := startDevCluster(t)
	var nodes []*api.Node
	if code := devGet(d.base+"/v1/nodes", &nodes); code != 200 || len(nodes) != 1 {
		t.Fatalf("nodes: %d", code)
	}
	var node api.Node
	devGet(d.base+"/v1/node/"+nodes[0].ID, &node)
	cpu := int(node.NodeResources.Cpu.CpuShares) * 6 / 10 // two of these never fit together
	if out, err := d.drover("operator", "scheduler", "set-config", "-preempt-service-scheduler=true"); err != nil {
		t.Fatalf("set-config: %v\n%s", err, out)
	}
	dir := t.TempDir()
	low := filepath.Join(dir, "low.hcl")
	high := filepath.Join(dir, "high.hcl")
	if err := os.WriteFile(low, []byte(sleepJobHCL("low", "service", 20, cpu)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(high, []byte(sleepJobHCL("high", "service", 80, cpu)), 0o644); err != nil {
		t.Fatal(err)
	}
	lowAlloc := d.runJob(low, "low")
	reapTasks(t, lowAlloc)
	highAlloc := d.runJob(high, "high")
	reapTasks(t, highAlloc)
	evicted := d.alloc(lowAlloc, "the low-priority alloc preempted", func(a *api.Allocation) (bool, string) {
		return a.DesiredStatus == api.AllocDesiredStatusEvict && a.PreemptedByAllocation == highAlloc,
			a.DesiredStatus + " by " + a.PreemptedByAllocation
	})
	if !evicted.ClientTerminalStatus() {
		d.alloc(lowAlloc, "the preempted task stopped", func(a *api.Allocation) (bool, string) { return a.ClientTerminalStatus(), a.ClientStatus })
	}
	d.waitBlocking("/v1/job/low/evaluations", "a preemption eval for the low job", func(b []byte) (bool, string) {
		var evals []*api.Evaluation
		if err := json.Unmarshal(b, &evals); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range evals {
			got = append(got, e.TriggeredBy+"/"+e.Status)
			if e.TriggeredBy == api.EvalTriggerPreemption && e.TerminalStatus() {
				return true, ""
			}
		}
		return false, strings.Join(got, " ")
	})
	// The low job waits for capacity instead of being forgotten.
	d.waitBlocking("/v1/job/low/evaluations", "a blocked eval for the low job", func(b []byte) (bool, string) {
		var evals []*api.Evaluation
		_ = json.Unmarshal(b, &evals)
		for _, e := range evals {
			if e.Status == api.EvalStatusBlocked {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(evals), " evals")
	})
}

// job restart restarts every running alloc of a job in place (the task
// is started again), or with -reschedule replaces them.
func TestE2EJobRestart(t *testing.T) {
	d := startDevCluster(t)
	file := filepath.Join(t.TempDir(), "r.hcl")
	if err := os.WriteFile(file, []byte(sleepJobHCL("r", "service", 50, 50)), 0o644); err != nil {
		t.Fatal(err)
	}
	id := d.runJob(file, "r")
	reapTasks(t, id)
	if out, err := d.drover("job", "restart", "r"); err != nil || !strings.Contains(out, "1 allocation(s) restarted") {
		t.Fatalf("job restart: %v\n%s", err, out)
	}
	d.alloc(id, "the task restarted in place", func(a *api.Allocation) (bool, string) {
		ts := a.TaskStates["t"]
		if ts == nil {
			return false, "no task state"
		}
		return ts.State == api.TaskStateRunning && countEvents(ts, api.TaskRestartSignal) == 1 && countEvents(ts, api.TaskStarted) >= 2,
			fmt.Sprintf("%s, events %v", ts.State, eventTypes(ts))
	})
	if out, err := d.drover("job", "restart", "-reschedule", "r"); err != nil || !strings.Contains(out, "rescheduled") {
		t.Fatalf("job restart -reschedule: %v\n%s", err, out)
	}
	d.alloc(id, "the old alloc stopped", func(a *api.Allocation) (bool, string) {
		return a.DesiredStatus == api.AllocDesiredStatusStop, a.DesiredStatus
	})
	var again string
	d.waitBlocking("/v1/job/r/allocations", "a replacement running", func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		for _, s := range stubs {
			if s.ID != id && s.ClientStatus == api.AllocClientStatusRunning {
				again = s.ID
			}
		}
		return again != "", fmt.Sprint(len(stubs), " allocs")
	})
	reapTasks(t, again)
}

func countEvents(ts *api.TaskState, typ string) int {
	n := 0
	for _, e := range ts.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func eventTypes(ts *api.TaskState) []string {
	var out []string
	for _, e := range ts.Events {
		out = append(out, e.Type)
	}
	return out
}
