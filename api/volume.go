package api

// Volume types of a group's volume block.
const (
	VolumeTypeHost = "host"
	VolumeTypeCSI  = "csi"
)

// ClientHostVolumeConfig is a host volume a client offers (agent config
// client { host_volume "name" { path = "/srv/x"  read_only = true } }).
type ClientHostVolumeConfig struct {
	Name     string `json:"Name"`
	Path     string `json:"Path"`
	ReadOnly bool   `json:"ReadOnly"`
}

// VolumeRequest is a group's volume block: the volume named Source of the
// given Type, mounted by tasks through their volume_mount blocks.
type VolumeRequest struct {
	Name           string `json:"Name"`
	Type           string `json:"Type"`
	Source         string `json:"Source"`
	ReadOnly       bool   `json:"ReadOnly"`
	AccessMode     string `json:"AccessMode,omitempty"`
	AttachmentMode string `json:"AttachmentMode,omitempty"`
	PerAlloc       bool   `json:"PerAlloc,omitempty"`
}

// VolumeMount mounts a group volume into a task at Destination.
type VolumeMount struct {
	Volume          string `json:"Volume"`
	Destination     string `json:"Destination"`
	ReadOnly        bool   `json:"ReadOnly"`
	PropagationMode string `json:"PropagationMode,omitempty"`
}

// HostVolumeOK reports whether the node offers the host volume the request
// names, writable when the request is.
func (n *Node) HostVolumeOK(req *VolumeRequest) bool {
	v := n.HostVolumes[req.Source]
	return v != nil && (req.ReadOnly || !v.ReadOnly)
}
