package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

const migModel = "NVIDIA H100 80GB HBM3"

var migProfilesH100 = []api.MIGProfile{{Name: "1g.10gb", Slices: 1, MemoryMiB: 10240, Max: 7}, {Name: "2g.20gb", Slices: 2, MemoryMiB: 20480, Max: 3},
	{Name: "3g.40gb", Slices: 3, MemoryMiB: 40960, Max: 2}, {Name: "4g.40gb", Slices: 4, MemoryMiB: 40960, Max: 1}, {Name: "7g.80gb", Slices: 7, MemoryMiB: 81920, Max: 1}}

// migNode is a node with gpus whole H100s its client can partition, as a
// client with NVML reports it.
func migNode(id string, gpus int) *api.Node {
	n := testNode(id, 4000, 100000)
	g := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: migModel}
	for i := range gpus {
		uuid := fmt.Sprintf("GPU-%s-%d", id, i)
		g.Instances = append(g.Instances, &api.NodeDevice{ID: uuid, Healthy: true})
		n.GPUs = append(n.GPUs, &api.NodeGPU{UUID: uuid, Index: i, Name: migModel, MemoryMiB: 81920, MIGCapable: true, MIGProfiles: migProfilesH100})
	}
	n.NodeResources.Devices = []*api.NodeDeviceResource{g}
	return n
}

// migGPUJob asks count devices named ask for one task.
func migGPUJob(id, ask string, count uint64) *api.Job {
	j := testJob(id, 1, 100, 64)
	j.TaskGroups[0].Tasks[0].Resources.Devices = []*api.RequestedDevice{{Name: ask, Count: count}}
	return j
}

func heldDevice(a *api.Allocation) string {
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			return d.DeviceIDs[0]
		}
	}
	return ""
}

func deviceHealth(n *api.Node) map[string]string {
	out := map[string]string{}
	for _, g := range n.NodeResources.Devices {
		for _, in := range g.Instances {
			out[in.ID] = "ok"
			if !in.Healthy {
				out[in.ID] = in.HealthDescription
			}
		}
	}
	return out
}

func migLayout(gpu string, profiles ...string) api.MIGLayout {
	return api.MIGLayout{GPU: gpu, Profiles: profiles}
}

// A MIG change of a GPU a live alloc holds is refused (409, naming the
// alloc) and changes nothing; one of an idle GPU is taken, pending, and
// that GPU reads unavailable; a second change while one is pending is
// refused too; and a layout that does not fit is a bad request.
func TestApplyNodeMIGRefusedUnderRunningWork(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, migNode("g", 2))
	registerJob(t, s, migGPUJob("train", "nvidia/gpu", 1))
	live := waitLive(t, s, "train", 1)
	held := heldDevice(live[0])
	idle := "GPU-g-0"
	if held == idle {
		idle = "GPU-g-1"
	}
	ctx := context.Background()
	apply := func(layouts ...api.MIGLayout) (*api.NodeMIGApplyResponse, error) {
		return s.Nodes().ApplyNodeMIG(ctx, &api.NodeMIGApplyRequest{NodeID: "g", Layouts: layouts})
	}

	_, err := apply(migLayout(held, "3g.40gb", "3g.40gb"))
	if !errors.Is(err, api.ErrConflict) || api.AsError(err).Status != 409 || !strings.Contains(err.Error(), live[0].ID[:8]) {
		t.Fatalf("MIG change of the GPU alloc %s holds: %v, want a 409 conflict naming it", live[0].ID[:8], err)
	}
	if n, _ := s.State().NodeByID(nil, "g"); n.MIGChange != nil || deviceHealth(n)[idle] != "ok" || deviceHealth(n)[held] != "ok" {
		t.Fatalf("a refused change left change %+v, devices %v", n.MIGChange, deviceHealth(n))
	}
	if _, err := apply(migLayout(idle, "3g.40gb", "3g.40gb", "1g.10gb")); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "MiB") {
		t.Errorf("a layout over the GPU's memory: %v, want a bad request", err)
	}

	resp, err := apply(migLayout(idle, "3g.40gb", "2g.20gb", "1g.10gb"))
	if err != nil || resp.ChangeID == "" {
		t.Fatalf("MIG change of the idle GPU: %+v, %v", resp, err)
	}
	n, _ := s.State().NodeByID(nil, "g")
	if !n.MIGChange.Pending() || n.MIGChange.ID != resp.ChangeID || len(n.MIGChange.Layouts) != 1 {
		t.Errorf("node's change = %+v, want pending %s", n.MIGChange, resp.ChangeID)
	}
	if h := deviceHealth(n); h[idle] != api.MIGUnavailable || h[held] != "ok" {
		t.Errorf("devices %v: want %s unavailable (%q), %s untouched", h, idle, api.MIGUnavailable, held)
	}
	if _, err := apply(migLayout(idle, "7g.80gb")); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "pending") {
		t.Errorf("a second change while one is pending: %v, want a conflict", err)
	}
}

// While a change is pending the scheduler places nothing on its GPU (a
// 2-GPU job blocks, a 1-GPU job takes the other GPU), also after the
// client registers its devices again as healthy; the client's report
// ends the change (applied, with a node event) and its new MIG devices
// are placeable by their model.
func TestMIGPendingGPUNotScheduledUntilApplied(t *testing.T) {
	s := newTestServer(t)
	node := migNode("g", 2)
	registerNode(t, s, node)
	resp, err := s.Nodes().ApplyNodeMIG(context.Background(), &api.NodeMIGApplyRequest{NodeID: "g",
		Layouts: []api.MIGLayout{migLayout("GPU-g-1", "4g.40gb", "3g.40gb")}})
	if err != nil {
		t.Fatal(err)
	}
	registerNode(t, s, migNode("g", 2)) // the client, unaware: both healthy
	if n, _ := s.State().NodeByID(nil, "g"); deviceHealth(n)["GPU-g-1"] != api.MIGUnavailable {
		t.Fatalf("after a registration the pending GPU reads %q, want unavailable", deviceHealth(n)["GPU-g-1"])
	}

	two := registerJob(t, s, migGPUJob("two", "nvidia/gpu", 2))
	if e := waitEvalStatus(t, s, two.EvalID, api.EvalStatusComplete); len(e.FailedTGAllocs) == 0 {
		t.Errorf("a 2-GPU job with one GPU pending a MIG change: eval %+v, want a failed placement", e)
	}
	registerJob(t, s, migGPUJob("one", "nvidia/gpu", 1))
	if got := heldDevice(waitLive(t, s, "one", 1)[0]); got != "GPU-g-0" {
		t.Errorf("1-GPU job got %s, want GPU-g-0 (GPU-g-1 is pending a MIG change)", got)
	}

	// A report of another change is ignored.
	stray := migNode("g", 2)
	stray.MIGChange = &api.NodeMIGChange{ID: "other", Status: api.MIGChangeApplied}
	registerNode(t, s, stray)
	if n, _ := s.State().NodeByID(nil, "g"); !n.MIGChange.Pending() {
		t.Fatalf("a report of another change ended the pending one: %+v", n.MIGChange)
	}

	// The client applied it: GPU 1 is two MIG instances now.
	applied := migNode("g", 2)
	applied.NodeResources.Devices[0].Instances = applied.NodeResources.Devices[0].Instances[:1]
	for _, p := range []string{"4g.40gb", "3g.40gb"} {
		id := "MIG-g-1-" + p
		applied.NodeResources.Devices = append(applied.NodeResources.Devices, &api.NodeDeviceResource{Vendor: "nvidia", Type: "mig",
			Name: migModel + " MIG " + p, Instances: []*api.NodeDevice{{ID: id, Healthy: true}}})
		applied.GPUs[1].MIG = append(applied.GPUs[1].MIG, api.NodeMIGInstance{ID: id, Profile: p})
	}
	applied.GPUs[1].MIGEnabled = true
	applied.MIGChange = &api.NodeMIGChange{ID: resp.ChangeID, Status: api.MIGChangeApplied, UpdateTime: testT0.UnixNano()}
	registerNode(t, s, applied)
	n, _ := s.State().NodeByID(nil, "g")
	if n.MIGChange.Status != api.MIGChangeApplied || n.MIGChange.UpdateTime != testT0.UnixNano() || len(n.MIGChange.Layouts) != 1 {
		t.Errorf("change after the client's report = %+v, want applied with the servers' layouts", n.MIGChange)
	}
	if ev := n.Events[len(n.Events)-1]; ev.Subsystem != "MIG" || ev.Message != "MIG layout applied" || !ev.Timestamp.Equal(testT0) {
		t.Errorf("last node event %+v, want MIG layout applied at the client's time", ev)
	}
	if h := deviceHealth(n); h["MIG-g-1-3g.40gb"] != "ok" || h["MIG-g-1-4g.40gb"] != "ok" {
		t.Errorf("devices after the change %v, want the MIG instances healthy", h)
	}
	registerJob(t, s, migGPUJob("small", "nvidia/mig/"+migModel+" MIG 3g.40gb", 1))
	if got := heldDevice(waitLive(t, s, "small", 1)[0]); got != "MIG-g-1-3g.40gb" {
		t.Errorf("a job asking the new MIG model got %s, want MIG-g-1-3g.40gb", got)
	}
}

// A failed change ends the same way, with the client's error (bounded)
// in the change and the node event.
func TestMIGChangeFailureReported(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, migNode("g", 1))
	resp, err := s.Nodes().ApplyNodeMIG(context.Background(), &api.NodeMIGApplyRequest{NodeID: "g",
		Layouts: []api.MIGLayout{migLayout("GPU-g-0", "7g.80gb")}})
	if err != nil {
		t.Fatal(err)
	}
	failed := migNode("g", 1)
	failed.MIGChange = &api.NodeMIGChange{ID: resp.ChangeID, Status: api.MIGChangeFailed, Error: "nvml: in use " + strings.Repeat("x", 5000)}
	registerNode(t, s, failed)
	n, _ := s.State().NodeByID(nil, "g")
	if n.MIGChange.Status != api.MIGChangeFailed || !strings.HasPrefix(n.MIGChange.Error, "nvml: in use") || len(n.MIGChange.Error) > 1024 {
		t.Errorf("change = %+v, want failed with the client's error, at most 1 KiB", n.MIGChange.Status)
	}
	if ev := n.Events[len(n.Events)-1]; !strings.HasPrefix(ev.Message, "MIG layout change failed: nvml: in use") {
		t.Errorf("last node event %q, want the failure", ev.Message)
	}
	if deviceHealth(n)["GPU-g-0"] != "ok" {
		t.Errorf("GPU after a failed change: %q, want available again", deviceHealth(n)["GPU-g-0"])
	}
}

// A plan the scheduler made before a MIG change committed is refused
// by the plan applier for the GPU the change takes; the node's other
// GPU still takes placements.
func TestPlanApplierRefusesPendingMIGGPU(t *testing.T) {
	st := state.NewStateStore()
	n := migNode("g", 2)
	n.Status = api.NodeStatusReady
	if err := st.UpsertNode(1, n); err != nil {
		t.Fatal(err)
	}
	change := &api.NodeMIGChange{ID: "c1", Status: api.MIGChangePending, Layouts: []api.MIGLayout{{GPU: "GPU-g-1", Disable: true}}}
	if err := st.UpdateNodeMIG(2, "g", change, nil); err != nil {
		t.Fatal(err)
	}
	job := testJob("j", 1, 100, 64)
	on := func(gpu string) *api.Allocation {
		a := squatAlloc(job, "g", 100)
		a.AllocatedResources.Tasks["srv"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: migModel, DeviceIDs: []string{gpu}}}
		return a
	}
	snap, err := st.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gpu string
		ok  bool
	}{{"GPU-g-1", false}, {"GPU-g-0", true}} {
		plan := &api.Plan{EvalID: "e", Job: job}
		plan.AppendAlloc(on(c.gpu))
		ok, why, err := evaluateNodePlan(snap, plan, "g", nil)
		if err != nil || ok != c.ok || (!ok && !strings.Contains(why, "MIG")) {
			t.Errorf("plan on %s: ok %v (%q, %v), want %v", c.gpu, ok, why, err, c.ok)
		}
	}
}

// An alloc the plan applier committed but no client started yet (client
// status pending) holds its GPU as much as a running one.
func TestApplyNodeMIGRefusedForPlacedAlloc(t *testing.T) {
	s := newTestServer(t)
	registerNode(t, s, migNode("g", 1))
	job := testJob("squat", 0, 100, 64)
	registerJob(t, s, job)
	stored, _ := s.State().JobByID(nil, api.DefaultNamespace, "squat")
	a := squatAlloc(stored, "g", 100)
	a.AllocatedResources.Tasks["srv"].Devices = []*api.AllocatedDeviceResource{{Vendor: "nvidia", Type: "gpu", Name: migModel, DeviceIDs: []string{"GPU-g-0"}}}
	if _, err := s.core.applyPlanResults(context.Background(), &state.ApplyPlanResultsRequest{Job: stored, AllocsPlaced: []*api.Allocation{a}}); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "the squatting alloc", func(ws memdb.WatchSet) (bool, error) {
		got, err := s.State().AllocByID(ws, a.ID)
		return got != nil, err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.Nodes().ApplyNodeMIG(ctx, &api.NodeMIGApplyRequest{NodeID: "g", Layouts: []api.MIGLayout{migLayout("GPU-g-0", "7g.80gb")}})
	if !errors.Is(err, api.ErrConflict) {
		t.Fatalf("MIG change of a GPU a placed alloc holds: %v, want a conflict", err)
	}
}
