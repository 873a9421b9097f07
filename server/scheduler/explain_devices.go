package scheduler

import (
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// devShortfall collects, while explaining a failed placement, the node
// with the most free matching devices for each device ask that did not
// fit, for lines such as "needs 4 nvidia/gpu with memory >= 80 GiB; node
// gpu-3 has 2 free".
type devShortfall struct {
	asks []*api.RequestedDevice
	best map[*api.RequestedDevice]devFree
	// named holds the asks some noted node has the model of (free or
	// not); models are the GPU and MIG models of the noted nodes, for
	// the line of an ask naming a model none has.
	named  map[*api.RequestedDevice]bool
	models map[string]*api.NodeDeviceResource
}

// maxShortfallModels bounds the models collected and listed.
const maxShortfallModels = 8

type devFree struct {
	node      string
	free      int
	connected int // largest NVLink-connected free set (0: the node reports no links)
}

// note records ns for the first device ask it cannot satisfy.
func (d *devShortfall) note(pk *devicePicker, tc *tgCtx, ns *nodeState) {
	for i := range tc.devs {
		if _, ok := pk.pick(ns, tc.devs[i:i+1]); ok {
			continue
		}
		req := tc.devs[i].req
		free, connected := pk.freeMatching(ns, req)
		if d.best == nil {
			d.best = map[*api.RequestedDevice]devFree{}
			d.named = map[*api.RequestedDevice]bool{}
			d.models = map[string]*api.NodeDeviceResource{}
		}
		d.noteModels(req, ns)
		cur, seen := d.best[req]
		if !seen {
			d.asks = append(d.asks, req)
		}
		if !seen || free > cur.free || (free == cur.free && ns.node.Name < cur.node) {
			d.best[req] = devFree{node: ns.node.Name, free: free, connected: connected}
		}
		return
	}
}

// noteModels records whether ns has req's model and the GPU and MIG
// models it has.
func (d *devShortfall) noteModels(req *api.RequestedDevice, ns *nodeState) {
	if ns.node.NodeResources == nil {
		return
	}
	for _, g := range ns.node.NodeResources.Devices {
		if deviceNameMatch(req.Name, g) {
			d.named[req] = true
		}
		if _, seen := d.models[g.ID()]; !seen && len(d.models) < 4*maxShortfallModels &&
			(g.Type == api.DeviceTypeGPU || g.Type == api.DeviceTypeMIG) {
			d.models[g.ID()] = g
		}
	}
}

// unknownModel is the line for an ask naming a model ("nvidia/gpu/H100")
// no noted node has, "" for other asks: "no node has a GPU model
// matching nvidia/gpu/H1000 (known: NVIDIA H100 80GB HBM3 (H100,
// H100-80GB), ...)", so a typo is not read as "exhausted".
func (d *devShortfall) unknownModel(req *api.RequestedDevice) string {
	if d.named[req] || strings.Count(req.Name, "/") != 2 {
		return ""
	}
	vendor, rest, _ := strings.Cut(req.Name, "/")
	typ, _, _ := strings.Cut(rest, "/")
	var known []string
	for _, g := range d.models {
		if g.Vendor == vendor && (g.Type == typ || typ == api.DeviceTypeGPU && g.Type == api.DeviceTypeMIG) {
			known = append(known, api.GPUModelLabel(g))
		}
	}
	sort.Strings(known)
	kind := "device"
	if typ == api.DeviceTypeGPU || typ == api.DeviceTypeMIG {
		kind = "GPU"
	}
	line := "no node has a " + kind + " model matching " + req.Name
	switch {
	case len(known) > maxShortfallModels:
		line += " (known: " + strings.Join(known[:maxShortfallModels], ", ") + ", ...)"
	case len(known) > 0:
		line += " (known: " + strings.Join(known, ", ") + ")"
	}
	return line
}

// lines renders one line per ask.
func (d *devShortfall) lines() []string {
	var out []string
	for _, req := range d.asks {
		b := d.best[req]
		line := "needs " + describeAsk(req) + "; "
		if u := d.unknownModel(req); u != "" {
			out = append(out, line+u)
			continue
		}
		if b.free == 0 {
			line += "no node has a matching one free"
		} else {
			line += "node " + b.node + " has " + itoa(b.free) + " free"
		}
		out = append(out, line)
	}
	return out
}

// reasons renders one structured PendingDevices reason per ask.
func (d *devShortfall) reasons() []api.PendingReason {
	var out []api.PendingReason
	for _, req := range d.asks {
		b := d.best[req]
		need := int(max(req.Count, 1))
		r := api.PendingReason{Kind: api.PendingDevices, Need: need, Have: b.free, Connected: b.connected}
		msg := "needs " + describeAsk(req) + " on one node; "
		if u := d.unknownModel(req); u != "" {
			msg += u
		} else if b.free == 0 {
			msg += "no node has a matching one free"
		} else {
			r.Node = b.node
			msg += "largest free set is " + itoa(b.free) + " on node " + b.node
			if b.connected > 0 && need > 1 {
				msg += " (largest NVLink-connected: " + itoa(b.connected) + ")"
			}
		}
		r.Message = msg
		out = append(out, r)
	}
	return out
}

// freeMatching counts the healthy, unused instances on ns of the largest
// device group that matches req's name and constraints, and the largest
// NVLink-connected set among them (0 when the group reports no NVLinks).
func (pk *devicePicker) freeMatching(ns *nodeState, req *api.RequestedDevice) (free, connected int) {
	res := ns.node.NodeResources
	if res == nil {
		return 0, 0
	}
	for _, g := range res.Devices {
		if !deviceNameMatch(req.Name, g) || !pk.constraintsOK(req, g) {
			continue
		}
		var fr []*api.NodeDevice
		for _, in := range g.Instances {
			if in.Healthy && !ns.cap.DeviceUsed(in.ID) {
				fr = append(fr, in)
			}
		}
		if len(fr) < free {
			continue
		}
		free, connected = len(fr), 0
		if islandOf(g.Instances) > 1 {
			connected = islandOf(fr)
		}
	}
	return free, connected
}

func isDeviceDim(why string) bool { return strings.HasPrefix(why, "devices: ") }

// resShortfall collects, while explaining a failed placement, the node
// with the most free of each amount dimension (cpu, memory, disk, cores)
// that nodes ran out of, for "cpu exhausted on 3 nodes; most free is 600
// MHz on node a, needs 1400 MHz".
type resShortfall struct {
	dims []string
	best map[string]capacity.Exhausted // Free, Need; ID holds the node name
}

// note records ns when it lacks an amount of dimension dim.
func (r *resShortfall) note(tc *tgCtx, ns *nodeState, dim string) {
	ask := tc.ask
	ask.CPU = tc.cpuOn(ns)
	e := ns.cap.Fits(&ask)
	if e == nil || e.Dimension != dim || e.Need <= 0 {
		return
	}
	if r.best == nil {
		r.best = map[string]capacity.Exhausted{}
	}
	cur, seen := r.best[dim]
	if !seen {
		r.dims = append(r.dims, dim)
	}
	if !seen || e.Free > cur.Free || (e.Free == cur.Free && ns.node.Name < cur.ID) {
		r.best[dim] = capacity.Exhausted{Dimension: dim, Need: e.Need, Free: e.Free, ID: ns.node.Name}
	}
}

// reasons renders one PendingExhausted reason per dimension noted.
func (r *resShortfall) reasons(m *api.AllocMetric) []api.PendingReason {
	var out []api.PendingReason
	for _, dim := range r.dims {
		b := r.best[dim]
		n := m.DimensionExhausted[dim]
		out = append(out, api.PendingReason{Kind: api.PendingExhausted, Dimension: dim, Count: n, Node: b.ID,
			Need: int(b.Need), Have: int(max(b.Free, 0)),
			Message: dim + " exhausted on " + plural(n, "node") + "; most free is " + amount(dim, max(b.Free, 0)) +
				" on node " + b.ID + ", needs " + amount(dim, b.Need)})
	}
	return out
}

// amount prints an amount of a capacity dimension with its unit.
func amount(dim string, v int64) string {
	switch dim {
	case capacity.DimCPU:
		return itoa(int(v)) + " MHz"
	case capacity.DimMemory, capacity.DimDisk:
		return itoa(int(v)) + " MB"
	case capacity.DimCores:
		return plural(int(v), "core")
	}
	return itoa(int(v))
}
