package autoscale

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/drover/drover/api"
)

// Node meta the autoscaler sets on the nodes it makes and reads back.
const (
	// MetaSpot is "true" on a node of spot (preemptible) capacity; jobs
	// with spot = "never" are kept off it, "prefer" ranks it first.
	MetaSpot = api.NodeMetaSpot
	// MetaInstance is the provider's ID of the node's instance.
	MetaInstance = "drover.instance"
)

// Scale-in strategies (Nomad Autoscaler's node_selector_strategy names).
const (
	StrategyEmpty     = "empty"
	StrategyLeastBusy = "least_busy"
)

// ReasonSpot is the reason an interruption drains a node with; task stop
// reasons map "interrupted" to a checkpoint signal.
const ReasonSpot = api.DrainReasonSpot

// Defaults of a policy's optional settings.
const (
	DefaultCooldown     = 2 * time.Minute
	DefaultIdle         = 10 * time.Minute
	DefaultDrainTimeout = 5 * time.Minute
)

// ErrBadPolicy is returned (wrapped) by Policy.Validate.
var ErrBadPolicy = errors.New("invalid autoscale policy")

// Policy is one node pool's autoscaling:
//
//	autoscale "gpu" { min = 0  max = 16  provider = "sim"  cooldown = "2m"
//	  node_shape { gpu_model = "H100"  gpus = 8  cpu = 96000  memory = 393216  spot = true  price = 24.5 }
//	  scale_in { strategy = "empty"  idle = "10m" } }
type Policy struct {
	Pool     string        `json:"Pool"`
	Min      int           `json:"Min"`
	Max      int           `json:"Max"`
	Provider string        `json:"Provider"`
	Shape    Shape         `json:"Shape"`
	Cooldown time.Duration `json:"Cooldown"`
	ScaleIn  ScaleInPolicy `json:"ScaleIn"`
}

// ScaleInPolicy says how nodes are picked for removal.
type ScaleInPolicy struct {
	// Strategy is StrategyEmpty (default) or StrategyLeastBusy.
	Strategy string `json:"Strategy"`
	// Idle is how long a node stays a candidate before it goes.
	Idle time.Duration `json:"Idle"`
	// DrainDeadline bounds the drain of a chosen node (default 5 min).
	DrainDeadline time.Duration `json:"DrainDeadline"`
}

// Shape is what one node of a pool offers and costs.
type Shape struct {
	Datacenter string `json:"Datacenter"`
	// GPUModel and GPUs: the node's nvidia/gpu devices (none when 0).
	GPUModel     string `json:"GPUModel,omitempty"`
	GPUs         int    `json:"GPUs,omitempty"`
	GPUMemoryMiB int    `json:"GPUMemoryMiB,omitempty"`
	// CPU in MHz shares, Cores, MemoryMB and DiskMB.
	CPU      int64 `json:"CPU"`
	Cores    int   `json:"Cores,omitempty"`
	MemoryMB int64 `json:"MemoryMB"`
	DiskMB   int64 `json:"DiskMB,omitempty"`
	// Spot capacity may be interrupted by its provider.
	Spot bool `json:"Spot,omitempty"`
	// Price per node-hour, in any currency (reports only).
	Price float64 `json:"Price,omitempty"`
	// Drivers the node runs (default exec and raw_exec).
	Drivers []string          `json:"Drivers,omitempty"`
	Meta    map[string]string `json:"Meta,omitempty"`
}

// Validate checks a policy and fills its defaults.
func (p *Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: pool %q: %s", ErrBadPolicy, p.Pool, fmt.Sprintf(format, args...))
	}
	switch {
	case p.Pool == "":
		return bad("no node pool")
	case p.Min < 0 || p.Max < p.Min:
		return bad("min %d and max %d: want 0 <= min <= max", p.Min, p.Max)
	case p.Max > 10000:
		return bad("max %d over 10000", p.Max)
	case p.Provider == "":
		return bad("no provider")
	case p.Shape.CPU <= 0 || p.Shape.MemoryMB <= 0:
		return bad("node_shape needs cpu and memory")
	case p.Shape.GPUs < 0 || p.Shape.GPUs > 64:
		return bad("node_shape gpus %d: want 0 to 64", p.Shape.GPUs)
	case p.Shape.Price < 0:
		return bad("negative price")
	case p.Cooldown < 0 || p.ScaleIn.Idle < 0 || p.ScaleIn.DrainDeadline < 0:
		return bad("negative duration")
	}
	switch p.ScaleIn.Strategy {
	case "":
		p.ScaleIn.Strategy = StrategyEmpty
	case StrategyEmpty, StrategyLeastBusy:
	default:
		return bad("scale_in strategy %q: want %q or %q", p.ScaleIn.Strategy, StrategyEmpty, StrategyLeastBusy)
	}
	if p.Cooldown == 0 {
		p.Cooldown = DefaultCooldown
	}
	if p.ScaleIn.Idle == 0 {
		p.ScaleIn.Idle = DefaultIdle
	}
	if p.ScaleIn.DrainDeadline == 0 {
		p.ScaleIn.DrainDeadline = DefaultDrainTimeout
	}
	if p.Shape.Datacenter == "" {
		p.Shape.Datacenter = "dc1"
	}
	return nil
}

// GPUHourPrice is the shape's price per GPU-hour (0 without GPUs).
func (s Shape) GPUHourPrice() float64 {
	if s.GPUs == 0 {
		return 0
	}
	return s.Price / float64(s.GPUs)
}

// Node is the node a new instance of the shape registers as, in pool:
// ready, with the shape's resources, devices, drivers and meta. The
// scale-out counterfactual schedules onto such nodes; the sim provider
// registers them.
func (s Shape) Node(id, name, pool string) *api.Node {
	drivers := s.Drivers
	if len(drivers) == 0 {
		drivers = []string{"exec", "raw_exec"}
	}
	cores := s.Cores
	if cores == 0 {
		cores = max(1, min(int(s.CPU/1000), 1024))
	}
	disk := s.DiskMB
	if disk == 0 {
		disk = 100 << 10
	}
	n := &api.Node{
		ID: id, SecretID: "", Datacenter: s.Datacenter, Name: name, NodePool: pool,
		ComputedClass: "autoscale-" + pool,
		Attributes:    map[string]string{"kernel.name": "linux", "unique.hostname": name},
		Meta:          maps.Clone(s.Meta),
		NodeResources: &api.NodeResources{
			Cpu: api.NodeCpuResources{CpuShares: s.CPU, TotalCpuCores: uint16(cores)}, Memory: api.NodeMemoryResources{MemoryMB: s.MemoryMB},
			Disk: api.NodeDiskResources{DiskMB: disk}, MinDynamicPort: 20000, MaxDynamicPort: 32000,
		},
		Drivers: map[string]*api.DriverInfo{}, Status: api.NodeStatusReady, SchedulingEligibility: api.NodeSchedulingEligible,
	}
	if n.Meta == nil {
		n.Meta = map[string]string{}
	}
	n.Meta[MetaInstance] = name
	if s.Spot {
		n.Meta[MetaSpot] = "true"
		n.ComputedClass += "-spot" // the scheduler caches feasibility by class
	}
	for _, d := range drivers {
		n.Attributes["driver."+d] = "1"
		n.Drivers[d] = &api.DriverInfo{Detected: true, Healthy: true}
	}
	if s.GPUs > 0 {
		model := s.GPUModel
		if model == "" {
			model = "gpu"
		}
		d := &api.NodeDeviceResource{Vendor: "nvidia", Type: "gpu", Name: model}
		if s.GPUMemoryMiB > 0 {
			d.Attributes = map[string]*api.Attribute{"memory": {IntVal: ptr(int64(s.GPUMemoryMiB)), Unit: "MiB"}}
		}
		for g := range s.GPUs {
			d.Instances = append(d.Instances, &api.NodeDevice{ID: fmt.Sprintf("%s-gpu%d", name, g), Healthy: true})
		}
		n.NodeResources.Devices = []*api.NodeDeviceResource{d}
	}
	return n
}

func ptr[T any](v T) *T { return &v }
