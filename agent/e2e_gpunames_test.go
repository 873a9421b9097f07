package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// namesJobHCL is a batch job in queue %s whose exec task holds one device
// %q while it sleeps.
const namesJobHCL = `
job "%s" {
  type  = "batch"
  queue = "%s"
  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "exec sleep 300"]
      }
      resources {
        cpu    = 100
        memory = 64
        device %q {
          count = 1
        }
      }
    }
  }
}
`

// TestE2EGPUModelNames: on a dev agent with simulated DGX H100 GPUs the
// node shows each GPU model's short names; a job asking
// "nvidia/gpu/H100" runs on one; a job asking a model no node has is
// registered with a warning and its pending reason names the models
// there are; a queue limit keyed "nvidia/gpu/H100" at 0 keeps a job of
// that queue pending, and one naming an unknown model is applied with a
// warning.
func TestE2EGPUModelNames(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the exec driver needs root outside CI")
	}
	httpPort := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p := startAgent(t, "-dev", "-dev-gpus", "dgxh100", "-http-port", strconv.Itoa(httpPort),
		"-raft-port", strconv.Itoa(freePort(t)), "-gossip-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)
	var node api.Node
	testproc.Eventually(t, 20*time.Second, "a ready node with GPUs", func() bool {
		var nodes []*api.NodeListStub
		if call(t, "GET", base+"/v1/nodes", "", &nodes) != 200 || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
			return false
		}
		return call(t, "GET", base+"/v1/node/"+nodes[0].ID, "", &node) == 200 &&
			node.NodeResources != nil && len(node.NodeResources.Devices) > 0
	})
	if a := node.NodeResources.Devices[0].Attributes["aliases"]; a == nil || a.StringVal == nil || *a.StringVal != "H100,H100-80GB" {
		t.Fatalf("node device aliases = %+v, want H100,H100-80GB", a)
	}

	// Queues: one limited to 0 H100s by a short key; one whose key names
	// no model the cluster has (applied, with a warning).
	var qresp api.QueueUpsertResponse
	if code := call(t, "PUT", base+"/v1/queues", `{"Queues":[{"Name":"noh100","Limit":{"GPUsByModel":{"nvidia/gpu/H100":0}}},`+
		`{"Name":"typo","Limit":{"GPUsByModel":{"H1000":1}}}]}`, &qresp); code != 200 ||
		!strings.Contains(qresp.Warnings, `gpu_models "H1000": no node has a GPU model matching it`) {
		t.Fatalf("queue upsert = %d, warnings %q", code, qresp.Warnings)
	}

	register := func(id, queue, ask string) api.JobRegisterResponse {
		t.Helper()
		body, _ := json.Marshal(api.JobsParseRequest{JobHCL: fmt.Sprintf(namesJobHCL, id, queue, ask), Canonicalize: true})
		var job api.Job
		if code := call(t, "POST", base+"/v1/jobs/parse", string(body), &job); code != 200 {
			t.Fatalf("parse %s = %d", id, code)
		}
		b, _ := json.Marshal(api.JobRegisterRequest{Job: &job})
		var resp api.JobRegisterResponse
		if code := call(t, "PUT", base+"/v1/jobs", string(b), &resp); code != 200 {
			t.Fatalf("register %s = %d", id, code)
		}
		return resp
	}
	failed := func(id string) *api.AllocMetric {
		t.Helper()
		var m *api.AllocMetric
		testproc.Eventually(t, 20*time.Second, "a failed placement for "+id, func() bool {
			var evals []*api.Evaluation
			call(t, "GET", base+"/v1/job/"+id+"/evaluations", "", &evals)
			for _, e := range evals {
				if f := e.FailedTGAllocs["g"]; f != nil {
					m = f
					return true
				}
			}
			return false
		})
		return m
	}

	if resp := register("short", "default", "nvidia/gpu/H100"); resp.Warnings != "" {
		t.Errorf("register nvidia/gpu/H100: warnings %q, want none", resp.Warnings)
	}
	testproc.Eventually(t, 30*time.Second, "job short running on an H100", func() bool {
		var allocs []*api.AllocListStub
		call(t, "GET", base+"/v1/job/short/allocations", "", &allocs)
		return len(allocs) == 1 && allocs[0].ClientStatus == api.AllocClientStatusRunning
	})

	resp := register("typo", "default", "nvidia/gpu/H1000")
	if !strings.Contains(resp.Warnings, `device "nvidia/gpu/H1000": no node has a model matching it`) ||
		!strings.Contains(resp.Warnings, "NVIDIA H100 80GB HBM3 (H100, H100-80GB)") {
		t.Errorf("register nvidia/gpu/H1000: warnings %q, want the unknown model and the known ones", resp.Warnings)
	}
	if m := failed("typo"); len(m.DeviceShortfalls) != 1 ||
		!strings.Contains(m.DeviceShortfalls[0], "no node has a GPU model matching nvidia/gpu/H1000 (known: NVIDIA H100 80GB HBM3 (H100, H100-80GB))") {
		t.Errorf("typo's failure: %q, want the unknown model explained", m.DeviceShortfalls)
	}

	register("limited", "noh100", "nvidia/gpu/H100")
	if m := failed("limited"); !strings.Contains(strings.Join(m.QuotaExhausted, "\n"), "queue noh100: gpu nvidia/gpu/H100 limit 0, 1 asked by one allocation: it can never run under this limit") {
		t.Errorf("limited's failure: quota %q, want the H100 limit and that it can never run under it", m.QuotaExhausted)
	}
}
