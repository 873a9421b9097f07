package api

// Resources a task asks for. CPU is in MHz, memory and disk in MB.
type Resources struct {
	CPU         int                `json:"CPU"`
	Cores       int                `json:"Cores,omitempty"`
	MemoryMB    int                `json:"MemoryMB"`
	MemoryMaxMB int                `json:"MemoryMaxMB,omitempty"`
	DiskMB      int                `json:"DiskMB,omitempty"`
	Networks    []*NetworkResource `json:"Networks,omitempty"`
	Devices     []*RequestedDevice `json:"Devices,omitempty"`
}

// Nomad's documented defaults.
const (
	DefaultCPU      = 100
	DefaultMemoryMB = 300
	DefaultDiskMB   = 300
)

// DefaultResources returns cpu 100 MHz, memory 300 MB.
func DefaultResources() *Resources { return &Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB} }

// RequestedDevice asks for Count instances of a device such as
// "nvidia/gpu" (vendor/type), "gpu" (type) or "nvidia/gpu/H100"
// (vendor/type/model, the model by name or short name; MIG instances by
// profile, "nvidia/gpu/1g.10gb": see NodeDeviceResource.Matches).
type RequestedDevice struct {
	Name        string        `json:"Name"`
	Count       uint64        `json:"Count"`
	Constraints []*Constraint `json:"Constraints,omitempty"`
	Affinities  []*Affinity   `json:"Affinities,omitempty"`
	// Share, when set, asks that share of each of Count instances
	// (share.go) instead of whole ones.
	Share *DeviceShare `json:"Share,omitempty"`
}

// AttrBridgeNetwork is the node attribute of clients that can build
// bridge networks (the CNI plugins are installed and the agent is root).
const AttrBridgeNetwork = "plugins.cni.bridge"

// NetworkResource is a network ask (in a job) or an assignment (in an alloc).
type NetworkResource struct {
	Mode          string     `json:"Mode,omitempty"` // host, bridge, none
	Device        string     `json:"Device,omitempty"`
	CIDR          string     `json:"CIDR,omitempty"`
	IP            string     `json:"IP,omitempty"`
	Hostname      string     `json:"Hostname,omitempty"`
	MBits         int        `json:"MBits,omitempty"`
	DNS           *DNSConfig `json:"DNS,omitempty"`
	ReservedPorts []Port     `json:"ReservedPorts,omitempty"`
	DynamicPorts  []Port     `json:"DynamicPorts,omitempty"`
}

// DNSConfig for a network.
type DNSConfig struct {
	Servers  []string `json:"Servers,omitempty"`
	Searches []string `json:"Searches,omitempty"`
	Options  []string `json:"Options,omitempty"`
}

// Port is a labelled static (ReservedPorts) or dynamic port. To is the
// port inside the task's network namespace (0 = same as Value).
type Port struct {
	Label       string `json:"Label"`
	Value       int    `json:"Value"`
	To          int    `json:"To,omitempty"`
	HostNetwork string `json:"HostNetwork,omitempty"`
}

// AllocatedPort is a port assigned to an allocation.
type AllocatedPort struct {
	Label  string `json:"Label"`
	Value  int    `json:"Value"`
	To     int    `json:"To"`
	HostIP string `json:"HostIP"`
}

// Default dynamic port range, as Nomad.
const (
	DefaultMinDynamicPort = 20000
	DefaultMaxDynamicPort = 32000
)
