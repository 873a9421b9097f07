package nvidia

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Shape describes a simulated DGX server. Both simulators (go-nvml's mock
// servers in cgo builds, the pure-Go one otherwise) use it for what the
// mocks lack: bus IDs, NUMA nodes, NVLink topology and stable UUIDs.
type Shape struct {
	Name       string // dgxa100 ...
	Model      string // as NVML names the GPU
	MemoryMiB  uint64
	CCMajor    int
	CCMinor    int
	NVLinks    int // per GPU, all to NVSwitches
	MIGProfile string
	MIGMemMiB  uint64
	MIGCount   int // 1-slice instances per GPU in MIG mode
	Driver     string
	CUDA       int // NVML's encoding: 12040 = 12.4
}

// Shapes are the DGX servers -dev-gpus can simulate (8 GPUs each).
var Shapes = map[string]Shape{
	"dgxa100": {Name: "dgxa100", Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, CCMajor: 8, CCMinor: 0, NVLinks: 12, MIGProfile: "1g.5gb", MIGMemMiB: 4864, MIGCount: 7, Driver: "550.54.15", CUDA: 12040},
	"dgxh100": {Name: "dgxh100", Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, CCMajor: 9, CCMinor: 0, NVLinks: 18, MIGProfile: "1g.10gb", MIGMemMiB: 10240, MIGCount: 7, Driver: "550.54.15", CUDA: 12040},
	"dgxh200": {Name: "dgxh200", Model: "NVIDIA H200 141GB HBM3e", MemoryMiB: 144384, CCMajor: 9, CCMinor: 0, NVLinks: 18, MIGProfile: "1g.18gb", MIGMemMiB: 18432, MIGCount: 7, Driver: "550.54.15", CUDA: 12040},
	"dgxb200": {Name: "dgxb200", Model: "NVIDIA B200 180GB HBM3e", MemoryMiB: 184320, CCMajor: 10, CCMinor: 0, NVLinks: 18, MIGProfile: "1g.23gb", MIGMemMiB: 23552, MIGCount: 7, Driver: "560.28.03", CUDA: 12060},
}

// simBusIDs are the PCI addresses of the 8 GPUs of a DGX H100.
var simBusIDs = [8]string{"00000000:18:00.0", "00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0",
	"00000000:9A:00.0", "00000000:AB:00.0", "00000000:BA:00.0", "00000000:DB:00.0"}

// simNUMA: GPUs 0-3 hang off CPU socket 0, 4-7 off socket 1.
func simNUMA(i int) int { return i / 4 }

// simAncestor: GPU pairs (0,1), (2,3), ... share a PCIe switch; the rest
// share the NUMA node's host bridges or cross the inter-socket link.
func simAncestor(a, b int) Topology {
	switch {
	case a == b:
		return TopoInternal
	case a/2 == b/2:
		return TopoSingle
	case simNUMA(a) == simNUMA(b):
		return TopoNode
	default:
		return TopoSystem
	}
}

// SimConfig selects a simulated server.
type SimConfig struct {
	Shape string // a key of Shapes
	// NodeID seeds the UUIDs, so they stay the same across restarts.
	NodeID string
	// MIG puts every GPU in MIG mode with Shape.MIGCount instances.
	MIG bool
	// Minors, when set, are the GPUs' device minor numbers by NVML index
	// (default: the index). NVML orders GPUs by PCI address and the
	// driver numbers them as it probes them, so on a host the two orders
	// can differ.
	Minors *[8]int
}

// minor is the device minor of the simulated GPU at NVML index i.
func (c SimConfig) minor(i int) int {
	if c.Minors != nil {
		return c.Minors[i]
	}
	return i
}

// ParseSimSpec parses the -dev-gpus value: a shape name, optionally with
// ":mig" ("dgxa100:mig").
func ParseSimSpec(spec string) (SimConfig, error) {
	name, opt, _ := strings.Cut(strings.ToLower(strings.TrimSpace(spec)), ":")
	if _, ok := Shapes[name]; !ok {
		return SimConfig{}, fmt.Errorf("unknown simulated GPU server %q: want one of %s (optionally with :mig)",
			spec, strings.Join(ShapeNames(), ", "))
	}
	switch opt {
	case "":
		return SimConfig{Shape: name}, nil
	case "mig":
		return SimConfig{Shape: name, MIG: true}, nil
	}
	return SimConfig{}, fmt.Errorf("simulated GPU server %q: unknown option %q (want :mig)", spec, opt)
}

// ShapeNames lists the simulated servers, sorted.
func ShapeNames() []string {
	names := make([]string, 0, len(Shapes))
	for n := range Shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// simUUID derives a UUID from the node ID and a device path.
func simUUID(prefix, nodeID string, parts ...int) string {
	s := nodeID
	for _, p := range parts {
		s += fmt.Sprintf("/%d", p)
	}
	h := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// events is the injectable event queue both simulators share.
type events struct {
	once sync.Once
	ch   chan Event
}

func (e *events) queue() chan Event {
	e.once.Do(func() { e.ch = make(chan Event, 64) })
	return e.ch
}

func (e *events) wait(ctx context.Context, timeout time.Duration) (Event, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case ev := <-e.queue():
		return ev, nil
	case <-t.C:
		return Event{}, ErrTimeout
	case <-ctx.Done():
		return Event{}, ErrTimeout
	}
}
