package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
)

// `node gpu mig-apply` on an agent with simulated DGX H100 GPUs: usage
// errors exit 2; a GPU a job holds, or a profile the GPU lacks, exits 1
// saying why; an idle GPU is partitioned, the command waiting for the
// node and printing the new instances; `node gpu status` shows the
// layout; -disable -detach returns at once and the GPU is whole again.
func TestCLINodeGPUMIGApply(t *testing.T) {
	addr, srv := startAgentServer(t, true, func(c *config.Config) { c.Client.DevGPUs = "dgxh100" })
	c := api.NewClient(addr)
	ctx := context.Background()
	var node *api.Node
	testcluster.WaitState(t, srv, 20*time.Second, "a node with its GPUs", func() bool {
		nodes, _, err := c.Nodes(ctx, nil)
		if err != nil || len(nodes) != 1 {
			return false
		}
		node, _, err = c.Node(ctx, nodes[0].ID, nil)
		return err == nil && len(node.GPUs) == 8
	})
	id := node.ID[:8]

	for _, args := range [][]string{
		{"-layout", "3g.40gb", id},
		{"-gpu", "1", id},
		{"-gpu", "1", "-layout", "3g.40gb", "-disable", id},
		{"-gpu", "1", "-layout", "3g", id},
	} {
		if code, _, stderr := runCLI(t, append([]string{"node", "gpu", "mig-apply", "-address", addr}, args...)...); code != ExitUsage {
			t.Errorf("mig-apply %v: exit %d (%q), want %d", args, code, stderr, ExitUsage)
		}
	}
	if code, _, stderr := runCLI(t, "node", "gpu", "mig-apply", "-address", addr, "-gpu", "1", "-layout", "5g.50gb", id); code != ExitError || !strings.Contains(stderr, `no MIG profile "5g.50gb"`) {
		t.Errorf("unknown profile: exit %d stderr %q, want 1 naming it", code, stderr)
	}

	// A job holds a GPU (placed is enough: the servers count it live).
	job := &api.Job{ID: "hold", Name: "hold", Type: api.JobTypeService, Datacenters: []string{"*"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: "raw_exec",
			Config:    map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
			Resources: &api.Resources{CPU: 100, MemoryMB: 64, Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}}}}}}
	if _, err := c.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
		t.Fatal(err)
	}
	var held string
	testcluster.WaitState(t, srv, 20*time.Second, "job hold placed", func() bool {
		as, _, err := c.JobAllocations(ctx, "hold", nil)
		if err != nil || len(as) != 1 {
			return false
		}
		a, _, err := c.Allocation(ctx, as[0].ID, nil)
		if err != nil {
			return false
		}
		held = a.AllocatedResources.Tasks["t"].Devices[0].DeviceIDs[0]
		return true
	})
	heldIdx, idleIdx := node.GPU(held).Index, 0
	if heldIdx == 0 {
		idleIdx = 1
	}
	code, _, stderr := runCLI(t, "node", "gpu", "mig-apply", "-address", addr, "-gpu", strconv.Itoa(heldIdx), "-layout", "7g.80gb", id)
	if code != ExitError || !strings.Contains(stderr, "live allocations hold the GPUs") {
		t.Errorf("mig-apply on the held GPU: exit %d stderr %q, want 1 and the conflict", code, stderr)
	}

	idle := strconv.Itoa(idleIdx)
	code, out, stderr := runCLI(t, "node", "gpu", "mig-apply", "-address", addr, "-gpu", idle, "-layout", "3g.40gb,2g.20gb,2x1g.10gb", id)
	if code != 0 {
		t.Fatalf("mig-apply on GPU %s: exit %d stderr %q", idle, code, stderr)
	}
	for _, want := range []string{"GPU " + idle + " (NVIDIA H100 80GB HBM3", "whole GPU -> 3g.40gb,2g.20gb,1g.10gb,1g.10gb",
		"MIG layout applied", "GPU " + idle + ": 3g.40gb MIG-"} {
		if !strings.Contains(out, want) {
			t.Errorf("mig-apply output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "node", "gpu", "status", "-address", addr, id)
	if code != 0 || !strings.Contains(out, "3g.40gb,2g.20gb,1g.10gb,1g.10gb") || !strings.Contains(out, ": applied") {
		t.Errorf("node gpu status: exit %d\n%s\nwant GPU %s's new layout and the applied change", code, out, idle)
	}
	code, out, _ = runCLI(t, "node", "gpu", "status", "-address", addr, "-json", id)
	var gpus []*api.NodeGPU
	if code != 0 || json.Unmarshal([]byte(out), &gpus) != nil || len(gpus) != 8 || len(gpus[idleIdx].MIG) != 4 {
		t.Errorf("node gpu status -json: exit %d, %d GPUs\n%s", code, len(gpus), out)
	}

	code, out, stderr = runCLI(t, "node", "gpu", "mig-apply", "-address", addr, "-gpu", idle, "-disable", "-detach", id)
	if code != 0 || !strings.Contains(out, "-> whole GPU") || strings.Contains(out, "applied") {
		t.Fatalf("mig-apply -disable -detach: exit %d stderr %q\n%s", code, stderr, out)
	}
	testcluster.WaitState(t, srv, 20*time.Second, "GPU "+idle+" whole again", func() bool {
		n, _, err := c.Node(ctx, node.ID, nil)
		return err == nil && n.MIGChange != nil && n.MIGChange.Status == api.MIGChangeApplied && !n.GPUs[idleIdx].MIGEnabled
	})
}
