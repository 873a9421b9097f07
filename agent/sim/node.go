package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/drover/drover/agent/fingerprint/nvidia"
	"github.com/drover/drover/api"
)

// Simulated hardware defaults: a two-socket, 64-core, 512 GiB server.
const (
	DefaultCores    = 64
	DefaultCoreMHz  = 2600
	DefaultMemoryMB = 512 * 1024
	DefaultDiskMB   = 2 * 1024 * 1024
)

// simDrivers are the task drivers every simulated node reports healthy.
var simDrivers = []string{"exec", "raw_exec", "docker", "mock"}

// nodeID is a stable UUID-shaped ID for simulated node i of a run seeded
// with seed, so a restarted simulator re-registers the same nodes.
func nodeID(seed uint64, i int, salt uint64) string {
	r := rand.New(rand.NewPCG(seed, uint64(i)*2654435761+salt))
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", uint32(a>>32), uint16(a>>16), uint16(a)&0xfff,
		uint16(b>>48)&0x3fff|0x8000, b&0xffffffffffff)
}

// buildNode is simulated node i: name "<prefix><i>", datacenters
// round-robin, rack and block as a DGX SuperPOD lays them out
// (nvidia.SimTopology), and the GPUs of cfg.GPUs when set.
func buildNode(cfg *Config, i int) (*api.Node, error) {
	name := cfg.NamePrefix + strconv.Itoa(i)
	id := nodeID(cfg.Seed, i, 1)
	cores := cfg.Cores
	mhz := cfg.CoreMHz
	attrs := map[string]string{
		"cpu.arch": "amd64", "arch": "amd64", "kernel.name": "linux", "kernel.arch": "x86_64",
		"kernel.version": "6.8.0-sim", "os.name": "ubuntu", "os.version": "24.04",
		"os.pretty_name":    "Ubuntu 24.04 LTS (simulated)",
		"cpu.numcores":      strconv.Itoa(cores),
		"cpu.frequency":     strconv.Itoa(mhz),
		"cpu.totalcompute":  strconv.Itoa(cores * mhz),
		"cpu.modelname":     "Simulated EPYC",
		"memory.totalbytes": strconv.FormatInt(cfg.MemoryMB<<20, 10),
		"unique.hostname":   name, "unique.name": name,
		"unique.network.ip-address": simIP(i),
		"unique.cgroup.version":     "v2", "unique.cgroup.mountpoint": "/sys/fs/cgroup",
		"unique.storage.volume": "/dev/sim0", "unique.storage.bytestotal": strconv.FormatInt(cfg.DiskMB<<20, 10),
		"unique.storage.bytesfree": strconv.FormatInt(cfg.DiskMB<<20, 10),
		"drover.sim":               "true",
	}
	drivers := make(map[string]*api.DriverInfo, len(simDrivers))
	for _, d := range simDrivers {
		drivers[d] = &api.DriverInfo{Detected: true, Healthy: true, HealthDescription: "Healthy",
			Attributes: map[string]string{"driver." + d: "1"}}
		attrs["driver."+d] = "1"
	}
	res := &api.NodeResources{
		Cpu:            api.NodeCpuResources{CpuShares: int64(cores * mhz), TotalCpuCores: uint16(cores)},
		Memory:         api.NodeMemoryResources{MemoryMB: cfg.MemoryMB},
		Disk:           api.NodeDiskResources{DiskMB: cfg.DiskMB},
		Networks:       []*api.NetworkResource{{Mode: "host", Device: "eth0", IP: simIP(i), CIDR: simIP(i) + "/32"}},
		MinDynamicPort: api.DefaultMinDynamicPort, MaxDynamicPort: api.DefaultMaxDynamicPort,
	}
	half := uint16(cores / 2)
	for c := range uint16(cores) {
		res.Cpu.ReservableCpuCores = append(res.Cpu.ReservableCpuCores, c)
	}
	if half > 0 {
		res.Cpu.NUMA = []api.NodeNUMANode{{ID: 0, Cores: res.Cpu.ReservableCpuCores[:half]},
			{ID: 1, Cores: res.Cpu.ReservableCpuCores[half:]}}
	}
	meta := map[string]string{}
	for level, domain := range nvidia.SimTopology(name) {
		meta["topology."+level] = domain
	}
	for k, v := range cfg.Meta {
		meta[k] = v
	}
	if cfg.GPUs != "" {
		sc, err := nvidia.ParseSimSpec(cfg.GPUs)
		if err != nil {
			return nil, fmt.Errorf("sim node %s: %w", name, err)
		}
		sc.NodeID = id
		lib, err := nvidia.NewPureSim(sc)
		if err != nil {
			return nil, fmt.Errorf("sim node %s GPUs: %w", name, err)
		}
		sys, err := lib.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("sim node %s GPU snapshot: %w", name, err)
		}
		res.Devices = nvidia.BuildDevices(sys, nil)
		attrs["driver.nvidia"] = "1"
		attrs["nvidia.driver_version"] = sys.DriverVersion
	}
	dcs := cfg.Datacenters
	return &api.Node{
		ID: id, SecretID: nodeID(cfg.Seed, i, 2), Datacenter: dcs[i%len(dcs)], Name: name,
		HTTPAddr: simIP(i) + ":4646", Attributes: attrs, NodeResources: res, Meta: meta,
		NodeClass: cfg.NodeClass, NodePool: cfg.NodePool, SchedulingEligibility: api.NodeSchedulingEligible,
		Status: api.NodeStatusReady, Drivers: drivers, Version: "sim",
	}, nil
}

// simIP is a made-up address in 10.0.0.0/8 for node i.
func simIP(i int) string {
	return fmt.Sprintf("10.%d.%d.%d", (i>>16)&0xff, (i>>8)&0xff, i&0xff)
}
