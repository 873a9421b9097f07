package scheduler

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/drover/drover/api"
)

// passEnv is what every stage of one pass reads: the state snapshot, the
// eval, the options, the job (nil when gone) and the context, plus the
// generator of the pass's IDs and dynamic ports (seeded from the eval ID
// and the snapshot index). err is the pass's first error (a state read
// failed, the context ended): any stage may set it, and every loop stops
// at its next check.
type passEnv struct {
	st   State
	eval *api.Evaluation
	opts Options
	job  *api.Job
	err  error
	// ctx is the pass's context (ScheduleContext); done is its Done
	// channel, nil when it cannot end (see cancelled).
	ctx  context.Context
	done <-chan struct{}

	rng      *rand.Rand
	shuffleK uint64 // seed of the node shuffle (ledger.loadNodes)
}

// cancelled reports whether the pass's context ended, recording its
// error as the pass's. Placement loops check it before each placement (a
// non-blocking receive: cheap enough for every one).
func (e *passEnv) cancelled() bool {
	select {
	case <-e.done:
		if e.err == nil {
			e.err = fmt.Errorf("placement stopped: %w", e.ctx.Err())
		}
		return true
	default:
		return false
	}
}

// newID returns a random UUID v4 from the pass's seeded generator.
func (e *passEnv) newID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], e.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], e.rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[c>>4], hex[c&0xf]
		j += 2
	}
	return string(out)
}

// preemptionEnabled reports whether the job's type may evict allocs of
// lower-priority jobs (Options.Preemption).
func (e *passEnv) preemptionEnabled() bool {
	cfg := DefaultPreemptionConfig
	if e.opts.Preemption != nil {
		cfg = *e.opts.Preemption
	}
	switch e.job.Type {
	case api.JobTypeSystem:
		return cfg.SystemSchedulerEnabled
	case api.JobTypeSysBatch:
		return cfg.SysBatchSchedulerEnabled
	case api.JobTypeBatch:
		return cfg.BatchSchedulerEnabled
	default:
		return cfg.ServiceSchedulerEnabled
	}
}

// output is what the pass has decided so far: the plan and the result
// being built, the failed groups' metrics and what the blocked eval needs.
// It is a record the stages write; it decides nothing itself.
type output struct {
	plan *api.Plan
	res  *Result
	// failed and queued become the eval's FailedTGAllocs and
	// QueuedAllocations.
	failed map[string]*api.AllocMetric
	queued map[string]int
	// noRetry: failed groups not to retry (timed-out gangs, groups over
	// the count limit): no blocked eval for them.
	noRetry map[string]bool
	notes   []string // for the eval's status description (gang timeouts)
	// class is the blocked eval's ClassEligibility (computed class ->
	// eligible for some group); escape its EscapedComputedClass (a
	// constraint on unique node data or a queue limit: any node may help).
	class  map[string]bool
	escape bool
}

// annotate returns the group's DesiredUpdates annotation, creating it.
func (o *output) annotate(group string) *api.DesiredUpdates {
	if o.plan.Annotations == nil {
		o.plan.Annotations = &api.PlanAnnotations{DesiredTGUpdates: map[string]*api.DesiredUpdates{}}
	}
	d := o.plan.Annotations.DesiredTGUpdates[group]
	if d == nil {
		d = &api.DesiredUpdates{}
		o.plan.Annotations.DesiredTGUpdates[group] = d
	}
	return d
}

// stop adds a stop of a to the plan and returns the plan's copy (node
// usage is the ledger's: see placer.stop).
func (o *output) stop(a *api.Allocation, desc, clientStatus string, now int64) *api.Allocation {
	o.plan.AppendStoppedAlloc(a, desc, clientStatus)
	list := o.plan.NodeUpdate[a.NodeID]
	c := list[len(list)-1]
	c.ModifyTime = now
	return c
}

// dropUpdate takes an in-place update of a back out of the plan (the
// alloc is stopped instead: the applier writes placements after stops,
// so the update would revive it). It reports whether there was one.
func (o *output) dropUpdate(a *api.Allocation) bool {
	return removeFromNode(o.plan.NodeAllocation, a)
}

// unstop takes a's stop back out of the plan.
func (o *output) unstop(a *api.Allocation) { removeFromNode(o.plan.NodeUpdate, a) }

// removeFromNode takes a out of its node's list in m (a plan's
// NodeAllocation or NodeUpdate), dropping the node when its list empties,
// and reports whether a was there.
func removeFromNode(m map[string][]*api.Allocation, a *api.Allocation) bool {
	list := m[a.NodeID]
	i := slices.IndexFunc(list, func(c *api.Allocation) bool { return c.ID == a.ID })
	if i < 0 {
		return false
	}
	if list = append(list[:i:i], list[i+1:]...); len(list) == 0 {
		delete(m, a.NodeID)
	} else {
		m[a.NodeID] = list
	}
	return true
}

// recordEvictions adds the victims (already released from node usage) to
// the plan as preempted by a, each on its own node's NodePreemptions. It
// is the one place preemptions enter the plan (a gang or all-at-once
// attempt calls it only for placements it keeps).
func (o *output) recordEvictions(a *api.Allocation, victims []*api.Allocation, now int64) {
	d := o.annotate(a.TaskGroup)
	for _, v := range victims {
		c := v.Copy()
		c.DesiredStatus = api.AllocDesiredStatusEvict
		c.DesiredDescription = "preempted by alloc " + a.ID
		c.PreemptedByAllocation = a.ID
		c.ModifyTime = now
		if o.plan.NodePreemptions == nil {
			o.plan.NodePreemptions = map[string][]*api.Allocation{}
		}
		o.plan.NodePreemptions[v.NodeID] = append(o.plan.NodePreemptions[v.NodeID], c)
		a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
		o.plan.Annotations.PreemptedAllocs = append(o.plan.Annotations.PreemptedAllocs, v.Stub())
		d.Preemptions++
	}
}
