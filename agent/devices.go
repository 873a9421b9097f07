package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"

	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/agent/fingerprint"
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
		return gpuSource{f}, nil
	}, nil
}

// gpuSource is the NVIDIA fingerprinter as the client's device source,
// with its GPU usage readings in the client's terms.
type gpuSource struct{ *nvidia.Fingerprinter }

var _ client.GPUUsageReader = gpuSource{}

func (g gpuSource) GPUUsage(ids []string) (map[string]client.GPUSample, bool, error) {
	u, sim, err := g.Fingerprinter.GPUUsage(ids)
	if err != nil || sim {
		return nil, sim, err
	}
	out := make(map[string]client.GPUSample, len(u))
	for id, x := range u {
		out[id] = client.GPUSample{UtilPercent: x.UtilPercent, MemoryUsedMiB: x.MemoryUsedMiB}
	}
	return out, false, nil
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

// simHost is the CPU and memory of a simulated DGX server (NVIDIA's DGX
// data sheets: two CPU sockets, base clock).
type simHost struct {
	cores, mhz int
	memoryMB   int64
}

var simHosts = map[string]simHost{
	"dgxa100": {cores: 128, mhz: 2250, memoryMB: 1 << 20}, // 2 x AMD EPYC 7742, 1 TB
	"dgxh100": {cores: 112, mhz: 2000, memoryMB: 2 << 20}, // 2 x Xeon Platinum 8480C, 2 TB
	"dgxh200": {cores: 112, mhz: 2000, memoryMB: 2 << 20}, // as the DGX H100
	"dgxb200": {cores: 112, mhz: 2100, memoryMB: 2 << 20}, // 2 x Xeon Platinum 8570, 2 TB
}

// simHostResources returns, for -dev-gpus, the client's host adjustment:
// the node advertises the simulated DGX server's CPU (cores x base clock,
// in MHz) and memory, so that jobs sized for one (examples/gang-torch.hcl
// asks 16,000 MHz and 64 GiB per member) place on a laptop. The cores a
// task may reserve (resources { cores }) stay the host's: those are real
// cpusets. Nil without -dev-gpus.
func simHostResources(spec string) func(h *fingerprint.Host) {
	if spec == "" {
		return nil
	}
	sim, err := nvidia.ParseSimSpec(spec)
	if err != nil {
		return nil // deviceSource reports it
	}
	sh, ok := simHosts[sim.Shape]
	if !ok {
		return nil
	}
	return func(h *fingerprint.Host) {
		total := sh.cores * sh.mhz
		h.Resources.Cpu.CpuShares = int64(total)
		h.Resources.Memory.MemoryMB = sh.memoryMB
		h.Attributes["cpu.totalcompute"] = strconv.Itoa(total)
		h.Attributes["memory.totalbytes"] = strconv.FormatInt(sh.memoryMB<<20, 10)
	}
}
