package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

const h100Model = "NVIDIA H100 80GB HBM3"

// gpuModelNode is testNode with gpus GPUs of the NVML model name.
func gpuModelNode(id, model string, gpus int) *api.Node {
	n := testNode(id, 4000, 100000)
	n.Status, n.SchedulingEligibility = api.NodeStatusReady, api.NodeSchedulingEligible
	g := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model}
	for i := range gpus {
		g.Instances = append(g.Instances, &api.NodeDevice{ID: fmt.Sprintf("%s-GPU-%d", id, i), Healthy: true})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{g}
	return n
}

// gpuAlloc is squatAlloc holding GPU gpu of node's model.
func gpuAlloc(job *api.Job, node, model string, gpu int) *api.Allocation {
	a := squatAlloc(job, node, 100)
	a.AllocatedResources.Tasks["srv"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: model,
		DeviceIDs: []string{fmt.Sprintf("%s-GPU-%d", node, gpu)}}}
	return a
}

// The plan applier counts a gpu_models limit keyed by a short name (or
// the ask's name) against the GPUs of every model it names, as the
// scheduler does: a plan raising the queue's H100s above the limit loses
// a node. Before, only the full "nvidia/gpu/<NVML name>" key counted.
func TestEvaluatePlanModelLimitByAlias(t *testing.T) {
	for _, key := range []string{"H100", "nvidia/gpu/H100", "H100-80GB"} {
		t.Run(key, func(t *testing.T) {
			st := state.NewStateStore()
			for i, id := range []string{"n0", "n1"} {
				if err := st.UpsertNode(uint64(i+1), gpuModelNode(id, h100Model, 2)); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.UpsertQueues(100, []*api.Queue{{Name: "t", Limit: &api.QueueResources{GPUsByModel: map[string]float64{key: 1}}}}); err != nil {
				t.Fatal(err)
			}
			j := queueJob("j", "t")
			plan := &api.Plan{EvalID: "e1", Job: j}
			plan.AppendAlloc(gpuAlloc(j, "n0", h100Model, 0))
			plan.AppendAlloc(gpuAlloc(j, "n1", h100Model, 0))
			res, req, err := evaluatePlan(mustSnap(t, st), plan)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.RejectedNodes) != 1 || res.RejectedNodes[0] != "n1" || len(req.AllocsPlaced) != 1 {
				t.Fatalf("rejected %v placed %d, want n1 rejected (2 H100s over t's %s = 1)", res.RejectedNodes, len(req.AllocsPlaced), key)
			}
		})
	}
}

// Job register and plan warn about a device ask naming a model no node
// has, listing the models there are; a known model (by alias too) and an
// ask naming no model do not warn.
func TestRegisterWarnsUnknownModel(t *testing.T) {
	s := newTestServer(t)
	waitLeader(t, s)
	n := gpuModelNode("g1", h100Model, 2)
	n.NodeResources.Devices = append(n.NodeResources.Devices, &api.NodeDeviceResource{Vendor: "nvidia", Type: "mig",
		Name: h100Model + " MIG 1g.10gb", Instances: []*api.NodeDevice{{ID: "MIG-1", Healthy: true}}})
	registerNode(t, s, n)
	job := func(id, ask string) *api.Job {
		j := testJob(id, 1, 100, 64)
		j.Type = api.JobTypeBatch
		j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: ask, Count: 1}}
		return j
	}
	for ask, warn := range map[string]bool{"nvidia/gpu/H1000": true, "nvidia/gpu/2g.20gb": true, "nvidia/gpu/H100": false,
		"nvidia/gpu/H100-80GB": false, "nvidia/gpu/1g.10gb": false, "nvidia/gpu": false} {
		id := strings.NewReplacer("/", "-", ".", "-").Replace(ask)
		resp := registerJob(t, s, job(id, ask))
		if got := resp.Warnings != ""; got != warn {
			t.Errorf("register %q: warnings %q, want some: %v", ask, resp.Warnings, warn)
		}
		if warn && !strings.Contains(resp.Warnings, fmt.Sprintf("device %q: no node has a model matching it", ask)) ||
			warn && !strings.Contains(resp.Warnings, "known: "+h100Model+" (H100, H100-80GB), "+h100Model+" MIG 1g.10gb (1g.10gb, H100 MIG 1g.10gb, H100-80GB MIG 1g.10gb)") {
			t.Errorf("register %q: warnings %q, want the ask and the known models named", ask, resp.Warnings)
		}
	}
	plan, err := s.Jobs().PlanJob(context.Background(), &api.JobPlanRequest{Job: job("planned", "nvidia/gpu/H1000")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.Warnings, `device "nvidia/gpu/H1000": no node has a model matching it`) {
		t.Errorf("plan warnings %q, want the unknown model named", plan.Warnings)
	}
}

// Queue upsert refuses gpu_models keys that count nothing (a MIG profile,
// another device type) and warns about a model no node has.
func TestQueueModelKeys(t *testing.T) {
	s := newTestServer(t)
	waitLeader(t, s)
	registerNode(t, s, gpuModelNode("g1", h100Model, 2))
	ctx := context.Background()
	for _, key := range []string{"1g.10gb", "nvidia/gpu/1g.10gb", "nvidia/mig/" + h100Model + " MIG 1g.10gb", "nvidia/gpu", "intel/fpga/x"} {
		q := &api.Queue{Name: "bad", Limit: &api.QueueResources{GPUsByModel: map[string]float64{key: 1}}}
		if _, err := s.Tenancy().UpsertQueues(ctx, []*api.Queue{q}); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("gpu_models %q: upsert error %v, want bad request", key, err)
		}
	}
	queues := []*api.Queue{{Name: "ok", Limit: &api.QueueResources{GPUsByModel: map[string]float64{"H100": 1, "nvidia/gpu/H100-80GB": 2}}},
		{Name: "typo", Guaranteed: &api.QueueResources{GPUsByModel: map[string]float64{"H1000": 1}}}}
	if _, err := s.Tenancy().UpsertQueues(ctx, queues); err != nil {
		t.Fatal(err)
	}
	w := s.Tenancy().QueueWarnings(queues)
	want := `gpu_models "H1000": no node has a GPU model matching it, so it counts nothing until one joins; known: ` + h100Model + " (H100, H100-80GB)"
	if len(w) != 1 || w[0] != want {
		t.Errorf("warnings %q, want [%q]", w, want)
	}
}
