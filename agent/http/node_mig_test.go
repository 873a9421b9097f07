package http_test

import (
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// migGPUNode is testNode with two whole H100s its client can partition.
func migGPUNode(id string) *api.Node {
	n := testNode(id)
	const model = "NVIDIA H100 80GB HBM3"
	profiles := []api.MIGProfile{{Name: "1g.10gb", Slices: 1, MemoryMiB: 10240, Max: 7}, {Name: "2g.20gb", Slices: 2, MemoryMiB: 20480, Max: 3},
		{Name: "3g.40gb", Slices: 3, MemoryMiB: 40960, Max: 2}, {Name: "7g.80gb", Slices: 7, MemoryMiB: 81920, Max: 1}}
	g := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model}
	for i := range 2 {
		uuid := fmt.Sprintf("GPU-%d", i)
		g.Instances = append(g.Instances, &api.NodeDevice{ID: uuid, Healthy: true})
		n.GPUs = append(n.GPUs, &api.NodeGPU{UUID: uuid, Index: i, Name: model, MemoryMiB: 81920, MIGCapable: true, MIGProfiles: profiles})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{g}
	return n
}

// POST /v1/node/{id}/gpu/mig answers 409 for a GPU a live alloc holds,
// 400 for a layout the GPU cannot take, 404 for an unknown node, and 200
// with the change's ID for an idle GPU; the node's own secret then reads
// the pending change at GET /v1/node/{id}/client-mig.
func TestNodeMIGRoute(t *testing.T) {
	a := newTestAPI(t)
	n := migGPUNode(nodeID)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil)
	job := &api.Job{ID: "train", TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: "exec",
		Config:    map[string]any{"command": "/bin/sleep", "args": []string{"300"}},
		Resources: &api.Resources{CPU: 100, MemoryMB: 64, Devices: []*api.RequestedDevice{{Name: "nvidia/gpu", Count: 1}}}}}}}}
	a.waitEval(a.register(&api.JobRegisterRequest{Job: job}).EvalID)
	var allocs []*api.Allocation
	a.ok("GET", "/v1/job/train/allocations", nil, &allocs)
	if len(allocs) != 1 {
		t.Fatalf("train has %d allocs, want 1 holding a GPU", len(allocs))
	}
	held := allocs[0].AllocatedResources.Tasks["t"].Devices[0].DeviceIDs[0]
	idle := "GPU-0"
	if held == idle {
		idle = "GPU-1"
	}
	path := "/v1/node/" + nodeID + "/gpu/mig"
	layout := func(gpu string, profiles ...string) *api.NodeMIGApplyRequest {
		return &api.NodeMIGApplyRequest{Layouts: []api.MIGLayout{{GPU: gpu, Profiles: profiles}}}
	}

	e := a.fails("POST", path, layout(held, "3g.40gb", "3g.40gb"), nethttp.StatusConflict, "conflict")
	if !strings.Contains(e.Message, allocs[0].ID[:8]) {
		t.Errorf("409 message %q, want the alloc holding the GPU", e.Message)
	}
	a.fails("POST", path, layout(idle, "5g.50gb"), nethttp.StatusBadRequest, "bad_request")
	a.fails("POST", path, layout("GPU-9", "1g.10gb"), nethttp.StatusBadRequest, "bad_request")
	a.fails("POST", "/v1/node/nope/gpu/mig", layout(idle, "1g.10gb"), nethttp.StatusNotFound, "node_not_found")

	var resp api.NodeMIGApplyResponse
	a.ok("PUT", path, layout(idle, "3g.40gb", "2g.20gb", "1g.10gb"), &resp)
	if resp.ChangeID == "" || resp.Index == 0 {
		t.Fatalf("MIG change of the idle GPU answered %+v, want a change ID and an index", resp)
	}

	req, _ := nethttp.NewRequest("GET", a.ts.URL+"/v1/node/"+nodeID+"/client-mig", nil)
	req.Header.Set(api.NodeSecretHeader, n.SecretID)
	var got api.NodeClientMIGResponse
	r, err := a.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(&got); err != nil || r.StatusCode != 200 {
		t.Fatalf("client-mig = %d %v", r.StatusCode, err)
	}
	if c := got.Change; !c.Pending() || c.ID != resp.ChangeID || c.Layouts[0].GPU != idle {
		t.Errorf("client-mig answered %+v, want pending change %s of %s", c, resp.ChangeID, idle)
	}
}
