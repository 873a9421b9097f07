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
	u     float64 // util(alloc), valid while uOK (Add and Sub clear it)
	uOK   bool
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
	t.uOK = false
}

// Sub counts r as no longer held by q's jobs.
func (t *Tally) Sub(q string, r *api.QueueResources) {
	q = queueName(q)
	t.alloc[q] = t.get(q).sub(t.s.sp.of(r)).clampZero()
	t.uOK = false
}

// now is util of what the queues hold now (cached).
func (t *Tally) now() float64 {
	if !t.uOK {
		t.u, t.uOK = t.util(t.alloc), true
	}
	return t.u
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

// util is U = Σ L / Σ F over the queues (at most 1), with alloc's
// levels: how much of the fair shares the queues hold together. Below 1
// the cluster's capacity is not all usable by the asks at hand
// (fragmentation: a reclaim is only tried for an ask that fits in no
// free capacity), and the shares that matter are the fair shares of what
// is held, F*U.
func (t *Tally) util(alloc map[string]vec) float64 {
	var l, f float64
	for _, q := range sortedKeys(alloc) { // sorted: float sums are deterministic
		l += t.s.sp.dom(alloc[q])
		f += t.fair(q)
	}
	if f <= 0 {
		return 1
	}
	return min(l/f, 1)
}

// phi is the distance from fairness Σ |L - F*U| of alloc.
func (t *Tally) phi(alloc map[string]vec) float64 {
	u := t.util(alloc)
	d := 0.0
	for _, q := range sortedKeys(alloc) {
		d += math.Abs(t.s.sp.dom(alloc[q]) - u*t.fair(q))
	}
	return d
}

// Below reports whether q's jobs hold less than q's fair share of what
// the queues hold (F*U, see util).
func (t *Tally) Below(q string) bool {
	q = queueName(q)
	return t.level(q) < t.now()*t.fair(q)-eps
}

// Above reports whether q's jobs hold more than q's fair share of what
// the queues hold: only such queues' allocs may be reclaimed.
func (t *Tally) Above(q string) bool {
	q = queueName(q)
	return t.level(q) > t.now()*t.fair(q)+eps
}

// Reclaim reports whether queue q may place ask by evicting victims (what
// the evicted allocs hold, by their queue; q's own may be among them,
// evicted by job priority). A reclaim (any victim of another queue) is
// allowed only when
//
//   - q is below its fair share (of what is held: F*U, see util),
//   - every other victim queue is above its share and stays at or above
//     it without the victims, and
//   - Φ = Σ |L - F*U| over the queues (L: dominant share held, F:
//     dominant fair share) strictly decreases.
//
// This is the no-loop invariant: every allowed reclaim lowers Φ, which
// depends only on what the queues hold (the shares are fixed while the
// demands are: an evicted alloc's work stays pending), so no sequence of
// reclaims can come back to a state it left (no alloc is preempted back
// and forth) and reclaims stop once no queue can come closer to its
// share. A set of only q's own allocs is not a reclaim (true: priority
// preemption inside the queue is the scheduler's rule).
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
	after := make(map[string]vec, len(t.alloc)+1)
	for k, v := range t.alloc {
		after[k] = v
	}
	after[q] = t.get(q).add(sp.of(ask))
	for v, r := range victims {
		v = queueName(v)
		if v != q && !t.Above(v) {
			return false
		}
		base, ok := after[v]
		if !ok {
			base = sp.zero()
		}
		after[v] = base.sub(sp.of(r)).clampZero()
	}
	u := t.util(after)
	for v := range victims {
		if v = queueName(v); v != q && sp.dom(after[v]) < u*t.fair(v)-eps {
			return false // the victim's queue would drop below its share
		}
	}
	return t.phi(after) < t.phi(t.alloc)-eps
}

// Keeps reports whether evicting victims (by queue) for queue q keeps
// every victim queue other than q at or above its share of what is held,
// ignoring the ask: a necessary condition of Reclaim that a growing set
// of victims stops meeting, so a scheduler can build its victim set unit
// by unit.
func (t *Tally) Keeps(q string, victims map[string]*api.QueueResources) bool {
	q = queueName(q)
	sp := t.s.sp
	after := make(map[string]vec, len(t.alloc))
	for k, v := range t.alloc {
		after[k] = v
	}
	for v, r := range victims {
		v = queueName(v)
		if v == q {
			continue
		}
		base, ok := after[v]
		if !ok {
			base = sp.zero()
		}
		after[v] = base.sub(sp.of(r)).clampZero()
	}
	u := t.util(after)
	for v := range victims {
		if v = queueName(v); v != q && sp.dom(after[v]) < u*t.fair(v)-eps {
			return false
		}
	}
	return true
}
