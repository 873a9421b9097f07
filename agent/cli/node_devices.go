package cli

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// deviceHolder is a live allocation holding a device instance: all of
// it (share nil) or a share of it.
type deviceHolder struct {
	alloc string // short ID
	share *api.AllocatedShare
}

func (h deviceHolder) String() string {
	if h.share == nil {
		return h.alloc
	}
	return h.alloc + " " + grantString(h.share)
}

// deviceUse maps a device instance ID to the live allocations holding it.
func deviceUse(allocs []*api.Allocation) map[string][]deviceHolder {
	use := map[string][]deviceHolder{}
	for _, a := range allocs {
		if a.TerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, tr := range a.AllocatedResources.Tasks {
			if tr == nil {
				continue
			}
			for _, d := range tr.Devices {
				for _, id := range d.DeviceIDs {
					use[id] = append(use[id], deviceHolder{alloc: short(a.ID), share: d.Share})
				}
			}
		}
	}
	for _, hs := range use {
		sort.SliceStable(hs, func(i, j int) bool { return hs[i].alloc < hs[j].alloc })
	}
	return use
}

// sharedUse sums the shares held of one instance: their thousandths and
// their modes (one, unless the holders disagree); ok is false when a
// holder has the whole instance.
func sharedUse(hs []deviceHolder) (milli int, modes []string, ok bool) {
	for _, h := range hs {
		if h.share == nil {
			return 0, nil, false
		}
		milli += h.share.Milli
		if !slices.Contains(modes, h.share.Mode) {
			modes = append(modes, h.share.Mode)
		}
	}
	return milli, modes, len(hs) > 0
}

// printDeviceSummary writes one line per device group: "Devices: 8
// nvidia/gpu/NVIDIA H100 80GB HBM3 (7 healthy, 4 in use)" (", 2 shared"
// when some are), then a table of the shared instances: their mode, who
// holds what share and the part still free.
func printDeviceSummary(w io.Writer, n *api.Node, allocs []*api.Allocation) {
	if n.NodeResources == nil {
		return
	}
	use := deviceUse(allocs)
	var rows []string
	for _, g := range n.NodeResources.Devices {
		healthy, used, shared := 0, 0, 0
		for i, in := range g.Instances {
			if in.Healthy {
				healthy++
			}
			if len(use[in.ID]) > 0 {
				used++
			}
			milli, modes, ok := sharedUse(use[in.ID])
			if !ok {
				continue
			}
			shared++
			holders := make([]string, 0, len(use[in.ID]))
			for _, h := range use[in.ID] {
				held := h.alloc + " " + milliString(h.share.Milli)
				if extras := grantExtras(h.share); len(extras) > 0 {
					held += " (" + strings.Join(extras, ", ") + ")"
				}
				holders = append(holders, held)
			}
			rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t%s", g.ID(), i, in.ID, strings.Join(modes, ","),
				strings.Join(holders, "; "), milliString(max(0, api.MilliPerDevice-milli))))
		}
		sharedNote := ""
		if shared > 0 {
			sharedNote = fmt.Sprintf(", %d shared", shared)
		}
		fmt.Fprintf(w, "Devices: %d %s (%d healthy, %d in use%s)\n", len(g.Instances), g.ID(), healthy, used, sharedNote)
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "\nDevice Shares")
		table(w, "Device\t#\tID\tMode\tHeld By\tFree", rows)
	}
}

// printDevices writes every device group with its attributes, each
// instance with health, locality and user, and the interconnect matrix
// (NV<n> = n NVLinks, PIX = same PCIe switch, NODE = same NUMA node, SYS
// = across NUMA nodes), like `nvidia-smi topo -m`.
func printDevices(w io.Writer, n *api.Node, allocs []*api.Allocation) {
	if n.NodeResources == nil || len(n.NodeResources.Devices) == 0 {
		return
	}
	use := deviceUse(allocs)
	fmt.Fprintln(w, "\nDevices")
	for gi, g := range n.NodeResources.Devices {
		if gi > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", g.ID())
		pairs := []string{}
		keys := make([]string, 0, len(g.Attributes))
		for k := range g.Attributes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			pairs = append(pairs, "  "+k, attrString(g.Attributes[k]))
		}
		kv(w, pairs...)
		rows := make([]string, 0, len(g.Instances))
		for i, in := range g.Instances {
			health := "healthy"
			if !in.Healthy {
				health = "UNHEALTHY"
				if in.HealthDescription != "" {
					health += ": " + in.HealthDescription
				}
			}
			bus, numa := "-", "-"
			if in.Locality != nil {
				bus, numa = orDash(in.Locality.PciBusID), strconv.Itoa(in.Locality.NUMANode)
			}
			who := make([]string, 0, len(use[in.ID]))
			for _, h := range use[in.ID] {
				who = append(who, h.String())
			}
			rows = append(rows, fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s", i, in.ID, bus, numa, orDash(strings.Join(who, "; ")), health))
		}
		table(w, "#\tID\tPCI Bus\tNUMA\tAllocation\tHealth", rows)
		if m := topoMatrix(g); m != "" {
			fmt.Fprintln(w, "Topology")
			fmt.Fprint(w, m)
		}
	}
}

// topoMatrix renders the links between a group's instances; "" when the
// group has no link information.
func topoMatrix(g *api.NodeDeviceResource) string {
	hasLinks := false
	for _, in := range g.Instances {
		if len(in.Links) > 0 {
			hasLinks = true
			break
		}
	}
	if !hasLinks {
		return ""
	}
	var b strings.Builder
	header := []string{""}
	for i := range g.Instances {
		header = append(header, "#"+strconv.Itoa(i))
	}
	rows := []string{}
	for i, a := range g.Instances {
		cells := []string{"#" + strconv.Itoa(i)}
		for j, p := range g.Instances {
			if i == j {
				cells = append(cells, "X")
				continue
			}
			l, ok := a.Links[p.ID]
			if !ok {
				l, ok = p.Links[a.ID]
			}
			cells = append(cells, linkLabel(l, ok))
		}
		rows = append(rows, strings.Join(cells, "\t"))
	}
	table(&b, strings.Join(header, "\t"), rows)
	return b.String()
}

func linkLabel(l api.DeviceLink, ok bool) string {
	if !ok {
		return "?"
	}
	switch l.Kind {
	case api.LinkNVLink:
		return "NV" + strconv.Itoa(l.NVLinks)
	case api.LinkPCIeSwitch:
		return "PIX"
	case api.LinkPCIeHost:
		return "NODE"
	case api.LinkSystem:
		return "SYS"
	}
	return l.Kind
}

func attrString(a *api.Attribute) string {
	if a == nil {
		return ""
	}
	var s string
	switch {
	case a.StringVal != nil:
		s = *a.StringVal
	case a.IntVal != nil:
		s = strconv.FormatInt(*a.IntVal, 10)
	case a.FloatVal != nil:
		s = strconv.FormatFloat(*a.FloatVal, 'f', -1, 64)
	case a.BoolVal != nil:
		s = strconv.FormatBool(*a.BoolVal)
	}
	if a.Unit != "" {
		s += " " + a.Unit
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
