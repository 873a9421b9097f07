package fairshare

import (
	"math"

	"github.com/drover/drover/api"
)

// Tally is one scheduling pass's view of what each queue's own jobs hold,
// starting from the Shares' allocations and updated as the pass places
// (Add) and evicts (Sub). The fair shares stay fixed. Not safe for
// concurrent use.
type Tally struct {
	s     *Shares
	alloc map[string]vec
}

// Tally starts a pass's tally.
func (s *Shares) Tally() *Tally {
	t := &Tally{s: s, alloc: make(map[string]vec, len(s.own))}
	for name, n := range s.own {
		t.alloc[name] = n.ownAlloc
	}
	return t
}

// Add counts r as held by q's jobs.
func (t *Tally) Add(q string, r *api.QueueResources) {
	q = queueName(q)
	t.alloc[q] = t.get(q).add(t.s.sp.of(r))
}

// Sub counts r as no longer held by q's jobs.
func (t *Tally) Sub(q string, r *api.QueueResources) {
	q = queueName(q)
	t.alloc[q] = t.get(q).sub(t.s.sp.of(r)).clampZero()
}

func (t *Tally) get(q string) vec {
	if v, ok := t.alloc[q]; ok {
		return v
	}
	return t.s.sp.zero()
}

// fair is q's own fair dominant share (0 for an unknown queue).
func (t *Tally) fair(q string) float64 {
	_, f := t.s.Level(q)
	return f
}

// level is q's dominant share held now.
func (t *Tally) level(q string) float64 { return t.s.sp.dom(t.get(q)) }

// Below reports whether q's jobs hold less than q's fair share.
func (t *Tally) Below(q string) bool {
	q = queueName(q)
	return t.level(q) < t.fair(q)-eps
}

// Above reports whether q's jobs hold more than q's fair share: only
// such queues' allocs may be reclaimed.
func (t *Tally) Above(q string) bool {
	q = queueName(q)
	return t.level(q) > t.fair(q)+eps
}

// Reclaim reports whether queue q may place ask by evicting victims (what
// the evicted allocs hold, by their queue; q's own may be among them,
// evicted by job priority). A reclaim (any victim of another queue) is
// allowed only when
//
//   - q is below its fair share,
//   - every other victim queue is above its share and stays at or above
//     it without the victims, and
//   - Φ = Σ |L - F| over the queues involved (L: dominant share held, F:
//     dominant fair share) strictly decreases.
//
// This is the no-loop invariant: every allowed reclaim lowers Φ, which
// depends only on what the queues hold, so no sequence of reclaims can
// come back to a state it left (no alloc is preempted back and forth)
// and reclaims stop once no queue can come closer to its share. A set
// of only q's own allocs is not a reclaim (true: priority preemption
// inside the queue is the scheduler's rule).
func (t *Tally) Reclaim(q string, ask *api.QueueResources, victims map[string]*api.QueueResources) bool {
	q = queueName(q)
	sp := t.s.sp
	other := false
	for v := range victims {
		if queueName(v) != q {
			other = true
		}
	}
	if !other {
		return true
	}
	if !t.Below(q) {
		return false
	}
	mine := t.get(q).add(sp.of(ask))
	drop := 0.0 // Φ's decrease
	for v, r := range victims {
		v = queueName(v)
		if v == q {
			mine = mine.sub(sp.of(r)).clampZero()
			continue
		}
		f, l := t.fair(v), t.level(v)
		after := sp.dom(t.get(v).sub(sp.of(r)).clampZero())
		if l <= f+eps || after < f-eps {
			return false
		}
		drop += l - after // |L-F| shrinks by exactly that: V stays at or above F
	}
	fq := t.fair(q)
	drop += math.Abs(t.level(q)-fq) - math.Abs(sp.dom(mine)-fq)
	return drop > eps
}
