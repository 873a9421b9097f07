package api

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Queue is a share of the cluster that jobs name (job.Queue): what its
// jobs may always use (Guaranteed), may never exceed (Limit), and how it
// competes for what is left (Weight, Priority). Queues form a tree by
// Parent; a name with slashes ("team-a/train") has the part before its
// last slash as its parent.
type Queue struct {
	Name        string `json:"Name"`
	Parent      string `json:"Parent,omitempty"`
	Description string `json:"Description,omitempty"`
	// Guaranteed is always available to the queue's jobs (reclaimed by
	// preemption from queues that borrowed it).
	Guaranteed *QueueResources `json:"Guaranteed,omitempty"`
	// Limit caps what the queue's running allocs hold (nil: no cap).
	Limit *QueueResources `json:"Limit,omitempty"`
	// Weight is the queue's share of capacity beyond guarantees among its
	// siblings (default 1).
	Weight int `json:"Weight,omitempty"`
	// Priority orders sibling queues for capacity beyond guarantees
	// before weights do (higher first; default 0).
	Priority int `json:"Priority,omitempty"`
	// IdleTimeout is the queue's jobs' default idle_timeout (api.GPUUsage:
	// allocs holding GPUs at ~0% utilization that long are idle); 0: none.
	IdleTimeout time.Duration `json:"IdleTimeout,omitempty"`
	// IdleAction is what happens to an idle alloc: IdleActionFlag ("" too),
	// IdleActionStop or IdleActionPreempt.
	IdleAction  string `json:"IdleAction,omitempty"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// QueueResources is an amount of the resources queues account: GPUs (any
// model, and per model; a share of a GPU counts as its fraction, kept to
// thousandths), CPU in MHz and memory in MB. A zero field means none of
// that resource. What allocs hold is keyed by the device group's
// "vendor/gpu/<NVML name>"; a guarantee's or limit's key may be a short
// name ("H100", "nvidia/gpu/H100") and counts every model it names
// (GPUModelKeyMatches, ModelGPUs).
type QueueResources struct {
	GPUs        float64            `json:"GPUs,omitempty"`
	GPUsByModel map[string]float64 `json:"GPUsByModel,omitempty"`
	CPU         int64              `json:"CPU,omitempty"`
	MemoryMB    int64              `json:"MemoryMB,omitempty"`
}

// QueueUpsertRequest is the body of PUT /v1/queues.
type QueueUpsertRequest struct {
	Queues []*Queue `json:"Queues"`
}

// QueueUpsertResponse answers PUT /v1/queues when there is something to
// say (otherwise the answer is null): Warnings, one per line, about what
// was applied but may not work as written, such as a gpu_models key no
// node's GPU matches yet.
type QueueUpsertResponse struct {
	Warnings string `json:"Warnings,omitempty"`
}

// DefaultQueue is the queue of jobs that name none.
const DefaultQueue = "default"

// queueName is compiled on first use, as namespaceName.
var queueName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}(/[a-zA-Z0-9_-]{1,64}){0,7}$`) })

// ValidQueueName reports whether name is 1 to 8 slash-separated parts of
// letters, digits, - and _ (each at most 64).
func ValidQueueName(name string) bool { return queueName().MatchString(name) }

// ParentOf is the parent a queue's name implies ("" for a top queue).
func ParentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// Validate checks a queue a user writes (not its place in the tree,
// which the server checks against the other queues).
func (q *Queue) Validate() error {
	if q == nil {
		return Errorf(ErrBadRequest, "queue: missing")
	}
	if !ValidQueueName(q.Name) {
		return Errorf(ErrBadRequest, fmt.Sprintf("queue name %q: want 1 to 8 slash-separated parts of letters, digits, - or _", q.Name))
	}
	if p := ParentOf(q.Name); q.Parent != "" && q.Parent != p || q.Parent == "" && p != "" {
		return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: parent must be %q (the name's prefix), not %q", q.Name, p, q.Parent))
	}
	if q.Weight < 0 || q.Weight > 1000 {
		return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: weight %d out of range [0, 1000] (0 means 1)", q.Name, q.Weight))
	}
	switch q.IdleAction {
	case "", IdleActionFlag, IdleActionStop, IdleActionPreempt:
	default:
		return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: idle_action %q: want flag, stop or preempt", q.Name, q.IdleAction))
	}
	if q.IdleTimeout < 0 {
		return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: idle_timeout %s: want 0 or more", q.Name, q.IdleTimeout))
	}
	if len(q.Description) > 256 {
		return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: description over 256 bytes", q.Name))
	}
	for what, r := range map[string]*QueueResources{"guaranteed": q.Guaranteed, "limit": q.Limit} {
		if r == nil {
			continue
		}
		if r.GPUs < 0 || r.CPU < 0 || r.MemoryMB < 0 {
			return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: %s: negative amount", q.Name, what))
		}
		for m, n := range r.GPUsByModel {
			if n < 0 || m == "" {
				return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: %s: bad GPU model amount %q = %s", q.Name, what, m, FormatGPUs(n)))
			}
		}
	}
	if g, l := q.Guaranteed, q.Limit; g != nil && l != nil {
		if g.GPUs > l.GPUs && l.GPUs > 0 || g.CPU > l.CPU && l.CPU > 0 || g.MemoryMB > l.MemoryMB && l.MemoryMB > 0 {
			return Errorf(ErrBadRequest, fmt.Sprintf("queue %q: guaranteed is above the limit", q.Name))
		}
	}
	return nil
}

// EffectiveWeight is Weight, or 1 when unset.
func (q *Queue) EffectiveWeight() int {
	if q.Weight <= 0 {
		return 1
	}
	return q.Weight
}

// Copy returns a deep copy.
func (q *Queue) Copy() *Queue {
	if q == nil {
		return nil
	}
	return deepCopy(q)
}
