package fairshare

import (
	"math"
	"slices"

	"github.com/drover/drover/api"
)

// Fixed dimensions of a resource vector; GPU models follow from dimModel.
const (
	dimGPU = iota
	dimCPU
	dimMem
	dimModel
)

// eps is the tolerance of the float comparisons, relative to capacity.
const eps = 1e-9

// vec is an amount of every dimension of a space.
type vec []float64

// space names the dimensions and holds the cluster's capacity in each.
//
// GPU models are not dimensions of their own: an ask that names no model
// (most do not) would leave the per-model amounts inconsistent with the
// total, and a queue would look dominant in a model it cannot use. Shares
// are computed on the total GPUs; Shares.Share splits a share by model in
// proportion to the queue's demand (models stays empty: the vector code
// keeps room for model dimensions should asks ever always name one).
type space struct {
	models []string // sorted; empty (see above)
	cap    vec
}

func newSpace(c api.QueueResources) *space {
	sp := &space{}
	sp.cap = sp.of(&c)
	return sp
}

func (sp *space) zero() vec { return make(vec, dimModel+len(sp.models)) }

// of converts resources to a vector (models the space does not know are
// dropped: there is no capacity for them).
func (sp *space) of(r *api.QueueResources) vec {
	v := sp.zero()
	if r == nil {
		return v
	}
	v[dimGPU], v[dimCPU], v[dimMem] = float64(r.GPUs), float64(r.CPU), float64(r.MemoryMB)
	for i, m := range sp.models {
		v[dimModel+i] = float64(r.GPUsByModel[m])
	}
	return v
}

// inf is a vector of +Inf (no limit).
func (sp *space) inf() vec {
	v := sp.zero()
	for i := range v {
		v[i] = math.Inf(1)
	}
	return v
}

// resources converts v back, rounding down (GPUs to thousandths, the
// grain of shares: a share of 2.9996 GPUs is 2.999).
func (sp *space) resources(v vec) *api.QueueResources {
	r := &api.QueueResources{GPUs: floorGPUs(v[dimGPU]), CPU: int64(v[dimCPU] + eps), MemoryMB: int64(v[dimMem] + eps)}
	for i, m := range sp.models {
		if n := floorGPUs(v[dimModel+i]); n > 0 {
			if r.GPUsByModel == nil {
				r.GPUsByModel = map[string]float64{}
			}
			r.GPUsByModel[m] = n
		}
	}
	return r
}

// dom is v's dominant share: max over dimensions with capacity of
// v_r/C_r.
func (sp *space) dom(v vec) float64 {
	d := 0.0
	for r, c := range sp.cap {
		if c > 0 {
			d = max(d, v[r]/c)
		}
	}
	return d
}

// tol is the absolute tolerance of dimension r.
func (sp *space) tol(r int) float64 { return eps * max(1, sp.cap[r]) }

func (v vec) add(o vec) vec {
	out := slices.Clone(v)
	for i := range out {
		out[i] += o[i]
	}
	return out
}

func (v vec) sub(o vec) vec {
	out := slices.Clone(v)
	for i := range out {
		out[i] -= o[i]
	}
	return out
}

func vmin(a, b vec) vec {
	out := slices.Clone(a)
	for i := range out {
		out[i] = min(out[i], b[i])
	}
	return out
}

// clampZero sets negative (rounding) components to 0.
func (v vec) clampZero() vec {
	for i := range v {
		if v[i] < 0 {
			v[i] = 0
		}
	}
	return v
}

// floorGPUs rounds a GPU amount down to thousandths.
func floorGPUs(g float64) float64 {
	return math.Floor((g+eps)*api.MilliPerDevice) / api.MilliPerDevice
}
