package server

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// GPU model names in job asks and queue limits (api/gpumodel.go). A
// device ask or a queue's gpu_models key naming a model no node of the
// cluster has is accepted with a warning, never refused: nodes may join
// after the job or the queue (a cluster brought up from code writes its
// queues first), and a typo must not wait unseen as "exhausted". A
// gpu_models key that can never count anything (a MIG profile, another
// device type) is refused at the door: that does not depend on which
// nodes are up.

// maxKnownModels bounds the models a warning lists.
const maxKnownModels = 8

// checkQueueModels refuses gpu_models keys that queues never count
// (api.CheckGPUModelKey), as api.ErrBadRequest. It runs before Raft, not
// in the FSM: queues stored before the check replay unchanged.
func checkQueueModels(q *api.Queue) error {
	if q == nil {
		return nil
	}
	for what, r := range map[string]*api.QueueResources{"guaranteed": q.Guaranteed, "limit": q.Limit} {
		if r == nil {
			continue
		}
		keys := make([]string, 0, len(r.GPUsByModel))
		for m := range r.GPUsByModel {
			keys = append(keys, m)
		}
		sort.Strings(keys)
		for _, m := range keys {
			if err := api.CheckGPUModelKey(m); err != nil {
				return api.Errorf(api.ErrBadRequest, fmt.Sprintf("queue %q: %s: %v", q.Name, what, err))
			}
		}
	}
	return nil
}

// QueueWarnings says which gpu_models keys of queues name a model no node
// of the cluster has (the limit or guarantee counts nothing until one
// joins).
func (t *Tenancy) QueueWarnings(queues []*api.Queue) []string {
	var keys []string
	for _, q := range queues {
		if q == nil {
			continue
		}
		for _, r := range []*api.QueueResources{q.Guaranteed, q.Limit} {
			if r == nil {
				continue
			}
			for m := range r.GPUsByModel {
				keys = append(keys, m)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	models, err := clusterModels(t.state())
	if err != nil {
		t.log.Warn("read nodes for queue model warnings", "err", err)
		return nil
	}
	var out []string
	for _, k := range dedupe(keys) {
		if !slices.ContainsFunc(models, func(d *api.NodeDeviceResource) bool { return api.GPUModelKeyMatches(k, d.ID()) }) {
			out = append(out, fmt.Sprintf("gpu_models %q: no node has a GPU model matching it, so it counts nothing until one joins%s", k,
				knownModels(models, func(d *api.NodeDeviceResource) bool { return d.Type == api.DeviceTypeGPU })))
		}
	}
	return out
}

// deviceWarnings says which device asks of job name a model (a third
// part: "nvidia/gpu/H100", "nvidia/gpu/1g.10gb") that no node of the
// cluster has: the job would wait for one to join.
func deviceWarnings(st *state.StateStore, job *api.Job) ([]string, error) {
	var asks []string
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t == nil || t.Resources == nil {
				continue
			}
			for _, d := range t.Resources.Devices {
				if d != nil && strings.Count(d.Name, "/") == 2 {
					asks = append(asks, d.Name)
				}
			}
		}
	}
	if len(asks) == 0 {
		return nil, nil
	}
	models, err := clusterModels(st)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range dedupe(asks) {
		if !slices.ContainsFunc(models, func(d *api.NodeDeviceResource) bool { return d.Matches(a) }) {
			out = append(out, fmt.Sprintf("device %q: no node has a model matching it; the job waits until one joins%s", a, knownModels(models, sameKind(a))))
		}
	}
	return out, nil
}

// clusterModels is one device group of each vendor/type/name on the
// cluster's nodes (any status: a model on a down node is still known).
func clusterModels(st *state.StateStore) ([]*api.NodeDeviceResource, error) {
	nodes, err := st.Nodes(nil, "")
	if err != nil {
		return nil, fmt.Errorf("read nodes: %w", err)
	}
	seen := map[string]bool{}
	var out []*api.NodeDeviceResource
	for _, n := range nodes {
		if n.NodeResources == nil {
			continue
		}
		for _, d := range n.NodeResources.Devices {
			if d != nil && !seen[d.ID()] {
				seen[d.ID()] = true
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out, nil
}

// knownModels renders the models keep accepts as "; known: NVIDIA H100
// 80GB HBM3 (H100, H100-80GB), ..." (at most maxKnownModels), or "; no
// node has one" when none is.
func knownModels(models []*api.NodeDeviceResource, keep func(*api.NodeDeviceResource) bool) string {
	var names []string
	for _, d := range models {
		if keep(d) {
			names = append(names, api.GPUModelLabel(d))
		}
	}
	if len(names) == 0 {
		return "; no node has one"
	}
	more := ""
	if len(names) > maxKnownModels {
		more = fmt.Sprintf(" and %d more", len(names)-maxKnownModels)
		names = names[:maxKnownModels]
	}
	return "; known: " + strings.Join(names, ", ") + more
}

// sameKind keeps the device groups of ask's vendor and type; a GPU ask
// ("nvidia/gpu/...") keeps MIG groups too, which it may name by profile.
func sameKind(ask string) func(*api.NodeDeviceResource) bool {
	vendor, rest, _ := strings.Cut(ask, "/")
	typ, _, _ := strings.Cut(rest, "/")
	return func(d *api.NodeDeviceResource) bool {
		return d.Vendor == vendor && (d.Type == typ || typ == api.DeviceTypeGPU && d.Type == api.DeviceTypeMIG)
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}
