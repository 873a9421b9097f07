package agent_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// gpuJobHCL is a batch job of count raw_exec tasks in group "workers"
// (a gang that waits for ever when gang is set), each asking for gpus
// simulated GPUs and running script with /bin/sh (no "${" in it: that is
// HCL's).
func gpuJobHCL(id string, count, gpus int, script string, gang bool) string {
	block := ""
	if gang {
		block = "\n    gang {\n      timeout = \"0\"\n    }"
	}
	return fmt.Sprintf(`job %q {
  type = "batch"
  group "workers" {
    count = %d%s
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", %q]
      }
      resources {
        cpu    = 50
        memory = 32
        device "nvidia/gpu" {
          count = %d
        }
      }
    }
  }
}
`, id, count, block, script, gpus)
}

// writeJob writes an HCL job file into a temp dir and returns its path.
func writeJob(t *testing.T, name, hcl string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// jobAllocs lists a job's allocations.
func (d *devCluster) jobAllocs(job string) []*api.AllocListStub {
	d.t.Helper()
	var stubs []*api.AllocListStub
	if code := devGet(d.base+"/v1/job/"+job+"/allocations", &stubs); code != 200 {
		d.t.Fatalf("allocations of %s: status %d", job, code)
	}
	return stubs
}

// On one simulated 8-GPU node, a gang of 2 x 8 GPUs can never fit: it
// stays pending with a placement failure and holds nothing (no alloc at
// all), so a 1-GPU job submitted after it runs.
func TestGangDevGPUsPendingHoldsNothing(t *testing.T) {
	d := startDevCluster(t, "-dev-gpus", "dgxh100")
	// The simulated node has topology levels for gang topology placement.
	var nodes []*api.NodeListStub
	var node api.Node
	if devGet(d.base+"/v1/nodes", &nodes) != 200 || len(nodes) != 1 || devGet(d.base+"/v1/node/"+nodes[0].ID, &node) != 200 {
		t.Fatalf("read the node: %d nodes", len(nodes))
	}
	if !strings.HasPrefix(node.Meta["topology.rack"], "rack-") || !strings.HasPrefix(node.Meta["topology.block"], "block-") {
		t.Errorf("node meta %v: want the simulator's topology.rack and topology.block", node.Meta)
	}
	if out, err := d.drover("job", "run", "-detach", writeJob(t, "big.hcl", gpuJobHCL("big", 2, 8, "exec sleep 3600", true))); err != nil {
		t.Fatalf("drover job run big: %v\n%s", err, out)
	}
	var failed *api.AllocMetric
	d.waitBlocking("/v1/job/big/evaluations", "a failed placement of the big gang", func(b []byte) (bool, string) {
		var evals []*api.Evaluation
		if err := json.Unmarshal(b, &evals); err != nil {
			return false, err.Error()
		}
		var got []string
		for _, e := range evals {
			got = append(got, e.Status)
			if m := e.FailedTGAllocs["workers"]; m != nil {
				failed = m
				return true, ""
			}
		}
		return false, strings.Join(got, " ")
	})
	// The eval's plan, if any, was committed before the eval recorded its
	// failures: whatever it placed is visible now.
	held := d.jobAllocs("big")
	for _, a := range held {
		reapTasks(t, a.ID)
	}
	if len(held) != 0 {
		t.Errorf("the unplaceable gang holds %d alloc(s), want none (all-or-nothing placement)", len(held))
	}
	if want := "gang workers needs 2 members, 1 fit"; !strings.HasPrefix(failed.GangFailure, want) {
		t.Errorf("gang failure %q, want %q", failed.GangFailure, want)
	}
	out, err := d.drover("job", "status", "big")
	for _, want := range []string{"Gangs", "workers  workers      2        2    none (waits)", "Placement Failure",
		"  * gang workers needs 2 members, 1 fit", `Gang "workers" (2 members, min 2) is placed whole or not at all`} {
		if !strings.Contains(out, want) {
			t.Errorf("drover job status big: %v; lacks %q:\n%s", err, want, out)
		}
	}

	// Nothing is held, so one GPU is free for a plain batch job.
	small := writeJob(t, "small.hcl", gpuJobHCL("small", 1, 1, "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES; exec sleep 3600", false))
	id := d.runJob(small, "small")
	reapTasks(t, id)
	if ids := gpuOutputDev(d, id); len(ids) != 1 {
		t.Errorf("small job: CUDA_VISIBLE_DEVICES = %v, want one GPU", ids)
	}
	// The gang was evaluated again when capacity changed: still nothing.
	var job api.Job
	if code := devGet(d.base+"/v1/job/big", &job); code != 200 || job.Status != api.JobStatusPending {
		t.Errorf("big: status %d %q, want pending", code, job.Status)
	}
	if held := d.jobAllocs("big"); len(held) != 0 {
		t.Errorf("after the small job: the gang holds %d alloc(s), want none", len(held))
	}
}

// gpuOutputDev waits for the CUDA_VISIBLE_DEVICES line of an alloc's
// task "t" and returns its GPUs.
func gpuOutputDev(d *devCluster, allocID string) []string {
	d.t.Helper()
	var ids []string
	waitFor(d.t, devDeadline, "the task's CUDA_VISIBLE_DEVICES line", func() (bool, string) {
		out := d.logs(allocID, "t")
		m := cudaRE.FindStringSubmatch(out)
		if m == nil {
			return false, fmt.Sprintf("stdout %q", out)
		}
		ids = strings.Split(m[1], ",")
		return true, ""
	})
	return ids
}

// gangScript prints a member's gang variables, hosts file and hostfile.
const gangScript = `echo "gang id=$DROVER_GANG_ID rank=$DROVER_GANG_RANK size=$DROVER_GANG_SIZE leader=$DROVER_GANG_LEADER_ADDR master=$MASTER_ADDR:$MASTER_PORT world=$WORLD_SIZE/$RANK port=$NOMAD_HOST_PORT_drover_gang gpus=$CUDA_VISIBLE_DEVICES"
echo '--- hosts'; cat "$DROVER_GANG_HOSTS"; echo '--- hostfile'; cat "$DROVER_GANG_HOSTFILE"; echo '--- end'
exec sleep 3600`

var gangLine = regexp.MustCompile(`gang id=(\S*) rank=(\S*) size=(\S*) leader=(\S*) master=(\S*) world=(\S*) port=(\S*) gpus=(\S*)`)

// member is what one gang member's task printed.
type member struct {
	allocID                               string
	id, rank, size, leader, master, world string
	port, gpus, hosts, hostfile           string
}

// A gang of 2 x 1 GPU fits the node: both members run, and each task
// sees its rank, the size, the leader's address (also as MASTER_ADDR and
// MASTER_PORT) and the gang's hosts file and hostfile.
func TestGangDevGPUsMembersEnvAndHosts(t *testing.T) {
	d := startDevCluster(t, "-dev-gpus", "dgxh100")
	if out, err := d.drover("job", "run", "-detach", writeJob(t, "pair.hcl", gpuJobHCL("pair", 2, 1, gangScript, true))); err != nil {
		t.Fatalf("drover job run pair: %v\n%s", err, out)
	}
	var running []string
	reaped := map[string]bool{}
	d.waitBlocking("/v1/job/pair/allocations", "both gang members running", func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		running = running[:0]
		var got []string
		for _, s := range stubs {
			if !reaped[s.ID] {
				reaped[s.ID] = true
				reapTasks(t, s.ID)
			}
			got = append(got, s.ClientStatus)
			if s.ClientStatus == api.AllocClientStatusRunning {
				running = append(running, s.ID)
			}
		}
		return len(running) == 2, fmt.Sprint(got)
	})
	byRank := map[string]member{}
	for _, id := range running {
		var m member
		waitFor(t, devDeadline, "member "+id[:8]+"'s gang output", func() (bool, string) {
			out := d.logs(id, "t")
			g := gangLine.FindStringSubmatch(out)
			if g == nil || !strings.Contains(out, "--- end") {
				return false, fmt.Sprintf("stdout %q", out)
			}
			hosts, rest, _ := strings.Cut(out[strings.Index(out, "--- hosts\n")+len("--- hosts\n"):], "--- hostfile\n")
			hostfile, _, _ := strings.Cut(rest, "--- end")
			m = member{allocID: id, id: g[1], rank: g[2], size: g[3], leader: g[4], master: g[5], world: g[6], port: g[7], gpus: g[8],
				hosts: hosts, hostfile: hostfile}
			return true, ""
		})
		byRank[m.rank] = m
	}
	r0, r1 := byRank["0"], byRank["1"]
	if r0.allocID == "" || r1.allocID == "" {
		t.Fatalf("ranks seen %v, want 0 and 1 (members %+v)", keys(byRank), byRank)
	}
	if r0.gpus == r1.gpus || r0.gpus == "" {
		t.Errorf("members' GPUs %q and %q, want one distinct GPU each", r0.gpus, r1.gpus)
	}
	leaderHost, leaderPort, _ := net.SplitHostPort(r0.leader)
	for _, m := range []member{r0, r1} {
		if m.id != "workers" || m.size != "2" || m.world != "2/"+m.rank {
			t.Errorf("rank %s: gang id %q size %q WORLD_SIZE/RANK %q, want workers, 2, 2/%s", m.rank, m.id, m.size, m.world, m.rank)
		}
		if m.leader == "" || m.leader != r0.leader || m.master != m.leader {
			t.Errorf("rank %s: leader %q, MASTER_ADDR:PORT %q; want rank 0's %q in both", m.rank, m.leader, m.master, r0.leader)
		}
		for rank := range 2 {
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^%s pair-workers-%d pair\.workers\[[01]\]$`, regexp.QuoteMeta(leaderHost), rank))
			if !re.MatchString(m.hosts) {
				t.Errorf("rank %s: hosts file %q lacks rank %d on %s", m.rank, m.hosts, rank, leaderHost)
			}
		}
		if want := leaderHost + " slots=2\n"; m.hostfile != want {
			t.Errorf("rank %s: hostfile %q, want %q (both members on the one node)", m.rank, m.hostfile, want)
		}
		out, err := d.drover("alloc", "status", m.allocID)
		if want := fmt.Sprintf("workers, rank %s of 2, leader %s", m.rank, r0.leader); !strings.Contains(out, want) {
			t.Errorf("drover alloc status %s: %v; lacks %q:\n%s", m.allocID[:8], err, want, out)
		}
	}
	// The leader's address is rank 0's reserved drover_gang port.
	if leaderPort == "" || leaderPort != r0.port {
		t.Errorf("leader port %q, want rank 0's drover_gang host port %q", leaderPort, r0.port)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
