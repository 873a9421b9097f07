package agent_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/gpushare/gpusharetest"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// shareJobHCL is a service job whose exec task holds a share of one GPU
// and prints its GPU env and what it sees of its MPS pipe directory.
const shareJobHCL = `
job "%s" {
  group "nb" {
    task "lab" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "env | grep -E '^(CUDA_|DROVER_GPU_)' | sort; echo pipe-dir-holds=$(ls $CUDA_MPS_PIPE_DIRECTORY 2>/dev/null | tr '\\n' ' '); echo END; exec sleep 300"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" {
          count = 1
          share {
%s
          }
        }
      }
    }
  }
}
`

// TestE2EGPUShareMPS runs exec tasks with GPU shares on a dev agent with
// simulated DGX H100 GPUs and a stand-in nvidia-cuda-mps-control on
// PATH: two MPS tasks get their GPU's daemon (one per GPU, started with
// that GPU's dirs under the client's data dir), its pipe directory
// mounted at /run/nvidia-mps/<uuid> and their thread and memory limits; a
// time-sliced task gets its share, its memory limit and a no-isolation
// warning; the daemon quits once both MPS jobs are stopped.
func TestE2EGPUShareMPS(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the exec driver needs root outside CI")
	}
	standin := gpusharetest.New(t)
	standin.OnPath(t) // the agent inherits PATH
	httpPort := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p := startAgent(t, "-dev", "-dev-gpus", "dgxh100", "-http-port", strconv.Itoa(httpPort),
		"-raft-port", strconv.Itoa(freePort(t)), "-gossip-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)
	testproc.Eventually(t, 20*time.Second, "a ready node with GPUs", func() bool {
		var nodes []*api.NodeListStub
		if call(t, "GET", base+"/v1/nodes", "", &nodes) != 200 || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
			return false
		}
		var node api.Node
		return call(t, "GET", base+"/v1/node/"+nodes[0].ID, "", &node) == 200 &&
			node.NodeResources != nil && len(node.NodeResources.Devices) > 0
	})

	run := func(id, share string) {
		t.Helper()
		body, _ := json.Marshal(api.JobsParseRequest{JobHCL: fmt.Sprintf(shareJobHCL, id, share), Canonicalize: true})
		var job api.Job
		if code := call(t, "POST", base+"/v1/jobs/parse", string(body), &job); code != 200 {
			t.Fatalf("parse %s = %d", id, code)
		}
		job.Datacenters = []string{"*"}
		b, _ := json.Marshal(api.JobRegisterRequest{Job: &job})
		if code := call(t, "PUT", base+"/v1/jobs", string(b), nil); code != 200 {
			t.Fatalf("register %s = %d", id, code)
		}
	}
	mps := `fraction = 0.25
            mode     = "mps"
            limit    = 0.5`
	run("mps-1", mps)
	run("mps-2", mps)
	run("ts-1", `fraction = 0.5`)

	// H100 80GB: 81920 MiB; a quarter is 20480, a half 40960.
	gpus := map[string]bool{}
	for _, id := range []string{"mps-1", "mps-2"} {
		env, _ := shareOutput(t, base, id)
		gpu := env["CUDA_VISIBLE_DEVICES"]
		gpus[gpu] = true
		want := map[string]string{
			"CUDA_MPS_PIPE_DIRECTORY":           "/run/nvidia-mps/" + gpu,
			"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "50",
			"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT":  gpu + "=20480M",
			"DROVER_GPU_SHARE":                  "0.25",
			"DROVER_GPU_MEMORY_LIMIT":           "20480",
			// The stand-in daemon's pid file: the task sees its daemon's dir.
			"pipe-dir-holds": "daemon.pid",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s: %s=%q, want %q (env %v)", id, k, env[k], v, env)
			}
		}
	}
	for gpu := range gpus {
		var starts []gpusharetest.Call
		for _, c := range standin.Starts(t) {
			if c.Visible == gpu {
				starts = append(starts, c)
			}
		}
		if len(starts) != 1 {
			t.Fatalf("GPU %s: %d MPS daemons started, want 1 (calls %+v)", gpu, len(starts), standin.Calls(t))
		}
		if c := starts[0]; !strings.HasSuffix(c.PipeDir, filepath.Join("client", "mps", gpu, "pipe")) ||
			!strings.HasSuffix(c.LogDir, filepath.Join("client", "mps", gpu, "log")) {
			t.Errorf("GPU %s daemon: pipe %q log %q, want the GPU's dirs under the client's data dir", gpu, c.PipeDir, c.LogDir)
		}
	}

	env, allocID := shareOutput(t, base, "ts-1")
	for k, v := range map[string]string{"DROVER_GPU_SHARE": "0.5", "DROVER_GPU_MEMORY_LIMIT": "40960", "CUDA_MPS_PIPE_DIRECTORY": "",
		"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": ""} {
		if env[k] != v {
			t.Errorf("ts-1: %s=%q, want %q", k, env[k], v)
		}
	}
	if gpus[env["CUDA_VISIBLE_DEVICES"]] {
		t.Errorf("ts-1 time-slices GPU %s, which MPS tasks share (one mode per GPU)", env["CUDA_VISIBLE_DEVICES"])
	}
	var alloc api.Allocation
	call(t, "GET", base+"/v1/allocation/"+allocID, "", &alloc)
	warned := false
	for _, e := range alloc.TaskStates["lab"].Events {
		warned = warned || strings.Contains(e.DisplayMessage, "no isolation of compute or memory")
	}
	if !warned {
		t.Errorf("ts-1 events %+v, want the time-slicing no-isolation warning", alloc.TaskStates["lab"].Events)
	}

	// Stopping both MPS jobs quits their GPU's daemon.
	for _, id := range []string{"mps-1", "mps-2"} {
		if code := call(t, "DELETE", base+"/v1/job/"+id, "", nil); code != 200 {
			t.Fatalf("stop %s = %d", id, code)
		}
	}
	testproc.Eventually(t, 30*time.Second, "the MPS daemons quit", func() bool {
		for _, c := range standin.Starts(t) {
			if gpusharetest.Alive(c.Daemon) {
				return false
			}
		}
		return len(standin.Quits(t)) == len(gpus)
	})
	p.stop(t)
}

// shareOutput waits for job's running alloc and returns what its task
// printed (NAME=value lines up to END) and the alloc's ID.
func shareOutput(t *testing.T, base, job string) (map[string]string, string) {
	t.Helper()
	var allocID string
	env := map[string]string{}
	testproc.Eventually(t, 60*time.Second, job+" printing its GPU env", func() bool {
		if allocID == "" {
			var stubs []*api.AllocListStub
			call(t, "GET", base+"/v1/job/"+job+"/allocations", "", &stubs)
			for _, s := range stubs {
				if s.ClientStatus == api.AllocClientStatusRunning {
					allocID = s.ID
				}
			}
			if allocID == "" {
				return false
			}
		}
		r, err := http.Get(base + "/v1/client/fs/logs/" + allocID + "?task=lab&type=stdout&plain=true")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		out := string(b)
		if r.StatusCode != 200 || !strings.Contains(out, "END\n") {
			return false
		}
		for _, line := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[k] = strings.TrimSpace(v)
			}
		}
		return true
	})
	return env, allocID
}
