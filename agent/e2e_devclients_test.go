package agent_test

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// startDevClients starts `drover agent -dev -dev-clients n` plus extra
// flags and waits for a leader and n ready client nodes. The agent is
// stopped with SIGTERM at cleanup, so that (its data dirs being
// temporary) it stops its tasks.
func startDevClients(t *testing.T, n int, extra ...string) *devCluster {
	t.Helper()
	d := &devCluster{t: t, bin: droverBin(t)}
	httpPort := freePort(t)
	d.base = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	d.args = append([]string{"-dev", "-dev-clients", strconv.Itoa(n), "-bind", "127.0.0.1", "-http-port", strconv.Itoa(httpPort)}, extra...)
	p := startAgent(t, d.args...)
	d.p = p
	t.Cleanup(func() {
		if p.cmd.ProcessState != nil {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(30 * time.Second):
		}
	})
	waitLeader(t, p, d.base)
	waitFor(t, devDeadline, fmt.Sprintf("%d ready client nodes", n), func() (bool, string) {
		var nodes []*api.NodeListStub
		if code := devGet(d.base+"/v1/nodes", &nodes); code != 200 || len(nodes) != n {
			return false, fmt.Sprintf("status %d, %d nodes", code, len(nodes))
		}
		for _, s := range nodes {
			if s.Status != api.NodeStatusReady {
				return false, "node " + s.Name + " " + s.Status
			}
		}
		return true, ""
	})
	return d
}

// `drover agent -dev -dev-gpus dgxh100 -dev-clients 2` is a two-node GPU
// cluster: examples/gang-torch.hcl, unchanged, places its two members on
// the two dev clients (ranks 0 and 1, one leader, both in simulated rack
// r1) and both tasks start with the gang's files. What torchrun does next
// (where it is installed at all: train.py is not) is not this test's
// concern.
func TestE2EDevClientsGangTorch(t *testing.T) {
	d := startDevClients(t, 2, "-dev-gpus", "dgxh100")

	var stubs []*api.NodeListStub
	if code := devGet(d.base+"/v1/nodes", &stubs); code != 200 {
		t.Fatalf("list nodes: status %d", code)
	}
	nodes := map[string]*api.Node{}
	gpus := map[string]string{} // GPU UUID -> node name
	for _, s := range stubs {
		var n api.Node
		if code := devGet(d.base+"/v1/node/"+s.ID, &n); code != 200 {
			t.Fatalf("read node %s: status %d", s.ID, code)
		}
		nodes[n.ID] = &n
		if n.Meta["topology.rack"] != "r1" {
			t.Errorf("node %s: meta topology.rack %q, want r1", n.Name, n.Meta["topology.rack"])
		}
		// A simulated DGX H100 advertises its CPU and memory, whatever
		// the host has: the example's 16,000 MHz and 64 GiB fit.
		if r := n.NodeResources; r == nil || r.Cpu.CpuShares < 16000 || r.Memory.MemoryMB < 65536 {
			t.Errorf("node %s resources %+v: want at least 16000 MHz and 65536 MB", n.Name, r)
		}
		count := 0
		for _, dev := range n.NodeResources.Devices {
			for _, inst := range dev.Instances {
				count++
				if other, dup := gpus[inst.ID]; dup {
					t.Errorf("GPU %s is on both %s and %s", inst.ID, other, n.Name)
				}
				gpus[inst.ID] = n.Name
			}
		}
		if count != 8 {
			t.Errorf("node %s has %d GPUs, want 8", n.Name, count)
		}
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	if want := []string{"dev-client-1", "dev-client-2"}; !slices.Equal(names, want) {
		t.Fatalf("node names %v, want %v", names, want)
	}

	if out, err := d.drover("job", "run", "-detach", "../examples/gang-torch.hcl"); err != nil {
		t.Fatalf("drover job run gang-torch.hcl: %v\n%s", err, out)
	}
	var allocs []*api.Allocation
	waitFor(t, devDeadline, "both gang members started", func() (bool, string) {
		allocs = allocs[:0]
		var got []string
		for _, s := range d.jobAllocs("torch") {
			var a api.Allocation
			if code := devGet(d.base+"/v1/allocation/"+s.ID, &a); code != 200 {
				return false, fmt.Sprintf("read alloc %s: status %d", s.ID, code)
			}
			allocs = append(allocs, &a)
			ts := a.TaskStates["train"]
			started := ts != nil && slices.ContainsFunc(ts.Events, func(e *api.TaskEvent) bool { return e.Type == api.TaskStarted })
			got = append(got, fmt.Sprintf("%s started=%v", a.ClientStatus, started))
			if !started {
				return false, strings.Join(got, ", ")
			}
		}
		return len(allocs) == 2, strings.Join(got, ", ")
	})
	for _, a := range allocs {
		reapTasks(t, a.ID)
	}
	ranks := map[int]bool{}
	used := map[string]bool{}
	for _, a := range allocs {
		if used[a.NodeID] {
			t.Errorf("two members on node %s, want one per node", a.NodeID)
		}
		used[a.NodeID] = true
		g := a.Gang
		if g == nil {
			t.Fatalf("alloc %s has no gang", a.ID)
		}
		ranks[g.Rank] = true
		if g.Size != 2 || len(g.Members) != 2 || g.LeaderAddr == "" || g.LeaderAddr != allocs[0].Gang.LeaderAddr {
			t.Errorf("alloc %s gang %+v: want size 2, two members and the one leader %q", a.ID, g, allocs[0].Gang.LeaderAddr)
		}
		// Each dev client has its own loopback address, so the members'
		// addresses (the MPI hostfile's lines) differ as on two machines.
		if len(g.Members) == 2 && runtime.GOOS == "linux" && g.Members[0].Address == g.Members[1].Address {
			t.Errorf("alloc %s: both members at address %s, want one per dev client", a.ID, g.Members[0].Address)
		}
		// The task ran `cat $DROVER_GANG_HOSTS`: both members by rank.
		d.waitLogs(a.ID, "train", "the gang hosts file of "+a.Name, func(out string) bool {
			return strings.Contains(out, " torch-workers-0 ") && strings.Contains(out, " torch-workers-1 ")
		})
	}
	if !ranks[0] || !ranks[1] {
		t.Errorf("ranks %v, want 0 and 1", ranks)
	}
}

// waitLogs waits until the task's stdout satisfies cond.
func (d *devCluster) waitLogs(allocID, task, what string, cond func(string) bool) {
	d.t.Helper()
	waitFor(d.t, devDeadline, what, func() (bool, string) {
		out := d.logs(allocID, task)
		return cond(out), fmt.Sprintf("stdout %q", out)
	})
}

// trapJobHCL is a one-task raw_exec job of the type and priority given
// (asking for gpus simulated GPUs when not 0) whose task prints
// "stop_reason=<$DROVER_ALLOC_DIR/stop_reason>" when its kill signal
// arrives, then exits.
func trapJobHCL(id, typ string, priority, gpus int) string {
	dev := ""
	if gpus > 0 {
		dev = fmt.Sprintf("\n        device \"nvidia/gpu\" {\n          count = %d\n        }", gpus)
	}
	return fmt.Sprintf(`job %q {
  type     = %q
  priority = %d
  group "g" {
    task "t" {
      driver      = "raw_exec"
      kill_signal = "SIGINT"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'echo stop_reason=$(cat $DROVER_ALLOC_DIR/stop_reason); exit 0' INT; echo started; while :; do sleep 0.1; done"]
      }
      resources {
        cpu    = 50
        memory = 32%s
      }
    }
  }
}
`, id, typ, priority, dev)
}

// A task learns why it is stopped, in its kill_signal's handler: drained
// when its node drains (its replacement runs on the other dev client),
// stopped when its job is stopped.
func TestE2EDevClientsStopReason(t *testing.T) {
	d := startDevClients(t, 2)
	first := d.runJob(writeJob(t, "trap.hcl", trapJobHCL("trap", "service", 50, 0)), "trap")
	reapTasks(t, first)
	d.waitLogs(first, "t", "the task's start line", func(out string) bool { return strings.Contains(out, "started") })
	a := d.alloc(first, "the first alloc", func(*api.Allocation) (bool, string) { return true, "" })
	if out, err := d.drover("node", "drain", "-enable", "-yes", "-deadline", "1m", a.NodeID[:8]); err != nil {
		t.Fatalf("drover node drain -enable: %v\n%s", err, out)
	}
	d.waitLogs(first, "t", "stop_reason=drained from the drained alloc", func(out string) bool {
		return strings.Contains(out, "stop_reason=drained\n")
	})

	var second *api.AllocListStub
	waitFor(t, devDeadline, "the replacement running", func() (bool, string) {
		var got []string
		for _, s := range d.jobAllocs("trap") {
			got = append(got, s.ID[:8]+" "+s.NodeID[:8]+" "+s.ClientStatus)
			if s.ID != first && s.ClientStatus == api.AllocClientStatusRunning {
				second = s
			}
		}
		return second != nil, strings.Join(got, ", ")
	})
	reapTasks(t, second.ID)
	if second.NodeID == a.NodeID {
		t.Errorf("the replacement runs on the drained node %s", a.NodeID)
	}
	d.waitLogs(second.ID, "t", "the replacement's start line", func(out string) bool { return strings.Contains(out, "started") })
	if out, err := d.drover("job", "stop", "-detach", "trap"); err != nil {
		t.Fatalf("drover job stop: %v\n%s", err, out)
	}
	d.waitLogs(second.ID, "t", "stop_reason=stopped from the stopped job's alloc", func(out string) bool {
		return strings.Contains(out, "stop_reason=stopped\n")
	})
}

// A preempted task learns it was preempted: a priority-90 job takes the
// GPUs of the one dev client from a priority-50 one.
func TestE2EDevClientsPreemptStopReason(t *testing.T) {
	d := startDevClients(t, 1, "-dev-gpus", "dgxh100")
	low := d.runJob(writeJob(t, "low.hcl", trapJobHCL("low", "batch", 50, 8)), "low")
	reapTasks(t, low)
	d.waitLogs(low, "t", "the low task's start line", func(out string) bool { return strings.Contains(out, "started") })
	high := d.runJob(writeJob(t, "high.hcl", trapJobHCL("high", "batch", 90, 8)), "high")
	reapTasks(t, high)
	d.waitLogs(low, "t", "stop_reason=preempted from the evicted alloc", func(out string) bool {
		return strings.Contains(out, "stop_reason=preempted\n")
	})
	if a := d.alloc(low, "the evicted alloc", func(*api.Allocation) (bool, string) { return true, "" }); a.PreemptedByAllocation != high {
		t.Errorf("low alloc preempted by %q, want %s", a.PreemptedByAllocation, high)
	}
}
