package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/drover/drover/api"
)

// needPackage checks that a Debian package the test needs is installed
// (make deps installs it as root): probe runs and must succeed. Missing,
// the test fails under CI=true and is skipped elsewhere.
func needPackage(t *testing.T, pkg string, probe ...string) {
	t.Helper()
	if out, err := exec.Command(probe[0], probe[1:]...).CombinedOutput(); err != nil {
		msg := fmt.Sprintf("%s: %v (%s); install Debian's %s (make deps does as root)", strings.Join(probe, " "), err, strings.TrimSpace(string(out)), pkg)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// startGangCluster runs one `drover agent -server` and n `drover agent
// -client` processes of the built binary: real nodes, each with its own
// data dir, alloc dir, ports and address. The server binds 127.0.0.1 and
// client i 127.0.0.(i+2): addresses that differ per node (as gang
// members see them in their hostfile) and that no interface has, so
// mpirun takes every one for a remote host. clientArgs are more flags
// for each client. It returns a devCluster for the API and CLI helpers
// (not for start or kill).
func startGangCluster(t *testing.T, n int, clientArgs ...string) *devCluster {
	t.Helper()
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the client role needs root outside CI")
	}
	d := &devCluster{t: t, bin: droverBin(t)}
	httpPort := freePort(t)
	d.base = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	srv := startAgent(t, "-server", "-bootstrap-expect", "1", "-encrypt", testGossipKey, "-node", "srv", "-data-dir", t.TempDir(),
		"-bind", "127.0.0.1", "-http-port", strconv.Itoa(httpPort), "-raft-port", strconv.Itoa(freePort(t)), "-gossip-port", strconv.Itoa(freePort(t)))
	waitLeader(t, srv, d.base)
	for i := range n {
		dir := t.TempDir()
		reapLeftovers(t, dir) // a client outside dev mode leaves its tasks running when it stops
		args := []string{"-client", "-servers", fmt.Sprintf("127.0.0.1:%d", httpPort), "-data-dir", dir, "-bind", fmt.Sprintf("127.0.0.%d", i+2),
			"-http-port", strconv.Itoa(freePort(t)), "-node", fmt.Sprintf("node%d", i+1)}
		startAgent(t, append(args, clientArgs...)...)
	}
	d.waitBlocking("/v1/nodes", fmt.Sprintf("%d ready client nodes", n), func(b []byte) (bool, string) {
		var stubs []*api.NodeListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		var got []string
		ready := 0
		for _, s := range stubs {
			got = append(got, s.Name+" "+s.Status)
			if s.Status == api.NodeStatusReady {
				ready++
			}
		}
		return ready == n, strings.Join(got, ", ")
	})
	return d
}

// torchJobHCL is a batch job of a 2-member gang, one member per node,
// each an exec task (isolated, user nobody) running train.py from the
// host volume "ckpt" (mounted at /ckpt, where rank 0 writes its
// checkpoints) with the gang's torch.distributed variables. A member
// whose task fails is not restarted in place (attempts = 0): the gang,
// below its size, is stopped and placed again whole after stale_grace.
const torchJobHCL = `job "torch" {
  type = "batch"
  group "workers" {
    count = 2
    constraint {
      distinct_hosts = true
    }
    gang {
      stale_grace = "1s"
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    volume "ckpt" {
      type   = "host"
      source = "ckpt"
    }
    task "train" {
      driver      = "exec"
      kill_signal = "SIGTERM"
      config {
        command = "/usr/bin/python3"
        args    = ["/ckpt/train.py"]
      }
      volume_mount {
        volume      = "ckpt"
        destination = "/ckpt"
      }
      env {
        CKPT_DIR = "/ckpt"
        STEPS    = "6"
        HOLD_AT  = "3"
      }
      resources {
        cpu    = 100
        memory = 512
      }
    }
  }
}
`

var (
	torchStepLine = regexp.MustCompile(`(?m)^step (\d+) checksum (\w+)$`)
	torchDoneLine = regexp.MustCompile(`(?m)^done step (\d+) checksum (\w+) allreduce (\S+)$`)
	torchResumed  = regexp.MustCompile(`(?m)^resumed from step (\d+)$`)
)

// gangMembers waits until the job has n allocs not in old that run or
// ran to completion and returns them by rank; one of them failing fails
// the test at once.
func gangMembers(d *devCluster, job, task string, n int, old map[string]bool) map[int]*api.AllocListStub {
	d.t.Helper()
	var byRank map[int]*api.AllocListStub
	reaped := map[string]bool{}
	var failed *api.AllocListStub
	d.waitBlocking("/v1/job/"+job+"/allocations", fmt.Sprintf("%d new members of %s running", n, job), func(b []byte) (bool, string) {
		var stubs []*api.AllocListStub
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		byRank = map[int]*api.AllocListStub{}
		var got []string
		for _, s := range stubs {
			got = append(got, fmt.Sprintf("%s %s/%s", s.ID[:8], s.DesiredStatus, s.ClientStatus))
			if old[s.ID] {
				continue
			}
			if !reaped[s.ID] {
				reaped[s.ID] = true
				reapTasks(d.t, s.ID)
			}
			switch s.ClientStatus {
			case api.AllocClientStatusRunning, api.AllocClientStatusComplete:
				if s.Gang == nil {
					return false, fmt.Sprintf("alloc %s has no gang info", s.ID[:8])
				}
				byRank[s.Gang.Rank] = s
			case api.AllocClientStatusFailed:
				failed = s
				return true, ""
			}
		}
		return len(byRank) == n, strings.Join(got, ", ")
	})
	if failed != nil {
		var evs []string
		if ts := failed.TaskStates[task]; ts != nil {
			for _, e := range ts.Events {
				evs = append(evs, fmt.Sprintf("%s: %s %s (exit %d, signal %d)", e.Type, e.DisplayMessage, e.DriverError, e.ExitCode, e.Signal))
			}
		}
		d.t.Fatalf("member %s (%s) of %s failed: %s\nevents:\n%s\nstdout:\n%s\nstderr:\n%s", failed.ID[:8], failed.Name, job, failed.ClientDescription,
			strings.Join(evs, "\n"), taskLog(d, failed.ID, task, "stdout"), taskLog(d, failed.ID, task, "stderr"))
	}
	return byRank
}

// taskLog reads the stdout or stderr of a task.
func taskLog(d *devCluster, allocID, task, typ string) string {
	var b strings.Builder
	r, err := http.Get(d.base + "/v1/client/fs/logs/" + allocID + "?task=" + task + "&type=" + typ + "&plain=true")
	if err != nil {
		return err.Error()
	}
	defer r.Body.Close()
	_, _ = io.Copy(&b, r.Body)
	return b.String()
}

// waitLog waits until the task's stdout matches re and returns the match.
func waitLog(d *devCluster, allocID, task string, re *regexp.Regexp) []string {
	d.t.Helper()
	var m []string
	waitFor(d.t, devDeadline, fmt.Sprintf("%s in %s's output", re, allocID[:8]), func() (bool, string) {
		out := d.logs(allocID, task)
		m = re.FindStringSubmatch(out)
		return m != nil, fmt.Sprintf("stdout %q", out)
	})
	return m
}

// TestE2ETorchGangDDPRestart runs PyTorch data-parallel training as a
// 2-member gang on two client nodes: each member is one process with the
// gang's MASTER_ADDR/PORT, WORLD_SIZE and RANK (gloo, env:// init). Each
// rank trains on its own batches, so equal weights on both ranks mean DDP
// all-reduced the gradients. Rank 1's task is killed mid-run: the gang
// is stopped and placed again whole, resumes from the checkpoint rank 0
// wrote to the shared directory, and completes; the usage ledger counts
// both attempts.
func TestE2ETorchGangDDPRestart(t *testing.T) {
	needPackage(t, "python3-torch", "/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_gloo_available()")
	// The host volume both clients offer: the script, and the checkpoint
	// the tasks (user nobody) write.
	ckpt := t.TempDir()
	script, err := os.ReadFile("testdata/torch/train.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ckpt, "train.py"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ckpt, 0o777); err != nil {
		t.Fatal(err)
	}
	d := startGangCluster(t, 2, "-host-volume", "ckpt="+ckpt)
	if out, err := d.drover("job", "run", "-detach", writeJob(t, "torch.hcl", torchJobHCL)); err != nil {
		t.Fatalf("drover job run torch: %v\n%s", err, out)
	}

	// Attempt 1: both ranks train 3 steps in step, then hold.
	first := gangMembers(d, "torch", "train", 2, nil)
	if first[0].NodeID == first[1].NodeID {
		t.Errorf("both members on node %s, want one per node (distinct_hosts)", first[0].NodeName)
	}
	sums := map[int]string{}
	for rank, a := range first {
		waitLog(d, a.ID, "train", regexp.MustCompile(`(?m)^holding at step 3$`))
		out := d.logs(a.ID, "train")
		if m := torchResumed.FindStringSubmatch(out); m == nil || m[1] != "0" {
			t.Errorf("attempt 1, rank %d: want a fresh start (resumed from step 0):\n%s", rank, out)
		}
		for _, m := range torchStepLine.FindAllStringSubmatch(out, -1) {
			if m[1] == "3" {
				sums[rank] = m[2]
			}
		}
	}
	if sums[0] == "" || sums[0] != sums[1] {
		t.Errorf("attempt 1: weights after step 3 by rank %v, want equal (gradients all-reduced)", sums)
	}

	// Kill rank 1's training process.
	killed := first[1]
	procs := allocProcs(killed.ID)
	if len(procs) == 0 {
		t.Fatalf("no process of rank 1 (alloc %s)", killed.ID[:8])
	}
	for _, pid := range procs {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}

	// Attempt 2: a new gang, both members new, resumes and completes.
	old := map[string]bool{first[0].ID: true, first[1].ID: true}
	second := gangMembers(d, "torch", "train", 2, old)
	done := map[int][]string{}
	for rank, a := range second {
		done[rank] = waitLog(d, a.ID, "train", torchDoneLine)
		out := d.logs(a.ID, "train")
		if m := torchResumed.FindStringSubmatch(out); m == nil || m[1] != "3" {
			t.Errorf("attempt 2, rank %d: want it to resume from step 3 (the checkpoint):\n%s", rank, out)
		}
	}
	if done[0][2] != done[1][2] || done[0][3] != "3" || done[1][3] != "3" {
		t.Errorf("attempt 2: final checksum and all_reduce by rank: 0 %q, 1 %q; want equal checksums and all_reduce 3 (1+2) on both",
			done[0][1:], done[1][1:])
	}

	// Every alloc of both attempts is finished: in the first, the killed
	// member failed and the server stopped the other one (the gang below
	// its size past stale_grace); the second two completed.
	var stubs []*api.AllocListStub
	d.waitBlocking("/v1/job/torch/allocations", "both attempts finished", func(b []byte) (bool, string) {
		stubs = nil
		if err := json.Unmarshal(b, &stubs); err != nil {
			return false, err.Error()
		}
		var got []string
		fin := 0
		for _, s := range stubs {
			got = append(got, fmt.Sprintf("%s %s/%s", s.ID[:8], s.DesiredStatus, s.ClientStatus))
			ts := s.TaskStates["train"]
			if s.ClientStatus != api.AllocClientStatusRunning && s.ClientStatus != api.AllocClientStatusPending && ts != nil && !ts.FinishedAt.IsZero() {
				fin++
			}
		}
		return fin == len(stubs), strings.Join(got, ", ")
	})
	var ids []string
	var held float64 // GiB-seconds the tasks ran (0.5 GiB each)
	for _, s := range stubs {
		ids = append(ids, s.ID)
		what := fmt.Sprintf("%s/%s (%s)", s.DesiredStatus, s.ClientStatus, s.DesiredDescription)
		switch s.ID {
		case killed.ID:
			if s.ClientStatus != api.AllocClientStatusFailed {
				t.Errorf("the killed member %s: %s, want failed", s.ID[:8], what)
			}
		case first[0].ID:
			if s.DesiredStatus != api.AllocDesiredStatusStop || !strings.Contains(s.DesiredDescription, "gang workers below min") {
				t.Errorf("attempt 1 rank 0 %s: %s, want stopped by the server as its gang went below min", s.ID[:8], what)
			}
			// Its kill_signal came with the reason in stop_reason, read by
			// the script's handler with the step its checkpoint holds.
			if out := d.logs(s.ID, "train"); !strings.Contains(out, "stopping: stopped after step 3") {
				t.Errorf("attempt 1 rank 0 %s: want its SIGTERM handler to read stop_reason:\n%s", s.ID[:8], out)
			}
		default:
			if s.ClientStatus != api.AllocClientStatusComplete {
				t.Errorf("attempt 2 alloc %s: %s, want complete", s.ID[:8], what)
			}
		}
		ts := s.TaskStates["train"]
		held += 0.5 * ts.FinishedAt.Sub(ts.StartedAt).Seconds()
	}
	slices.Sort(ids)
	if len(stubs) != 4 {
		t.Errorf("job torch has %d allocs %v, want 4 (two attempts of two members)", len(stubs), ids)
	}
	var usage api.UsageResponse
	if code := devGet(d.base+"/v1/usage?by=job", &usage); code != 200 {
		t.Fatalf("GET /v1/usage: %d", code)
	}
	var ledger float64
	for _, r := range usage.Rows {
		if r.Key == "default/torch" {
			ledger += r.MemoryGiBSeconds
		}
	}
	// The ledger counts each alloc from its task's first start to its end
	// as the server saw it: at least the tasks' own run times, both
	// attempts.
	if ledger < 0.95*held || ledger > held+4*0.5*10 {
		t.Errorf("usage ledger: %.1f GiB-seconds for job torch, want the %.1f its 4 tasks ran (0.5 GiB each), both attempts", ledger, held)
	}
	t.Logf("checkpoint: %s; ledger %.1f GiB-s, tasks %.1f GiB-s", filepath.Join(ckpt, "ckpt.pt"), ledger, held)
}
