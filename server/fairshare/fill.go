package fairshare

import "math"

// filler is one weighted dominant-resource progressive filling: members
// i grow t_i (their extra dominant share) at rate[i] along dir[i] (the
// amount per unit of dominant share) until t_i reaches tmax[i] or a row
// they use runs out.
type filler struct {
	rate []float64
	dir  []vec
	tmax []float64
	rows []row
}

// row is one constraint: Σ over members i of dir[i][dim]*t_i <= cap.
type row struct {
	dim     int
	cap     float64
	members []int // nil: every member
	tol     float64
}

// member adds a member wanting remaining (its unmet demand) at rate.
// Members wanting nothing, or with no rate, never grow.
func (f *filler) member(sp *space, remaining vec, rate float64) {
	d := sp.dom(remaining)
	dir := sp.zero()
	if d > 0 {
		for r := range dir {
			dir[r] = remaining[r] / d
		}
	}
	if rate <= 0 {
		d = 0
	}
	f.rate = append(f.rate, rate)
	f.dir = append(f.dir, dir)
	f.tmax = append(f.tmax, d)
}

// capacity adds one row per dimension of sp: the members may use at most
// free together.
func (f *filler) capacity(sp *space, free vec) {
	for r := range free {
		f.rows = append(f.rows, row{dim: r, cap: max(free[r], 0), tol: sp.tol(r)})
	}
}

// run fills and returns each member's extra amount (t_i * dir[i]).
//
// Invariants: t_i only grows, never past tmax[i]; no row's use exceeds
// its cap (beyond float tolerance); every step freezes at least one
// member, so it ends after at most len(members) steps; when it ends every
// member has its tmax or uses some row that is full (no idle capacity is
// left that a member still growing could use).
func (f *filler) run() []vec {
	n := len(f.rate)
	t := make([]float64, n)
	active := make([]bool, n)
	left := 0
	for i := range active {
		if f.tmax[i] > 0 {
			active[i], left = true, left+1
		}
	}
	each := func(rw *row, fn func(i int)) {
		if rw.members == nil {
			for i := 0; i < n; i++ {
				fn(i)
			}
			return
		}
		for _, i := range rw.members {
			fn(i)
		}
	}
	for left > 0 {
		step := math.Inf(1)
		arg, argRow := -1, -1
		for i := 0; i < n; i++ {
			if active[i] {
				if s := (f.tmax[i] - t[i]) / f.rate[i]; s < step {
					step, arg = s, i
				}
			}
		}
		for k := range f.rows {
			rw := &f.rows[k]
			used, speed := 0.0, 0.0
			each(rw, func(i int) {
				a := f.dir[i][rw.dim]
				used += a * t[i]
				if active[i] {
					speed += a * f.rate[i]
				}
			})
			if speed > 0 {
				if s := (rw.cap - used) / speed; s < step {
					step, arg, argRow = s, -1, k
				}
			}
		}
		step = max(step, 0)
		for i := 0; i < n; i++ {
			if active[i] {
				t[i] = min(t[i]+f.rate[i]*step, f.tmax[i])
			}
		}
		frozen := 0
		freeze := func(i int) {
			if active[i] {
				active[i] = false
				frozen++
			}
		}
		for i := 0; i < n; i++ {
			if active[i] && t[i] >= f.tmax[i]*(1-eps) {
				t[i] = f.tmax[i]
				freeze(i)
			}
		}
		for k := range f.rows {
			rw := &f.rows[k]
			used := 0.0
			each(rw, func(i int) { used += f.dir[i][rw.dim] * t[i] })
			if used >= rw.cap-rw.tol {
				each(rw, func(i int) {
					if f.dir[i][rw.dim] > 0 {
						freeze(i)
					}
				})
			}
		}
		// Float corners: freeze what bounded the step.
		if frozen == 0 && arg >= 0 {
			freeze(arg)
		}
		if frozen == 0 && argRow >= 0 {
			rw := &f.rows[argRow]
			each(rw, func(i int) {
				if f.dir[i][rw.dim] > 0 {
					freeze(i)
				}
			})
		}
		if frozen == 0 {
			break // nothing can grow further
		}
		left -= frozen
	}
	out := make([]vec, n)
	for i := range out {
		out[i] = make(vec, len(f.dir[i]))
		for r := range out[i] {
			out[i][r] = f.dir[i][r] * t[i]
		}
	}
	return out
}
