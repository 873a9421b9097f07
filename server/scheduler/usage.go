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
	// shapeIdx numbers the workload shapes entries keep their usable
	// capacity for (usageEntry.usable); shapeGen counts its restarts.
	shapeIdx map[shapeKey]int32
	shapeGen uint64
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

	// The node's idle GPUs as the scarcity weighting (scarcity.go) reads
	// them, filled on first use: free is each GPU's free thousandths, idle
	// their sum, whole the wholly free ones; usable[k] what asks of the
	// cache's shape k could use (usableBy), -1 until computed, for the
	// shape numbering of generation gen. Guarded by mu.
	mu     sync.Mutex
	read   bool
	free   []int
	whole  int
	idle   int64
	gen    uint64
	usable []int32
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
	ns.cap, ns.capShared, ns.usage = e.cap, true, e
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

// shapeIndexMax bounds the shapes numbered; past it the numbering starts
// over (a new generation) and entries recompute their usable capacity.
const shapeIndexMax = 4096

// shapeIndex numbers the shapes (the same shape the same number across
// passes, within a generation) and returns the numbers and generation.
func (c *UsageCache) shapeIndex(shapes []WorkloadShape) ([]int32, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	missing := 0
	for _, s := range shapes {
		if _, ok := c.shapeIdx[s.key()]; !ok {
			missing++
		}
	}
	if c.shapeIdx == nil || len(c.shapeIdx)+missing > shapeIndexMax {
		c.shapeIdx = map[shapeKey]int32{}
		c.shapeGen++
	}
	idx := make([]int32, len(shapes))
	for i, s := range shapes {
		k := s.key()
		n, ok := c.shapeIdx[k]
		if !ok {
			n = int32(len(c.shapeIdx))
			c.shapeIdx[k] = n
		}
		idx[i] = n
	}
	return idx, c.shapeGen
}

// addSupply adds to supply[i] what asks of shapes[i] (numbered idx[i] in
// generation gen) could use of the node's idle GPUs, computing what the
// entry does not know yet, and returns the node's idle GPU thousandths.
func (e *usageEntry) addSupply(supply []int64, shapes []WorkloadShape, idx []int32, gen uint64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.read {
		e.free = gpuFreeOf(e.node, e.cap, nil).milli
		e.whole, e.idle = wholeIdle(e.free)
		e.read = true
	}
	if e.gen != gen {
		e.gen, e.usable = gen, e.usable[:0]
	}
	u := e.cap.Used()
	cpu, mem := e.cap.CPU-u.CPU, e.cap.MemoryMB-u.MemoryMB
	for i, s := range shapes {
		k := int(idx[i])
		for len(e.usable) <= k {
			e.usable = append(e.usable, -1)
		}
		if e.usable[k] < 0 {
			e.usable[k] = int32(usableBy(s, e.free, e.whole, cpu, mem))
		}
		supply[i] += int64(e.usable[k])
	}
	return e.idle
}
