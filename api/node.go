package api

import (
	"fmt"
	"time"
)

// Node statuses.
const (
	NodeStatusInit         = "initializing"
	NodeStatusReady        = "ready"
	NodeStatusDown         = "down"
	NodeStatusDisconnected = "disconnected"
)

// Scheduling eligibility.
const (
	NodeSchedulingEligible   = "eligible"
	NodeSchedulingIneligible = "ineligible"
)

// Node is a client machine that runs allocations.
type Node struct {
	ID                    string                 `json:"ID"`
	SecretID              string                 `json:"SecretID,omitempty"`
	Datacenter            string                 `json:"Datacenter"`
	Name                  string                 `json:"Name"`
	HTTPAddr              string                 `json:"HTTPAddr"`
	TLSEnabled            bool                   `json:"TLSEnabled"`
	Attributes            map[string]string      `json:"Attributes"`
	NodeResources         *NodeResources         `json:"NodeResources"`
	ReservedResources     *NodeReservedResources `json:"ReservedResources,omitempty"`
	Links                 map[string]string      `json:"Links,omitempty"`
	Meta                  map[string]string      `json:"Meta,omitempty"`
	NodeClass             string                 `json:"NodeClass,omitempty"`
	NodePool              string                 `json:"NodePool"`
	ComputedClass         string                 `json:"ComputedClass,omitempty"`
	Drain                 bool                   `json:"Drain"`
	DrainStrategy         *DrainStrategy         `json:"DrainStrategy,omitempty"`
	SchedulingEligibility string                 `json:"SchedulingEligibility"`
	Status                string                 `json:"Status"`
	StatusDescription     string                 `json:"StatusDescription,omitempty"`
	StatusUpdatedAt       int64                  `json:"StatusUpdatedAt"`
	Events                []*NodeEvent           `json:"Events,omitempty"`
	Drivers               map[string]*DriverInfo `json:"Drivers"`
	// HostVolumes are the host volumes the client offers, by name.
	HostVolumes map[string]*ClientHostVolumeConfig `json:"HostVolumes,omitempty"`
	// GPUs are the node's physical GPUs as the client fingerprinted them,
	// and MIGChange the last MIG layout change asked of them (mig.go).
	GPUs        []*NodeGPU     `json:"GPUs,omitempty"`
	MIGChange   *NodeMIGChange `json:"MIGChange,omitempty"`
	LastDrain   *DrainMetadata `json:"LastDrain,omitempty"`
	Version     string         `json:"Version,omitempty"`
	CreateIndex uint64         `json:"CreateIndex"`
	ModifyIndex uint64         `json:"ModifyIndex"`
}

// Ready reports whether the node can take new work.
func (n *Node) Ready() bool {
	return n.Status == NodeStatusReady && !n.Drain && n.SchedulingEligibility != NodeSchedulingIneligible
}

// Copy returns a deep copy.
func (n *Node) Copy() *Node {
	if n == nil {
		return nil
	}
	return deepCopy(n)
}

// NodeResources is what the node fingerprinted.
type NodeResources struct {
	Cpu            NodeCpuResources      `json:"Cpu"`
	Memory         NodeMemoryResources   `json:"Memory"`
	Disk           NodeDiskResources     `json:"Disk"`
	Networks       []*NetworkResource    `json:"Networks,omitempty"`
	Devices        []*NodeDeviceResource `json:"Devices,omitempty"`
	MinDynamicPort int                   `json:"MinDynamicPort"`
	MaxDynamicPort int                   `json:"MaxDynamicPort"`
}

// NodeCpuResources: CpuShares is total MHz across cores.
type NodeCpuResources struct {
	CpuShares          int64    `json:"CpuShares"`
	TotalCpuCores      uint16   `json:"TotalCpuCores"`
	ReservableCpuCores []uint16 `json:"ReservableCpuCores,omitempty"`
	// NUMA lists the host's NUMA nodes and their cores (drover addition:
	// reserved cores are taken next to the devices an alloc gets). Empty
	// when unknown.
	NUMA []NodeNUMANode `json:"NUMA,omitempty"`
}

// NodeNUMANode is one NUMA node of the host (the NUMANode of
// NodeDeviceLocality) and its CPU core IDs.
type NodeNUMANode struct {
	ID    int      `json:"ID"`
	Cores []uint16 `json:"Cores"`
}

// NodeMemoryResources in MB.
type NodeMemoryResources struct {
	MemoryMB int64 `json:"MemoryMB"`
}

// NodeDiskResources in MB.
type NodeDiskResources struct {
	DiskMB int64 `json:"DiskMB"`
}

// NodeReservedResources are held back from scheduling.
type NodeReservedResources struct {
	Cpu               NodeCpuResources    `json:"Cpu"`
	Memory            NodeMemoryResources `json:"Memory"`
	Disk              NodeDiskResources   `json:"Disk"`
	ReservedHostPorts string              `json:"ReservedHostPorts,omitempty"`
}

// NodeDeviceResource is a group of identical devices (same vendor, type, model).
type NodeDeviceResource struct {
	Vendor     string                `json:"Vendor"`
	Type       string                `json:"Type"`
	Name       string                `json:"Name"`
	Instances  []*NodeDevice         `json:"Instances"`
	Attributes map[string]*Attribute `json:"Attributes,omitempty"`
}

// ID returns vendor/type/name.
func (d *NodeDeviceResource) ID() string { return d.Vendor + "/" + d.Type + "/" + d.Name }

// MemoryMB is the memory of each instance of the group: its "memory"
// attribute, in MiB unless its unit says GiB (or KiB); 0 when unknown.
func (d *NodeDeviceResource) MemoryMB() int64 {
	a := d.Attributes["memory"]
	if a == nil {
		return 0
	}
	var v float64
	switch {
	case a.IntVal != nil:
		v = float64(*a.IntVal)
	case a.FloatVal != nil:
		v = *a.FloatVal
	default:
		return 0
	}
	switch a.Unit {
	case "GiB", "GB":
		v *= 1024
	case "KiB", "KB":
		v /= 1024
	}
	return int64(v)
}

// NodeDevice is one device instance (a GPU or a MIG instance).
type NodeDevice struct {
	ID                string              `json:"ID"`
	Healthy           bool                `json:"Healthy"`
	HealthDescription string              `json:"HealthDescription,omitempty"`
	Locality          *NodeDeviceLocality `json:"Locality,omitempty"`
	// Links describes the interconnect to every peer device on the node,
	// keyed by the peer's ID (drover addition for topology-aware placement).
	Links map[string]DeviceLink `json:"Links,omitempty"`
	// Minor is the device minor number the driver gave the GPU
	// (/dev/nvidia<Minor>); a MIG instance's is its GPU's. Nil when the
	// fingerprint does not know it.
	Minor *int `json:"Minor,omitempty"`
	// DevicePaths are the host device nodes a task given this instance
	// needs, besides the vendor's control devices: /dev/nvidia3 for a
	// GPU; for a MIG instance its GPU's node and the /dev/nvidia-caps
	// nodes of its GPU and compute instance. Clients expose exactly these.
	DevicePaths []string `json:"DevicePaths,omitempty"`
}

// NodeDeviceLocality places a device on the host.
type NodeDeviceLocality struct {
	PciBusID string `json:"PciBusID,omitempty"`
	NUMANode int    `json:"NUMANode"`
}

// Link kinds between two devices, from best to worst connected.
const (
	LinkNVLink     = "nvlink"      // direct NVLink (NVLinks > 0)
	LinkPCIeSwitch = "pcie-switch" // same PCIe switch (single or multiple)
	LinkPCIeHost   = "pcie-host"   // same host bridge / CPU
	LinkSystem     = "system"      // across NUMA nodes (SMP interconnect)
)

// DeviceLink is the connection between two devices. Level orders link
// kinds: 0 nvlink, 1 pcie-switch, 2 pcie-host, 3 system (lower is better).
type DeviceLink struct {
	Kind    string `json:"Kind"`
	Level   int    `json:"Level"`
	NVLinks int    `json:"NVLinks,omitempty"`
}

// Attribute is a typed device attribute with an optional unit, e.g.
// memory = 80 GiB, compute_capability = "9.0".
type Attribute struct {
	FloatVal  *float64 `json:"FloatVal,omitempty"`
	IntVal    *int64   `json:"IntVal,omitempty"`
	StringVal *string  `json:"StringVal,omitempty"`
	BoolVal   *bool    `json:"BoolVal,omitempty"`
	Unit      string   `json:"Unit,omitempty"`
}

// DriverInfo is a driver's fingerprint on a node.
type DriverInfo struct {
	Attributes        map[string]string `json:"Attributes,omitempty"`
	Detected          bool              `json:"Detected"`
	Healthy           bool              `json:"Healthy"`
	HealthDescription string            `json:"HealthDescription,omitempty"`
	UpdateTime        time.Time         `json:"UpdateTime"`
}

// NodeEvent records something that happened to a node.
type NodeEvent struct {
	Message     string            `json:"Message"`
	Subsystem   string            `json:"Subsystem"`
	Details     map[string]string `json:"Details,omitempty"`
	Timestamp   time.Time         `json:"Timestamp"`
	CreateIndex uint64            `json:"CreateIndex"`
}

// DrainStrategy of a draining node.
type DrainStrategy struct {
	DrainSpec
	ForceDeadline time.Time `json:"ForceDeadline"`
	StartedAt     time.Time `json:"StartedAt"`
}

// DrainSpec is what a user asks for.
type DrainSpec struct {
	Deadline         time.Duration `json:"Deadline"` // <0 force now, 0 no deadline
	IgnoreSystemJobs bool          `json:"IgnoreSystemJobs"`
	// Reason says why the node drains ("spot interruption: ..." for a
	// reclaimed spot node); the allocs it migrates carry it in their
	// desired description.
	Reason string `json:"Reason,omitempty"`
}

// Drain statuses (DrainMetadata.Status).
const (
	DrainStatusDraining = "draining"
	DrainStatusComplete = "complete"
	DrainStatusCanceled = "canceled"
)

// DrainMetadata records the last drain.
type DrainMetadata struct {
	StartedAt time.Time `json:"StartedAt"`
	UpdatedAt time.Time `json:"UpdatedAt"`
	Status    string    `json:"Status"` // draining, complete, canceled
	// Reason is the drain's (DrainSpec.Reason), kept once it ends.
	Reason string `json:"Reason,omitempty"`
}

// NodeUpdateDrainRequest is the body of POST /v1/node/{id}/drain.
type NodeUpdateDrainRequest struct {
	NodeID       string            `json:"NodeID"`
	DrainSpec    *DrainSpec        `json:"DrainSpec"` // nil disables
	MarkEligible bool              `json:"MarkEligible"`
	Meta         map[string]string `json:"Meta,omitempty"`
}

// NodeUpdateEligibilityRequest is the body of POST /v1/node/{id}/eligibility.
type NodeUpdateEligibilityRequest struct {
	NodeID      string `json:"NodeID"`
	Eligibility string `json:"Eligibility"`
}

// NodeUpdateResponse answers node writes.
type NodeUpdateResponse struct {
	EvalIDs         []string `json:"EvalIDs,omitempty"`
	EvalCreateIndex uint64   `json:"EvalCreateIndex"`
	NodeModifyIndex uint64   `json:"NodeModifyIndex"`
	Index           uint64   `json:"Index"`
}

// NodeListStub is the short form returned by GET /v1/nodes.
type NodeListStub struct {
	Address               string                 `json:"Address"`
	ID                    string                 `json:"ID"`
	Datacenter            string                 `json:"Datacenter"`
	Name                  string                 `json:"Name"`
	NodeClass             string                 `json:"NodeClass"`
	NodePool              string                 `json:"NodePool"`
	Version               string                 `json:"Version"`
	Drain                 bool                   `json:"Drain"`
	SchedulingEligibility string                 `json:"SchedulingEligibility"`
	Status                string                 `json:"Status"`
	StatusDescription     string                 `json:"StatusDescription"`
	Drivers               map[string]*DriverInfo `json:"Drivers"`
	NodeResources         *NodeResources         `json:"NodeResources,omitempty"`
	ReservedResources     *NodeReservedResources `json:"ReservedResources,omitempty"`
	Attributes            map[string]string      `json:"Attributes,omitempty"`
	LastDrain             *DrainMetadata         `json:"LastDrain,omitempty"`
	CreateIndex           uint64                 `json:"CreateIndex"`
	ModifyIndex           uint64                 `json:"ModifyIndex"`
}

// Stub returns the list form; resources are included (the UI draws bars from them).
func (n *Node) Stub() *NodeListStub {
	return &NodeListStub{
		Address: n.Attributes["unique.network.ip-address"], ID: n.ID, Datacenter: n.Datacenter,
		Name: n.Name, NodeClass: n.NodeClass, NodePool: n.NodePool, Version: n.Version,
		Drain: n.Drain, SchedulingEligibility: n.SchedulingEligibility, Status: n.Status,
		StatusDescription: n.StatusDescription, Drivers: n.Drivers, NodeResources: n.NodeResources,
		ReservedResources: n.ReservedResources, LastDrain: n.LastDrain,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}
}

// NodeRegisterRequest is the body of PUT /v1/node/register (client -> server).
type NodeRegisterRequest struct {
	Node *Node `json:"Node"`
	// IntroToken is an introduction token an operator issued (drover node
	// intro create; the client's intro_token). A node that registers for
	// the first time, or into another node pool, needs one when the
	// servers require an introduction (ACLs on, or client certificates
	// verified) and it holds no client certificate of the region.
	IntroToken string `json:"IntroToken,omitempty"`
}

// NodeIntro is how a registering node was introduced, as the server's
// HTTP layer saw it: the introduction token it sent, and whether its TLS
// certificate holds an agent role (client or server) of the region.
type NodeIntro struct {
	Token     string
	Certified bool
}

// NodeIntroRequest is the body of PUT /v1/node/intro: an introduction
// token for a node of NodePool ("" = default), named NodeName ("" = any
// name), valid for TTL (0 = the server's default).
type NodeIntroRequest struct {
	NodeName string        `json:"NodeName,omitempty"`
	NodePool string        `json:"NodePool,omitempty"`
	TTL      time.Duration `json:"TTL,omitempty"`
}

// NodeIntroResponse carries the token (a JWT the keyring signs) and when
// it expires.
type NodeIntroResponse struct {
	Token      string    `json:"Token"`
	Expiration time.Time `json:"Expiration"`
}

// Introduction tokens' TTLs: the default, and the most a request may ask.
const (
	DefaultNodeIntroTTL = 5 * time.Minute
	MaxNodeIntroTTL     = 24 * time.Hour
)

// NodeHeartbeatRequest is the body of PUT /v1/node/{id}/heartbeat.
// Status may be empty (keep) or ready/down for a graceful leave.
type NodeHeartbeatRequest struct {
	Status string `json:"Status,omitempty"`
}

// NodeRegisterResponse answers register and heartbeat: the TTL within
// which the next heartbeat must arrive and the current server list.
type NodeRegisterResponse struct {
	HeartbeatTTL time.Duration `json:"HeartbeatTTL"`
	Servers      []string      `json:"Servers,omitempty"` // HTTP addresses host:port
	LeaderHTTP   string        `json:"LeaderHTTP,omitempty"`
	Index        uint64        `json:"Index"`
}

// NodeAllocUpdateRequest is the body of PUT /v1/node/{id}/allocations/update:
// a client's batch of alloc status changes. Only client-owned fields of each
// Allocation are read (ID, ClientStatus, ClientDescription, TaskStates,
// DeploymentStatus).
type NodeAllocUpdateRequest struct {
	Allocs []*Allocation `json:"Allocs"`
}

// NodeClientAllocsResponse is GET /v1/node/{id}/client-allocs, what
// clients long-poll (as Nomad's Node.GetClientAllocs): each alloc on the
// node by ID with its AllocModifyIndex, which moves only when the server
// changes the alloc. A client fetches the allocs whose index moved
// (POST /v1/node/{id}/allocations/fetch), so a status it reported itself
// costs it no transfer. Index is the node's own: the largest
// AllocModifyIndex of its allocs (the node's ModifyIndex while it has
// none), so only a server change to this node's allocs ends a long poll.
type NodeClientAllocsResponse struct {
	Allocs map[string]uint64 `json:"Allocs"`
	Index  uint64            `json:"Index"`
}

// Changed returns the allocs whose AllocModifyIndex moved past the one in
// fetched (alloc ID -> AllocModifyIndex last fetched), or that fetched
// lacks, and drops from fetched the allocs the server no longer holds.
func (r *NodeClientAllocsResponse) Changed(fetched map[string]uint64) []string {
	var want []string
	for id, idx := range r.Allocs {
		if f, ok := fetched[id]; !ok || idx > f {
			want = append(want, id)
		}
	}
	for id := range fetched {
		if _, ok := r.Allocs[id]; !ok {
			delete(fetched, id)
		}
	}
	return want
}

// NodeAllocFetchRequest is the body of POST /v1/node/{id}/allocations/fetch:
// the allocs of that node to send in full (others, and unknown IDs, are
// left out).
type NodeAllocFetchRequest struct {
	AllocIDs []string `json:"AllocIDs"`
	// Compact asks for the allocs as a client runs them: each distinct
	// job once, in the response's Jobs (the allocs' Job left nil,
	// JobIndexes saying whose it is), and no placement Metrics, which
	// only operators read. A node given many allocs of one job so reads
	// that job once, not once per alloc (drover addition).
	Compact bool `json:"Compact,omitempty"`
	// MinIndex, when set, is the index of the alloc list the IDs come
	// from: the server answers once its state has applied at least that
	// Raft index (as Nomad's MinQueryIndex), so a fetch sent to a server
	// behind the one that listed still finds every listed alloc. It waits
	// up to MaxFetchIndexWait, then fails with unavailable (drover
	// addition).
	MinIndex uint64 `json:"MinIndex,omitempty"`
}

// MaxFetchIndexWait bounds how long a fetch waits for its MinIndex.
const MaxFetchIndexWait = 10 * time.Second

// NodeAllocFetchResponse carries the fetched allocs.
type NodeAllocFetchResponse struct {
	Allocs []*Allocation `json:"Allocs"`
	// Jobs and JobIndexes answer a Compact request: Allocs[i]'s job is
	// Jobs[JobIndexes[i]] (none when that is -1). Expand puts them back.
	Jobs       []*Job `json:"Jobs,omitempty"`
	JobIndexes []int  `json:"JobIndexes,omitempty"`
	Index      uint64 `json:"Index"`
}

// Expand sets each alloc's Job from Jobs and JobIndexes (a Compact
// answer); allocs of one job share it, as in the server's state. An
// answer without JobIndexes is left as it is.
func (r *NodeAllocFetchResponse) Expand() error {
	if r.JobIndexes == nil {
		return nil
	}
	if len(r.JobIndexes) != len(r.Allocs) {
		return fmt.Errorf("alloc fetch: %d job indexes for %d allocs", len(r.JobIndexes), len(r.Allocs))
	}
	for i, j := range r.JobIndexes {
		switch {
		case j == -1:
		case j < 0 || j >= len(r.Jobs):
			return fmt.Errorf("alloc fetch: job index %d of %d jobs", j, len(r.Jobs))
		case r.Allocs[i] != nil:
			r.Allocs[i].Job = r.Jobs[j]
		}
	}
	return nil
}

// MaxAllocFetch caps the IDs of one NodeAllocFetchRequest.
const MaxAllocFetch = 10000

// Header carrying a node's SecretID on client->server node endpoints.
const NodeSecretHeader = "X-Drover-Node-Secret"

// NodeMetaApplyRequest is the body of POST /v1/client/metadata: keys to set
// on a node's dynamic metadata, null to unset one.
type NodeMetaApplyRequest struct {
	NodeID string             `json:"NodeID,omitempty"`
	Meta   map[string]*string `json:"Meta"`
}

// NodeMetaResponse is a node's metadata: Meta (what the scheduler sees) is
// Static (agent configuration) with Dynamic applied over it.
type NodeMetaResponse struct {
	Meta    map[string]string  `json:"Meta"`
	Dynamic map[string]*string `json:"Dynamic"`
	Static  map[string]string  `json:"Static"`
}
