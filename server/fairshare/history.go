package fairshare

import (
	"maps"
	"math"
	"time"

	"github.com/drover/drover/api"
)

// History is the decayed past usage of every queue: Level[q] is the
// exponentially weighted mean of the dominant share q's subtree held
// (a fraction of the capacity, in [0, 1]), weights halving every
// Config.HalfLife into the past. The zero History has no past.
type History struct {
	At    time.Time          `json:"At"`
	Level map[string]float64 `json:"Level,omitempty"`
}

// Advance returns the history at now, the queues having held levels
// (their dominant shares, Shares.Levels) since h.At: with f =
// 2^(-(now-At)/HalfLife), Level' = f*Level + (1-f)*level (a queue absent
// from levels held 0). A nil h, or now not after h.At, starts or keeps
// the history without decay. h is not modified.
func (h *History) Advance(cfg Config, now time.Time, levels map[string]float64) *History {
	out := &History{At: now, Level: map[string]float64{}}
	if h == nil || h.At.IsZero() {
		maps.Copy(out.Level, levels)
		return out
	}
	dt := now.Sub(h.At)
	if dt <= 0 {
		out.At = h.At
		maps.Copy(out.Level, h.Level)
		return out
	}
	f := math.Exp2(-float64(dt) / float64(cfg.halfLife()))
	for q, l := range h.Level {
		out.Level[q] = f * l
	}
	for q, l := range levels {
		out.Level[q] += (1 - f) * l
	}
	for q, l := range out.Level {
		if l < 1e-12 {
			delete(out.Level, q) // forgotten
		}
	}
	return out
}

// Names returns every queue of the calculation, sorted.
func (s *Shares) Names() []string { return s.names }

// Share is q's fair share (its subtree's), rounded down; nil for a queue
// the calculation did not see.
func (s *Shares) Share(q string) *api.QueueResources {
	n := s.nodes[queueName(q)]
	if n == nil {
		return nil
	}
	r := s.sp.resources(n.share)
	if d := n.demandGPU; d > 0 && r.GPUs > 0 {
		for _, m := range sortedKeys(n.demandModels) {
			if k := floorGPUs(r.GPUs * n.demandModels[m] / d); k > 0 {
				if r.GPUsByModel == nil {
					r.GPUsByModel = map[string]float64{}
				}
				r.GPUsByModel[m] = k
			}
		}
	}
	return r
}

// Levels returns every queue's dominant share allocated (its subtree's),
// for History.Advance.
func (s *Shares) Levels() map[string]float64 {
	out := make(map[string]float64, len(s.nodes))
	for name, n := range s.nodes {
		if l := s.sp.dom(n.alloc); l > 0 {
			out[name] = l
		}
	}
	return out
}

// Level returns the dominant shares that q's own jobs hold (alloc) and
// should get (fair); 0, 0 for an unknown queue.
func (s *Shares) Level(q string) (alloc, fair float64) {
	n := s.own[queueName(q)]
	if n == nil {
		return 0, 0
	}
	if len(n.children) > 0 { // an inner queue without jobs of its own
		return s.sp.dom(n.ownAlloc), 0
	}
	return s.sp.dom(n.ownAlloc), s.sp.dom(n.share)
}

// Deficit is how far q's own jobs are below their fair share, in dominant
// share (fair - alloc; negative above it). The broker serves the largest
// deficit first.
func (s *Shares) Deficit(q string) float64 {
	a, f := s.Level(q)
	return f - a
}

func queueName(q string) string {
	if q == "" {
		return api.DefaultQueue
	}
	return q
}
