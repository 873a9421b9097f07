package scheduler

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

// missingDrivers is the constraint classOK reports for a node without a
// healthy driver a group's task uses (Nomad's name for it).
const missingDrivers = "missing drivers"

// maxDriverWhys bounds the distinct health descriptions one driver
// reason quotes.
const maxDriverWhys = 3

// driverReasons says, per driver of tg's tasks, why candidate nodes
// cannot run it: not healthy or not detected (with the fingerprint's
// health description, e.g. "containerd socket ... not found"), or
// absent; a driver no candidate node has at all is named with the
// drivers the nodes do have (a typo, or one drover does not run). It
// replaces the bare "missing drivers" constraint reason.
func driverReasons(tg *api.TaskGroup, nodes []*nodeState) []api.PendingReason {
	var out []api.PendingReason
	seen := map[string]bool{}
	for _, t := range tg.Tasks {
		d := t.Driver
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		var unhealthy, undetected, absent int
		whys := map[string]int{} // health description -> nodes
		for _, ns := range nodes {
			n := ns.node
			if driverOK(n, d) {
				continue
			}
			di := n.Drivers[d]
			switch {
			case di == nil:
				absent++
				continue
			case di.Detected:
				unhealthy++
			default:
				undetected++
			}
			if di.HealthDescription != "" {
				whys[di.HealthDescription]++
			}
		}
		r := api.PendingReason{Kind: api.PendingDriver, Driver: d, Count: unhealthy + undetected + absent}
		switch {
		case r.Count == 0:
			continue
		case absent == len(nodes):
			r.Message = "no node has driver " + strconv.Quote(d) + " (drivers on the nodes: " + nodeDrivers(nodes) + ")"
		default:
			var parts []string
			if unhealthy > 0 {
				parts = append(parts, "not healthy on "+plural(unhealthy, "node"))
			}
			if undetected > 0 {
				parts = append(parts, "not detected on "+plural(undetected, "node"))
			}
			if absent > 0 {
				parts = append(parts, "missing on "+plural(absent, "node"))
			}
			r.Message = "driver " + strconv.Quote(d) + " is " + strings.Join(parts, ", ")
			if w := healthWhys(whys); w != "" {
				r.Message += ": " + w
			}
		}
		out = append(out, r)
	}
	return out
}

// healthWhys joins the distinct health descriptions, the most common
// first, each with its node count when there are several.
func healthWhys(whys map[string]int) string {
	keys := sortedKeys(whys)
	if len(keys) == 1 {
		return keys[0]
	}
	if len(keys) > maxDriverWhys {
		keys = keys[:maxDriverWhys]
	}
	for i, k := range keys {
		keys[i] = k + " (" + plural(whys[k], "node") + ")"
	}
	return strings.Join(keys, "; ")
}

// nodeDrivers lists the healthy drivers of the nodes, sorted, or "none".
func nodeDrivers(nodes []*nodeState) string {
	have := map[string]bool{}
	for _, ns := range nodes {
		for d := range ns.node.Drivers {
			if driverOK(ns.node, d) {
				have[d] = true
			}
		}
	}
	if len(have) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(have)), ", ")
}

// withDriverReasons swaps the "missing drivers" constraint reason of rs
// for the driver reasons, when there are any.
func withDriverReasons(rs, drivers []api.PendingReason) []api.PendingReason {
	if len(drivers) == 0 {
		return rs
	}
	out := make([]api.PendingReason, 0, len(rs)+len(drivers))
	for _, r := range rs {
		if r.Kind == api.PendingConstraint && r.Constraint == missingDrivers {
			out = append(out, drivers...)
			drivers = nil
			continue
		}
		out = append(out, r)
	}
	return append(out, drivers...)
}
