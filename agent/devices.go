package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"

	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/agent/fingerprint/nvidia"
)

// The NVIDIA fingerprinter changes MIG layouts for the client.
var _ client.MIGApplier = (*nvidia.Fingerprinter)(nil)

// deviceSource returns the client's device fingerprinter factory:
// simulated DGX GPUs for -dev-gpus (UUIDs derived from the node ID), else
// the host's NVML. A host without NVML has no GPU devices; that is one
// debug line, not an error.
func deviceSource(spec string, log *slog.Logger) (func(nodeID string) (client.DeviceSource, error), error) {
	var sim nvidia.SimConfig
	if spec != "" {
		s, err := nvidia.ParseSimSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("-dev-gpus: %w", err)
		}
		sim = s
	}
	return func(nodeID string) (client.DeviceSource, error) {
		var lib nvidia.Library
		var err error
		if spec != "" {
			sim.NodeID = nodeID
			lib, err = nvidia.Simulate(sim)
			if err == nil {
				log.Info("simulating GPUs", "server", spec)
			}
		} else {
			lib, err = nvidia.Open()
			if errors.Is(err, nvidia.ErrNoNVML) {
				log.Debug("no NVIDIA GPUs", "reason", err)
				return nil, nil
			}
		}
		if err != nil {
			return nil, err
		}
		f, err := nvidia.New(nvidia.Config{Library: lib, Logger: log})
		if err != nil {
			lib.Close()
			return nil, err
		}
		return f, nil
	}, nil
}

// nodeMeta is the client's node meta: the configured meta and topology
// levels (config.Client.NodeMeta) and, for a -dev-gpus node with no
// topology configured, the simulator's (nvidia.SimTopology of the node
// name, or of the hostname when no name is set).
func nodeMeta(cfg *config.Config) map[string]string {
	meta := cfg.Client.NodeMeta()
	if cfg.Client.DevGPUs == "" || cfg.Client.HasTopology() {
		return meta
	}
	name := cfg.Name
	if name == "" {
		name, _ = os.Hostname()
	}
	for level, domain := range nvidia.SimTopology(name) {
		meta[api.TopologyMetaPrefix+level] = domain
	}
	return meta
}
