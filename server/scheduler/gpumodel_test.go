package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/drover/drover/api"
)

// Names people type (api/gpumodel.go): short model names in device asks,
// constraints and queue limits, MIG instances asked for by profile, and
// an unknown model explained instead of "exhausted".

const (
	h100Name = "NVIDIA H100 80GB HBM3"
	a100Name = "NVIDIA A100-SXM4-80GB"
)

// modelNode is a node with gpus GPUs of the NVML model name.
func modelNode(node, model string, gpus int) *api.Node {
	n := testNode(node, "dc1", 64000, 512000)
	var inst []*api.NodeDevice
	for i := range gpus {
		inst = append(inst, &api.NodeDevice{ID: fmt.Sprintf("%s-GPU-%d", node, i), Healthy: true})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: model, Instances: inst,
		Attributes: map[string]*api.Attribute{"memory": {IntVal: i64(81920), Unit: "MiB"}}}}
	return n
}

// migGroup is a MIG group of n instances of profile on a GPU of model.
func migGroup(node, model, profile string, n int) *api.NodeDeviceResource {
	g := &api.NodeDeviceResource{Vendor: "nvidia", Type: "mig", Name: model + " MIG " + profile,
		Attributes: map[string]*api.Attribute{"memory": {IntVal: i64(10240), Unit: "MiB"}, "mig_profile": {StringVal: str(profile)}}}
	for i := range n {
		g.Instances = append(g.Instances, &api.NodeDevice{ID: fmt.Sprintf("%s-MIG-%s-%d", node, profile, i), Healthy: true})
	}
	return g
}

// modelCluster is an H100 node and an A100 node, 8 GPUs each.
func modelCluster() *memState {
	st := newMemState()
	st.addNode(modelNode("h100", h100Name, 8))
	st.addNode(modelNode("a100", a100Name, 8))
	return st
}

// askJob is a batch job of one alloc asking count of the device ask.
func askJob(id, ask string, count uint64, cons ...*api.Constraint) *api.Job {
	j := gpuJob(id, count, cons...)
	j.TaskGroups[0].Tasks[0].Resources.Devices[0].Name = ask
	return j
}

// A device ask by short name lands on the GPUs it names; so does a
// ${device.model} constraint by short name. Before, "nvidia/gpu/H100"
// matched only a GPU named exactly "H100" and failed with free H100s.
func TestDeviceAskByModelAlias(t *testing.T) {
	for _, tc := range []struct {
		ask  string
		cons []*api.Constraint
		want string
	}{
		{"nvidia/gpu/H100", nil, "h100"},
		{"nvidia/gpu/H100-80GB", nil, "h100"},
		{"nvidia/gpu/h100 80gb", nil, "h100"},
		{"nvidia/gpu/" + h100Name, nil, "h100"},
		{"nvidia/gpu/A100", nil, "a100"},
		{"nvidia/gpu/A100-SXM4-80GB", nil, "a100"},
		{"nvidia/gpu", []*api.Constraint{{LTarget: "${device.model}", Operand: "=", RTarget: "H100"}}, "h100"},
		{"nvidia/gpu", []*api.Constraint{{LTarget: "${device.model}", Operand: "!=", RTarget: "H100"}}, "a100"},
		{"nvidia/gpu", []*api.Constraint{{LTarget: "${device.model}", Operand: "=", RTarget: "A100-80GB"}}, "a100"},
	} {
		st := modelCluster()
		node, ids, res := placedDevices(t, st, askJob("j", tc.ask, 2, tc.cons...))
		if node != tc.want || len(ids) != 2 {
			t.Errorf("ask %q %v: placed on %q with %v (failures %+v), want 2 GPUs on %s", tc.ask, tc.cons, node, ids, res.Eval.FailedTGAllocs, tc.want)
		}
	}
}

// A queue's gpu_models limit keyed by a short name, the ask's name or the
// full ID counts the GPUs of that model: at 0 it forbids them, so an ask
// for any GPU is steered to the other model and an ask for the model
// fails on the limit. Before, a key other than the full ID counted
// nothing and the job ran on the H100.
func TestQueueModelLimitByAlias(t *testing.T) {
	// The H100 node is the tighter fit: unlimited, an ask for any GPU
	// goes there.
	cluster := func() *memState {
		st := newMemState()
		st.addNode(modelNode("h100", h100Name, 2))
		st.addNode(modelNode("a100", a100Name, 8))
		return st
	}
	if node, _, _ := placedDevices(t, cluster(), askJob("free", "nvidia/gpu", 1)); node != "h100" {
		t.Fatalf("unlimited any-GPU ask placed on %q, want the tighter H100 node", node)
	}
	for _, key := range []string{"H100", "nvidia/gpu/H100", "H100-80GB", "nvidia/gpu/" + h100Name} {
		t.Run(key, func(t *testing.T) {
			st := cluster()
			st.upsertQueue(&api.Queue{Name: "q", Limit: &api.QueueResources{GPUsByModel: map[string]float64{key: 0}}})
			any := askJob("any", "nvidia/gpu", 1)
			any.Queue = "q"
			if node, _, res := placedDevices(t, st, any); node != "a100" {
				t.Fatalf("any-GPU ask placed on %q (failures %+v), want the A100 node: H100s are limited to 0", node, res.Eval.FailedTGAllocs)
			}
			h := askJob("h", "nvidia/gpu/H100", 1)
			h.Queue = "q"
			node, _, res := placedDevices(t, st, h)
			if node != "" {
				t.Fatalf("H100 ask placed on %q under a limit of 0 keyed %q", node, key)
			}
			m := res.Eval.FailedTGAllocs["web"]
			// A limit of 0 can never admit the ask (issue 47: not "0 of
			// 0 used, 1 more asked").
			want := "queue q: gpu " + key + " limit 0, 1 asked by one allocation" + neverFits
			if m == nil || !slices.Contains(m.QuotaExhausted, want) {
				t.Fatalf("failure %+v, want %q", m, want)
			}
		})
	}
}

// A limit keyed by a short name counts what the queue already holds on
// every GPU of the models it names.
func TestQueueModelLimitCountsHeld(t *testing.T) {
	st := newMemState()
	st.addNode(modelNode("h1", h100Name, 4))
	st.addNode(modelNode("h2", "NVIDIA H100 PCIe", 4))
	st.upsertQueue(&api.Queue{Name: "q", Limit: &api.QueueResources{GPUsByModel: map[string]float64{"H100": 6}}})
	first := askJob("first", "nvidia/gpu", 4)
	first.Queue = "q"
	if node, _, _ := placedDevices(t, st, first); node == "" {
		t.Fatal("the first 4 H100s were not placed")
	}
	second := askJob("second", "nvidia/gpu", 4)
	second.Queue = "q"
	node, _, res := placedDevices(t, st, second)
	if node != "" {
		t.Fatalf("8 H100s held under a limit of 6 (second placed on %q)", node)
	}
	if m := res.Eval.FailedTGAllocs["web"]; m == nil || !slices.Contains(m.QuotaExhausted, "queue q: gpu H100 4 of 6 used, 4 more asked") {
		t.Fatalf("failure %+v, want the H100 limit counting both H100 models", m)
	}
}

// An ask for a model no node has says so, with the models there are,
// instead of "no node has a matching one free".
func TestUnknownModelExplained(t *testing.T) {
	st := modelCluster()
	node, _, res := placedDevices(t, st, askJob("j", "nvidia/gpu/H1000", 1))
	if node != "" {
		t.Fatalf("placed on %q", node)
	}
	m := res.Eval.FailedTGAllocs["web"]
	if m == nil {
		t.Fatal("no failure metric")
	}
	want := "no node has a GPU model matching nvidia/gpu/H1000 (known: NVIDIA A100-SXM4-80GB (A100, A100-SXM4, A100-80GB, A100-SXM4-80GB), " +
		"NVIDIA H100 80GB HBM3 (H100, H100-80GB))"
	if len(m.DeviceShortfalls) != 1 || m.DeviceShortfalls[0] != "needs 1 nvidia/gpu/H1000; "+want {
		t.Errorf("shortfalls %q, want %q", m.DeviceShortfalls, want)
	}
	found := false
	for _, r := range m.Reasons {
		if r.Kind == api.PendingDevices && strings.HasSuffix(r.Message, want) {
			found = true
		}
	}
	if !found {
		t.Errorf("reasons %+v, want a devices reason ending %q", m.Reasons, want)
	}
	// A known model that is only busy keeps the usual line.
	node, _, res = placedDevices(t, st, askJob("big", "nvidia/gpu/H100", 9))
	if m := res.Eval.FailedTGAllocs["web"]; node != "" || m == nil || len(m.DeviceShortfalls) != 1 || strings.Contains(m.DeviceShortfalls[0], "no node has a GPU model") {
		t.Errorf("9 H100s: node %q, failure %+v: want a plain shortfall", node, m)
	}
}

// MIG instances are devices of their own model: asked for by profile (or
// as nvidia/mig), never given to a plain GPU ask, and never shared.
func TestMIGAskedByProfile(t *testing.T) {
	cluster := func() *memState {
		st := newMemState()
		mixed := modelNode("mixed", h100Name, 1) // one whole GPU, one in MIG mode
		mixed.NodeResources.Devices = append(mixed.NodeResources.Devices, migGroup("mixed", h100Name, "1g.10gb", 7))
		st.addNode(mixed)
		onlyMIG := testNode("onlymig", "dc1", 64000, 512000)
		onlyMIG.NodeResources.Devices = []*api.NodeDeviceResource{migGroup("onlymig", a100Name, "3g.40gb", 2)}
		st.addNode(onlyMIG)
		return st
	}

	for _, tc := range []struct {
		ask   string
		count uint64
		node  string
		id    string // prefix of the IDs given
	}{
		{"nvidia/gpu/1g.10gb", 2, "mixed", "mixed-MIG-1g.10gb"},
		{"nvidia/gpu/H100 MIG 1g.10gb", 1, "mixed", "mixed-MIG-1g.10gb"},
		{"nvidia/gpu/3g.40gb", 1, "onlymig", "onlymig-MIG-3g.40gb"},
		{"nvidia/mig/3g.40gb", 1, "onlymig", "onlymig-MIG-3g.40gb"},
		{"nvidia/gpu", 1, "mixed", "mixed-GPU-0"},
		{"nvidia/gpu", 2, "", ""}, // one whole GPU in the cluster: MIG slices are not GPUs
		{"nvidia/gpu/H100", 2, "", ""},
	} {
		node, ids, res := placedDevices(t, cluster(), askJob("j", tc.ask, tc.count))
		ok := node == tc.node && len(ids) == map[bool]int{true: int(tc.count), false: 0}[tc.node != ""]
		for _, id := range ids {
			ok = ok && strings.HasPrefix(id, tc.id)
		}
		if !ok {
			t.Errorf("%d of %q: placed on %q with %v (failures %+v), want %q with %s...", tc.count, tc.ask, node, ids, res.Eval.FailedTGAllocs, tc.node, tc.id)
		}
	}
	// A share of a MIG instance is refused by validation (api); the
	// scheduler does not make one either.
	j := askJob("share", "nvidia/mig", 1)
	j.TaskGroups[0].Tasks[0].Resources.Devices[0].Share = &api.DeviceShare{Fraction: 0.5}
	if node, ids, _ := placedDevices(t, cluster(), j); node != "" {
		t.Errorf("a share of a MIG instance was placed on %q: %v", node, ids)
	}
}
