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
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testproc"
)

// TestE2EGPUSimulatedDGX runs examples/gpu-train.hcl on a dev agent with
// simulated DGX H100 GPUs: the node reports 8 GPUs; two 4-GPU jobs each
// see 4 distinct GPUs of the node in CUDA_VISIBLE_DEVICES (disjoint
// sets, each on one NUMA node); a third stays pending with a reason.
func TestE2EGPUSimulatedDGX(t *testing.T) {
	if os.Getuid() != 0 && os.Getenv("CI") != "true" {
		t.Skip("the exec driver needs root outside CI")
	}
	httpPort := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	p := startAgent(t, "-dev", "-dev-gpus", "dgxh100", "-http-port", strconv.Itoa(httpPort),
		"-raft-port", strconv.Itoa(freePort(t)), "-gossip-port", strconv.Itoa(freePort(t)))
	waitLeader(t, p, base)

	// The client registers its node with the simulated GPUs.
	var node api.Node
	testproc.Eventually(t, 20*time.Second, "a ready node with GPUs", func() bool {
		var nodes []*api.NodeListStub
		if call(t, "GET", base+"/v1/nodes", "", &nodes) != 200 || len(nodes) != 1 || nodes[0].Status != api.NodeStatusReady {
			return false
		}
		return call(t, "GET", base+"/v1/node/"+nodes[0].ID, "", &node) == 200 &&
			node.NodeResources != nil && len(node.NodeResources.Devices) > 0
	})
	devs := node.NodeResources.Devices
	if len(devs) != 1 || devs[0].Vendor != "nvidia" || devs[0].Type != "gpu" || len(devs[0].Instances) != 8 {
		t.Fatalf("node devices = %+v, want one nvidia/gpu group of 8", devs)
	}
	numa := map[string]int{}
	for _, in := range devs[0].Instances {
		if !in.Healthy || len(in.Links) != 7 || in.Locality == nil {
			t.Errorf("GPU %s: healthy %v, %d links, locality %v; want healthy, NVLink to 7 peers, a locality", in.ID, in.Healthy, len(in.Links), in.Locality)
			continue
		}
		numa[in.ID] = in.Locality.NUMANode
	}

	// Parse the example through the API; the training task is made to
	// hold its GPUs (sleep after printing) so the jobs compete, and to
	// ask for little CPU and memory so that GPUs, not this small test
	// machine's CPU, run out.
	hcl, err := os.ReadFile("../examples/gpu-train.hcl")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(api.JobsParseRequest{JobHCL: string(hcl), Canonicalize: true})
	var parsed api.Job
	if code := call(t, "POST", base+"/v1/jobs/parse", string(body), &parsed); code != 200 {
		t.Fatalf("parse gpu-train.hcl = %d", code)
	}
	run := func(id string) {
		t.Helper()
		j := parsed.Copy()
		j.ID, j.Name = id, id
		task := j.TaskGroups[0].Tasks[0]
		args := task.Config["args"].([]any)
		args[len(args)-1] = args[len(args)-1].(string) + "; exec sleep 300"
		task.Resources.CPU, task.Resources.MemoryMB = 100, 64
		b, _ := json.Marshal(api.JobRegisterRequest{Job: j})
		if code := call(t, "PUT", base+"/v1/jobs", string(b), nil); code != 200 {
			t.Fatalf("register %s = %d", id, code)
		}
	}
	seen := map[string]string{}
	for _, id := range []string{"train-1", "train-2"} {
		run(id)
		ids := gpuOutput(t, base, id)
		if len(ids) != 4 {
			t.Fatalf("%s: CUDA_VISIBLE_DEVICES = %v, want 4 GPUs", id, ids)
		}
		for _, g := range ids {
			if _, ok := numa[g]; !ok {
				t.Errorf("%s got %s, not a GPU of the node", id, g)
			}
			if other := seen[g]; other != "" {
				t.Errorf("%s and %s share %s", id, other, g)
			}
			seen[g] = id
			if numa[g] != numa[ids[0]] {
				t.Errorf("%s spans NUMA nodes: %v", id, ids)
			}
		}
	}

	// The third job finds no free GPU: pending, with a blocked eval that
	// says why.
	run("train-3")
	var failed *api.Evaluation
	testproc.Eventually(t, 20*time.Second, "a failed placement for train-3", func() bool {
		var evals []*api.Evaluation
		call(t, "GET", base+"/v1/job/train-3/evaluations", "", &evals)
		for _, e := range evals {
			if len(e.FailedTGAllocs) > 0 {
				failed = e
				return true
			}
		}
		return false
	})
	m := failed.FailedTGAllocs["train"]
	if m == nil || failed.BlockedEval == "" {
		t.Fatalf("eval %+v: want FailedTGAllocs[train] and a blocked eval", failed)
	}
	if m.DimensionExhausted["devices: nvidia/gpu"] != 1 {
		t.Errorf("exhausted dimensions %v, want devices: nvidia/gpu on the node", m.DimensionExhausted)
	}
	if want := "needs 4 nvidia/gpu with memory >= 40 GiB; no node has a matching one free"; !slices.Contains(m.DeviceShortfalls, want) {
		t.Errorf("DeviceShortfalls = %q, want %q", m.DeviceShortfalls, want)
	}
	var job api.Job
	if call(t, "GET", base+"/v1/job/train-3", "", &job); job.Status != api.JobStatusPending {
		t.Errorf("train-3 status %q, want pending", job.Status)
	}
	// `drover job plan` of the example explains the device shortfall (CPU
	// and memory made small as above).
	small := strings.NewReplacer("cpu    = 2000", "cpu    = 100", "memory = 4096", "memory = 64").Replace(string(hcl))
	planFile := filepath.Join(t.TempDir(), "gpu-train.hcl")
	if err := os.WriteFile(planFile, []byte(small), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(droverBin(t), "job", "plan", "-address", base, planFile).CombinedOutput()
	if !strings.Contains(string(out), "Why pending:") ||
		!strings.Contains(string(out), "needs 4 nvidia/gpu with memory >= 40 GiB on one node; no node has a matching one free") {
		t.Errorf("drover job plan: %v\n%s\nwant the device shortfall", err, out)
	}
	out, err = exec.Command(droverBin(t), "node", "status", "-verbose", "-address", base, node.ID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nvidia/gpu/NVIDIA H100 80GB HBM3") || !strings.Contains(string(out), "NV18") {
		t.Errorf("drover node status -verbose: %v\n%s\nwant the GPUs and their NVLink topology", err, out)
	}
	p.stop(t)
}

var cudaRE = regexp.MustCompile(`CUDA_VISIBLE_DEVICES=(\S*)`)

// gpuOutput waits for job's running alloc and returns the GPU UUIDs its
// task printed (read through the logs API).
func gpuOutput(t *testing.T, base, job string) []string {
	t.Helper()
	var allocID string
	var ids []string
	testproc.Eventually(t, 60*time.Second, job+" printing CUDA_VISIBLE_DEVICES", func() bool {
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
		r, err := http.Get(base + "/v1/client/fs/logs/" + allocID + "?task=train&type=stdout&plain=true")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		mm := cudaRE.FindStringSubmatch(string(b))
		if r.StatusCode != 200 || mm == nil {
			return false
		}
		ids = strings.Split(mm[1], ",")
		return true
	})
	return ids
}
