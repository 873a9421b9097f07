package client_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/agent/fingerprint/nvidia"
	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/http/serverstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/mock"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/server"
)

// TestMIGApplyThroughClient runs a MIG layout change end to end: a real
// server behind the HTTP API, a client with simulated DGX H100 GPUs. A
// job holds one GPU: its MIG change is refused (409). An idle GPU's is
// taken; the client applies it through the simulated NVML and registers
// the new MIG devices with their profiles; a job asking for the new MIG
// model is placed on that instance, and the first job runs on.
func TestMIGApplyThroughClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev server")
	}
	log := slog.New(slog.DiscardHandler)
	s := testcluster.Server(t, server.Config{Logger: log, NodeName: "srv"})
	lazy := &lazyClient{}
	h, err := agenthttp.New(agenthttp.Config{Server: serverstate.Bind(s), Client: lazy, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h.Handler())
	t.Cleanup(ts.Close)
	c, err := client.New(&client.Config{DataDir: t.TempDir(), Servers: []string{ts.URL}, NodeName: "gpu-1",
		HTTPAddr: ts.Listener.Addr().String(), DevMode: true, Logger: log,
		Drivers: map[string]drivers.Factory{mock.Name: mock.New},
		Devices: func(nodeID string) (client.DeviceSource, error) {
			sim, err := nvidia.NewPureSim(nvidia.SimConfig{Shape: "dgxh100", NodeID: nodeID})
			if err != nil {
				return nil, err
			}
			return nvidia.New(nvidia.Config{Library: sim, Logger: log})
		}})
	if err != nil {
		t.Fatal(err)
	}
	lazy.c.Store(c)
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Shutdown(ctx)
	})
	cl := api.NewClient(ts.URL)
	ctx := context.Background()
	var node *api.Node
	testcluster.WaitState(t, s, 20*time.Second, "node ready with its GPUs", func() bool {
		n, _, err := cl.Node(ctx, c.NodeID(), nil)
		node = n
		return err == nil && n.Status == api.NodeStatusReady && n.Attributes["driver.mock_driver"] == "1" && len(n.GPUs) == 8
	})

	run := func(id, device string) *api.Allocation {
		t.Helper()
		job := &api.Job{ID: id, Name: id, Type: api.JobTypeService, Datacenters: []string{"*"},
			TaskGroups: []*api.TaskGroup{{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: mock.Name,
				Config:    map[string]any{"run_for": "1h"},
				Resources: &api.Resources{CPU: 100, MemoryMB: 64, Devices: []*api.RequestedDevice{{Name: device, Count: 1}}}}}}}}
		if _, err := cl.RegisterJob(ctx, &api.JobRegisterRequest{Job: job}, nil); err != nil {
			t.Fatalf("register %s: %v", id, err)
		}
		var allocID string
		testcluster.WaitState(t, s, 20*time.Second, id+" running", func() bool {
			as, _, err := cl.JobAllocations(ctx, id, nil)
			if err != nil || len(as) != 1 {
				return false
			}
			allocID = as[0].ID
			return as[0].ClientStatus == api.AllocClientStatusRunning
		})
		a, _, err := cl.Allocation(ctx, allocID, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	heldBy := func(a *api.Allocation) string { return a.AllocatedResources.Tasks["t"].Devices[0].DeviceIDs[0] }

	hold := run("hold", "nvidia/gpu")
	held := heldBy(hold)
	_, err = cl.ApplyNodeMIG(ctx, node.ID, []api.MIGLayout{{GPU: held, Profiles: []string{"7g.80gb"}}})
	if !errors.Is(err, api.ErrConflict) || api.AsError(err).Status != 409 {
		t.Fatalf("MIG change of the GPU job hold runs on: %v, want 409 conflict", err)
	}

	idle := node.GPUs[0].UUID
	if idle == held {
		idle = node.GPUs[1].UUID
	}
	resp, err := cl.ApplyNodeMIG(ctx, node.ID, []api.MIGLayout{{GPU: idle, Profiles: []string{"1g.10gb", "3g.40gb", "2g.20gb"}}})
	if err != nil {
		t.Fatalf("MIG change of idle GPU %s: %v", idle, err)
	}
	testcluster.WaitState(t, s, 20*time.Second, "the client's report of the change", func() bool {
		n, _, err := cl.Node(ctx, node.ID, nil)
		node = n
		return err == nil && n.MIGChange != nil && n.MIGChange.ID == resp.ChangeID && !n.MIGChange.Pending()
	})
	if node.MIGChange.Status != api.MIGChangeApplied {
		t.Fatalf("change %+v, want applied", node.MIGChange)
	}
	g := node.GPU(idle)
	var profiles []string
	for _, m := range g.MIG {
		profiles = append(profiles, m.Profile)
	}
	if !g.MIGEnabled || !slices.Equal(profiles, []string{"3g.40gb", "2g.20gb", "1g.10gb"}) {
		t.Fatalf("GPU %s after the change: MIG %v %v, want 3g.40gb, 2g.20gb, 1g.10gb", idle, g.MIGEnabled, profiles)
	}
	devs := map[string]*api.NodeDeviceResource{}
	for _, grp := range node.NodeResources.Devices {
		for _, in := range grp.Instances {
			if !in.Healthy {
				t.Errorf("device %s unhealthy after the change: %s", in.ID, in.HealthDescription)
			}
			devs[in.ID] = grp
		}
	}
	if devs[idle] != nil {
		t.Errorf("GPU %s is still a whole device in MIG mode", idle)
	}
	for _, m := range g.MIG {
		if devs[m.ID] == nil {
			t.Errorf("MIG instance %s (%s) is not a device of the node", m.ID, m.Profile)
		}
	}

	small := run("small", devs[g.MIG[0].ID].ID()) // the 3g.40gb instance's model
	if got := heldBy(small); got != g.MIG[0].ID {
		t.Errorf("job small got %s, want the 3g.40gb instance %s", got, g.MIG[0].ID)
	}
	if a, _, err := cl.Allocation(ctx, hold.ID, nil); err != nil || a.ClientStatus != api.AllocClientStatusRunning {
		t.Errorf("job hold after the change: %v %v, want still running", a.ClientStatus, err)
	}
}
