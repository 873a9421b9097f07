package scheduler

import (
	"maps"
	"slices"
	"sync"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/capacity"
)

// UsageCache keeps each node's live allocs and their usage between
// passes, so a pass does not add up every alloc of every node it looks
// at again. An entry is used only while the state names the same version
// of the node's allocs (VersionedState) and the node is the same object:
// state objects are never modified, so equal versions hold equal allocs.
// Safe for concurrent use; the server keeps one for its workers.
type UsageCache struct {
	mu sync.Mutex
	m  map[string]*usageEntry
}

// VersionedState is a State that names the version of a node's allocs:
// a comparable value that changes whenever an alloc on the node is
// written or deleted (the state store's watch channel of the node's
// allocs). Passes over other States use no UsageCache.
type VersionedState interface {
	State
	NodeAllocsVersion(nodeID string) (any, error)
}

type usageEntry struct {
	node    *api.Node
	version any
	live    []*api.Allocation         // not terminal
	cap     *capacity.Node            // with live counted; never modified (nodeState.ownCap)
	jobs    map[jobKey]map[string]int // live allocs by job and group
}

type jobKey struct{ ns, id string }

// usageCacheMax bounds the entries; past it the cache starts over.
const usageCacheMax = 100_000

// NewUsageCache returns an empty cache.
func NewUsageCache() *UsageCache { return &UsageCache{m: map[string]*usageEntry{}} }

func (c *UsageCache) get(id string, node *api.Node, version any) *usageEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[id]; e != nil && e.node == node && e.version == version {
		return e
	}
	return nil
}

func (c *UsageCache) put(id string, e *usageEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= usageCacheMax {
		clear(c.m)
	}
	c.m[id] = e
}

// loadCached is load through the cache; ok is false when the pass cannot
// use it (no cache, an unversioned state, a read error, allocs this plan
// stops).
func (l *ledger) loadCached(ns *nodeState) (ok bool) {
	c := l.env.opts.Usage
	vs, versioned := l.env.st.(VersionedState)
	if c == nil || !versioned {
		return false
	}
	id := ns.node.ID
	ver, err := vs.NodeAllocsVersion(id)
	if err != nil {
		l.env.err = err
		return false // the slow path gives the node its usage
	}
	e := c.get(id, ns.node, ver)
	if e == nil {
		allocs, err := l.env.st.AllocsByNode(id)
		if err != nil {
			l.env.err = err
			return false
		}
		e = &usageEntry{node: ns.node, version: ver, cap: capacity.NewNode(ns.node)}
		for _, a := range allocs {
			if a.TerminalStatus() {
				continue
			}
			e.live = append(e.live, a)
			v := capacity.AllocVector(a.AllocatedResources)
			e.cap.Add(&v)
			k := jobKey{a.Namespace, a.JobID}
			if e.jobs == nil {
				e.jobs = map[jobKey]map[string]int{}
			}
			if e.jobs[k] == nil {
				e.jobs[k] = map[string]int{}
			}
			e.jobs[k][a.TaskGroup]++
		}
		e.live = slices.Clip(e.live) // a pass's append copies, never writes here
		c.put(id, e)
	}
	if len(l.stopped) > 0 {
		for _, a := range e.live {
			if l.stopped[a.ID] {
				return false // the slow path leaves them out
			}
		}
	}
	ns.cap, ns.capShared = e.cap, true
	ns.allocs = e.live // clipped: changes copy (insertAlloc, removeAlloc)
	if job := l.env.job; job != nil {
		if tg := e.jobs[jobKey{job.Namespace, job.ID}]; tg != nil {
			ns.jobTG = maps.Clone(tg)
			for _, n := range tg {
				ns.jobTotal += n
			}
		}
	}
	return true
}
