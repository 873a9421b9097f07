package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// MIG (Multi-Instance GPU) management, a drover addition: a node's client
// reports its physical GPUs (Node.GPUs) with the MIG profiles each offers;
// an operator asks a new layout of some of them (POST
// /v1/node/{id}/gpu/mig, `drover node gpu mig-apply`), which the servers
// accept only while no live allocation holds those GPUs or their MIG
// instances. The change waits on the node (Node.MIGChange, pending: the
// scheduler places nothing on those devices meanwhile) until the node's
// client applied it through NVML and registers the node again with its
// new devices and the outcome (applied or failed).

// NodeGPU is one physical GPU of a node as its client fingerprinted it.
// The schedulable units stay NodeResources.Devices: the GPU itself, or
// its MIG instances while MIG mode is on.
type NodeGPU struct {
	UUID      string `json:"UUID"`
	Index     int    `json:"Index"` // NVML's index
	Name      string `json:"Name"`  // "NVIDIA H100 80GB HBM3"
	MemoryMiB int64  `json:"MemoryMiB"`
	// MIGCapable: the GPU can be partitioned.
	MIGCapable bool `json:"MIGCapable,omitempty"`
	// MIGEnabled: the GPU is in MIG mode; only MIG holds its devices.
	MIGEnabled bool `json:"MIGEnabled,omitempty"`
	// MIG are its MIG instances, by device ID (NodeDevice.ID).
	MIG []NodeMIGInstance `json:"MIG,omitempty"`
	// MIGProfiles are the GPU instance profiles the GPU offers, smallest
	// first; empty where the driver lists them only in MIG mode.
	MIGProfiles []MIGProfile `json:"MIGProfiles,omitempty"`
}

// NodeMIGInstance is one MIG instance of a GPU.
type NodeMIGInstance struct {
	ID      string `json:"ID"`      // "MIG-..."
	Profile string `json:"Profile"` // "1g.10gb"
}

// MIGProfile is a GPU instance profile: Slices of the GPU's compute
// (7 on A100, H100, H200, B200) with MemoryMiB of its memory, at most Max
// instances of it on one GPU.
type MIGProfile struct {
	Name      string `json:"Name"` // "3g.40gb"
	Slices    int    `json:"Slices"`
	MemoryMiB int64  `json:"MemoryMiB"`
	Max       int    `json:"Max"`
}

// MIGLayout is the layout asked of one GPU: one GPU instance per profile
// (each with one compute instance spanning it), or Disable to leave MIG
// mode (the whole GPU is one device again).
type MIGLayout struct {
	GPU      string   `json:"GPU"` // the GPU's UUID
	Profiles []string `json:"Profiles,omitempty"`
	Disable  bool     `json:"Disable,omitempty"`
}

// MIG change statuses (NodeMIGChange.Status).
const (
	MIGChangePending = "pending"
	MIGChangeApplied = "applied"
	MIGChangeFailed  = "failed"
)

// NodeMIGChange is an operator's MIG layout change of a node. The servers
// write it pending; the node's client applies it and reports the outcome
// in the node it registers next (same ID, Status applied or failed, Error
// saying why); only those fields of a client's copy are taken.
type NodeMIGChange struct {
	ID      string      `json:"ID"`
	Layouts []MIGLayout `json:"Layouts"`
	Status  string      `json:"Status"`
	Error   string      `json:"Error,omitempty"`
	// CreateTime is when the servers took it, UpdateTime when the client
	// reported (unix nanoseconds).
	CreateTime int64 `json:"CreateTime"`
	UpdateTime int64 `json:"UpdateTime,omitempty"`
}

// Pending reports whether the change waits for the node's client.
func (c *NodeMIGChange) Pending() bool { return c != nil && c.Status == MIGChangePending }

// NodeMIGApplyRequest is the body of POST /v1/node/{id}/gpu/mig.
type NodeMIGApplyRequest struct {
	NodeID  string      `json:"NodeID"`
	Layouts []MIGLayout `json:"Layouts"`
}

// NodeMIGApplyResponse answers a MIG apply: the change's ID and the index
// at which the node took it.
type NodeMIGApplyResponse struct {
	ChangeID        string `json:"ChangeID"`
	NodeModifyIndex uint64 `json:"NodeModifyIndex"`
	Index           uint64 `json:"Index"`
}

// NodeClientMIGResponse is GET /v1/node/{id}/client-mig, what a client
// long-polls: its node's MIG change (nil: none was ever asked).
type NodeClientMIGResponse struct {
	Change *NodeMIGChange `json:"Change"`
}

// MaxMIGProfiles bounds the profiles of one layout (a GPU has at most 7
// compute slices, so 7 instances).
const MaxMIGProfiles = 16

// MIGUnavailable is the HealthDescription of the devices a pending MIG
// change takes away.
const MIGUnavailable = "MIG layout change pending"

// GPU returns the node's GPU with that UUID (nil when none).
func (n *Node) GPU(uuid string) *NodeGPU {
	for _, g := range n.GPUs {
		if g != nil && g.UUID == uuid {
			return g
		}
	}
	return nil
}

// DeviceIDs are the device instances the GPU is now: itself, or its MIG
// instances in MIG mode (the GPU's UUID is listed either way).
func (g *NodeGPU) DeviceIDs() []string {
	out := []string{g.UUID}
	for _, m := range g.MIG {
		out = append(out, m.ID)
	}
	return out
}

// MIGPendingDevices are the device instances a pending MIG change takes
// away (each GPU it changes and their MIG instances); nil when none is
// pending.
func (n *Node) MIGPendingDevices() map[string]bool {
	if !n.MIGChange.Pending() {
		return nil
	}
	out := map[string]bool{}
	for _, l := range n.MIGChange.Layouts {
		out[l.GPU] = true
		if g := n.GPU(l.GPU); g != nil {
			for _, id := range g.DeviceIDs() {
				out[id] = true
			}
		}
	}
	return out
}

// MIGProfile returns the GPU's profile of that name (nil when none).
func (g *NodeGPU) MIGProfile(name string) *MIGProfile {
	for i := range g.MIGProfiles {
		if g.MIGProfiles[i].Name == name {
			return &g.MIGProfiles[i]
		}
	}
	return nil
}

// migCapacity is what the GPU's MIG instances share: its compute slices
// and their memory (the largest profile's: all of the GPU), 7 slices and
// unknown memory where no profile is known.
func (g *NodeGPU) migCapacity() (slices int, memMiB int64) {
	for _, p := range g.MIGProfiles {
		slices, memMiB = max(slices, p.Slices), max(memMiB, p.MemoryMiB)
	}
	if slices == 0 {
		slices = 7
	}
	return slices, memMiB
}

// CheckMIGLayout checks a layout against what the GPU offers: MIG at all,
// known profiles (where the GPU lists them; else names of the "3g.40gb"
// form), each at most its Max times, and together within the GPU's
// compute slices and memory. The driver has the last word on placement:
// a layout that passes may still not fit (the client then reports the
// change failed).
func (g *NodeGPU) CheckMIGLayout(l MIGLayout) error {
	if !g.MIGCapable {
		return fmt.Errorf("GPU %d (%s) does not support MIG", g.Index, g.Name)
	}
	if l.Disable {
		if len(l.Profiles) > 0 {
			return fmt.Errorf("GPU %d: a layout either disables MIG or lists profiles, not both", g.Index)
		}
		return nil
	}
	switch {
	case len(l.Profiles) == 0:
		return fmt.Errorf("GPU %d: no MIG profiles given (disable MIG to use the whole GPU)", g.Index)
	case len(l.Profiles) > MaxMIGProfiles:
		return fmt.Errorf("GPU %d: %d MIG profiles, at most %d", g.Index, len(l.Profiles), MaxMIGProfiles)
	}
	total, totalMem := g.migCapacity()
	slices, mem := 0, int64(0)
	count := map[string]int{}
	for _, name := range l.Profiles {
		if len(g.MIGProfiles) == 0 {
			s, ok := profileSlices(name)
			if !ok {
				return fmt.Errorf("GPU %d: %q is not a MIG profile name (like 1g.10gb)", g.Index, name)
			}
			slices += s
			continue
		}
		p := g.MIGProfile(name)
		if p == nil {
			return fmt.Errorf("GPU %d (%s) has no MIG profile %q; it offers %s", g.Index, g.Name, name, strings.Join(g.profileNames(), ", "))
		}
		if count[name]++; count[name] > p.Max {
			return fmt.Errorf("GPU %d: at most %d %s instances", g.Index, p.Max, name)
		}
		slices += p.Slices
		mem += p.MemoryMiB
	}
	if slices > total {
		return fmt.Errorf("GPU %d: the profiles take %d compute slices; the GPU has %d", g.Index, slices, total)
	}
	if totalMem > 0 && mem > totalMem {
		return fmt.Errorf("GPU %d: the profiles take %d MiB of memory; the GPU's MIG instances share %d MiB", g.Index, mem, totalMem)
	}
	return nil
}

func (g *NodeGPU) profileNames() []string {
	out := make([]string, 0, len(g.MIGProfiles))
	for _, p := range g.MIGProfiles {
		out = append(out, p.Name)
	}
	return out
}

// profileSlices reads the compute slices of a profile name "<n>g.<m>gb".
func profileSlices(name string) (int, bool) {
	g, rest, ok := strings.Cut(name, "g.")
	if !ok || !strings.HasSuffix(rest, "gb") {
		return 0, false
	}
	n, err := strconv.Atoi(g)
	if err != nil || n <= 0 || n > 8 {
		return 0, false
	}
	if _, err := strconv.Atoi(strings.TrimSuffix(rest, "gb")); err != nil {
		return 0, false
	}
	return n, true
}

// CheckMIGLayouts checks a request's layouts against the node: at least
// one, each GPU of the node once, each layout as CheckMIGLayout says.
func (n *Node) CheckMIGLayouts(layouts []MIGLayout) error {
	if len(layouts) == 0 {
		return fmt.Errorf("no GPU layouts given")
	}
	if len(layouts) > max(len(n.GPUs), 1) {
		return fmt.Errorf("%d layouts for a node with %d GPUs", len(layouts), len(n.GPUs))
	}
	seen := map[string]bool{}
	for _, l := range layouts {
		g := n.GPU(l.GPU)
		if g == nil {
			return fmt.Errorf("node %s has no GPU %q", n.ID, l.GPU)
		}
		if seen[l.GPU] {
			return fmt.Errorf("GPU %q is given twice", l.GPU)
		}
		seen[l.GPU] = true
		if err := g.CheckMIGLayout(l); err != nil {
			return err
		}
	}
	return nil
}

// SameMIGLayout reports whether the GPU already is as l asks (the same
// profiles, in any order, or MIG off).
func (g *NodeGPU) SameMIGLayout(l MIGLayout) bool {
	if l.Disable || !g.MIGEnabled {
		return l.Disable && !g.MIGEnabled
	}
	have := make([]string, 0, len(g.MIG))
	for _, m := range g.MIG {
		have = append(have, m.Profile)
	}
	want := slices.Clone(l.Profiles)
	slices.Sort(have)
	slices.Sort(want)
	return slices.Equal(have, want)
}

// ParseMIGProfiles reads a comma-separated list of profiles
// ("3g.40gb,2g.20gb,1g.10gb"; "2x1g.10gb" is two of them).
func ParseMIGProfiles(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "" {
			continue
		}
		k := 1
		if c, p, ok := strings.Cut(f, "x"); ok {
			n, err := strconv.Atoi(c)
			if err != nil || n < 1 || n > MaxMIGProfiles {
				return nil, fmt.Errorf("%q: want <count>x<profile>, like 2x1g.10gb", f)
			}
			k, f = n, p
		}
		if _, ok := profileSlices(f); !ok {
			return nil, fmt.Errorf("%q is not a MIG profile name (like 1g.10gb)", f)
		}
		for range k {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no MIG profiles in %q", s)
	}
	if len(out) > MaxMIGProfiles {
		return nil, fmt.Errorf("%d MIG profiles, at most %d", len(out), MaxMIGProfiles)
	}
	return out, nil
}

// ApplyNodeMIG asks a new MIG layout of some of a node's GPUs (node
// write). It fails with ErrConflict while a live allocation holds one of
// them (or their MIG instances), or another change of the node is
// pending.
func (c *Client) ApplyNodeMIG(ctx context.Context, nodeID string, layouts []MIGLayout) (*NodeMIGApplyResponse, error) {
	var out NodeMIGApplyResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/node/"+esc(nodeID)+"/gpu/mig",
		&NodeMIGApplyRequest{NodeID: nodeID, Layouts: layouts}, &out, nil)
}

// NodeClientMIG long-polls a node's MIG change (the node's own secret).
func (c *Client) NodeClientMIG(ctx context.Context, nodeID string, o *QueryOptions) (*NodeClientMIGResponse, *QueryMeta, error) {
	var out NodeClientMIGResponse
	m, err := c.Query(ctx, "/v1/node/"+esc(nodeID)+"/client-mig", &out, o)
	return &out, m, err
}

// AllocHolds reports whether the alloc was given one of devices (whole
// or a share of it).
func AllocHolds(a *Allocation, devices map[string]bool) bool {
	if a == nil || a.AllocatedResources == nil || len(devices) == 0 {
		return false
	}
	for _, t := range a.AllocatedResources.Tasks {
		if t == nil {
			continue
		}
		for _, d := range t.Devices {
			for _, id := range d.DeviceIDs {
				if devices[id] {
					return true
				}
			}
		}
	}
	return false
}
