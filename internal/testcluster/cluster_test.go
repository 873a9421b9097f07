package testcluster_test

import (
	"context"
	"testing"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/testcluster"
	"github.com/drover/drover/server"
)

// A job registered on a node that fits it: once the broker is idle its
// plan is applied, and WaitState wakes on the allocs' commit.
func TestServerSignals(t *testing.T) {
	s := testcluster.Server(t, server.Config{})
	if got := testcluster.Leader(t, testcluster.Timeout, []*server.Server{s}); got != 0 {
		t.Fatalf("Leader = %d, want 0", got)
	}
	ctx := context.Background()
	node := &api.Node{ID: "n1", SecretID: "s1", Datacenter: "dc1", Name: "n1", NodePool: api.DefaultNodePool,
		Attributes: map[string]string{"kernel.name": "linux", "driver.exec": "1"},
		NodeResources: &api.NodeResources{Cpu: api.NodeCpuResources{CpuShares: 4000, TotalCpuCores: 4},
			Memory: api.NodeMemoryResources{MemoryMB: 8192}, Disk: api.NodeDiskResources{DiskMB: 10000},
			MinDynamicPort: 20000, MaxDynamicPort: 32000},
		Drivers: map[string]*api.DriverInfo{"exec": {Detected: true, Healthy: true}}}
	if _, err := s.Nodes().RegisterNode(ctx, node, api.NodeIntro{}); err != nil {
		t.Fatal(err)
	}
	job := &api.Job{ID: "web", Type: api.JobTypeService, Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: 2, Tasks: []*api.Task{{Name: "t", Driver: "exec",
			Config: map[string]any{"command": "/bin/true"}, Resources: &api.Resources{CPU: 100, MemoryMB: 64}}}}}}
	if _, err := s.Jobs().RegisterJob(ctx, &api.JobRegisterRequest{Job: job}); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitIdle(t, s)
	allocs, err := s.State().AllocsByJob(nil, api.DefaultNamespace, "web", true)
	if err != nil || len(allocs) != 2 {
		t.Fatalf("after the broker went idle: %d allocs (%v), want 2", len(allocs), err)
	}
	if _, err := s.Jobs().DeregisterJob(ctx, api.DefaultNamespace, "web", false); err != nil {
		t.Fatal(err)
	}
	testcluster.WaitState(t, s, testcluster.Timeout, "both allocs stopped", func() bool {
		allocs, _ := s.State().AllocsByJob(nil, api.DefaultNamespace, "web", true)
		for _, a := range allocs {
			if a.DesiredStatus != api.AllocDesiredStatusStop {
				return false
			}
		}
		return len(allocs) == 2
	})
}

// Agent returns once the dev agent's server is ready and its client
// registered: the node is in the server's state then, no wait needed.
func TestAgentWaitsForItsRoles(t *testing.T) {
	cfg := config.Dev()
	cfg.Ports.HTTP = 0
	cfg.Name = "testcluster"
	a := testcluster.Agent(t, cfg)
	nodes, err := a.Server().State().Nodes(nil, "")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes once the agent is ready: %d (%v), want its own", len(nodes), err)
	}
}
