package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/agent/config"
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
