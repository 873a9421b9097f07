package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/agent/fingerprint"
	"github.com/drover/drover/agent/fingerprint/nvidia"
	"github.com/drover/drover/api"
)

// A -dev-gpus node gets the simulator's topology unless it has its own.
func TestNodeMetaSimTopology(t *testing.T) {
	cfg := config.Dev()
	cfg.Name, cfg.Client.DevGPUs = "gpu-5", "dgxh100"
	cfg.Client.Meta["team"] = "ml"
	want := map[string]string{"team": "ml", "topology.rack": "rack-1", "topology.block": "block-0"}
	if diff := cmp.Diff(want, nodeMeta(cfg)); diff != "" {
		t.Errorf("simulated node meta (-want +got):\n%s", diff)
	}
	cfg.Client.Topology["rack"] = "mine"
	want = map[string]string{"team": "ml", "topology.rack": "mine"}
	if diff := cmp.Diff(want, nodeMeta(cfg)); diff != "" {
		t.Errorf("configured topology (-want +got):\n%s", diff)
	}
	plain := config.Dev()
	plain.Name = "gpu-5"
	if diff := cmp.Diff(map[string]string{}, nodeMeta(plain)); diff != "" {
		t.Errorf("no -dev-gpus (-want +got):\n%s", diff)
	}
}

// A -dev-gpus node advertises its simulated DGX server's CPU and memory;
// every shape has them.
func TestSimHostResources(t *testing.T) {
	for _, name := range nvidia.ShapeNames() {
		if _, ok := simHosts[name]; !ok {
			t.Errorf("shape %s has no simulated host CPU and memory", name)
		}
	}
	if simHostResources("") != nil {
		t.Error("no -dev-gpus: want the host's resources as they are")
	}
	h := &fingerprint.Host{Attributes: map[string]string{}, Resources: &api.NodeResources{}}
	h.Resources.Cpu.TotalCpuCores = 2
	simHostResources("dgxh100:mig")(h)
	if c, m := h.Resources.Cpu.CpuShares, h.Resources.Memory.MemoryMB; c != 224000 || m != 2<<20 || h.Resources.Cpu.TotalCpuCores != 2 {
		t.Errorf("dgxh100: cpu %d MHz, memory %d MB, %d cores; want 224000, %d and the host's 2 cores", c, m, h.Resources.Cpu.TotalCpuCores, 2<<20)
	}
	if h.Attributes["cpu.totalcompute"] != "224000" {
		t.Errorf("cpu.totalcompute %q, want 224000", h.Attributes["cpu.totalcompute"])
	}
}
