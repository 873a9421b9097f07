package scheduler

import (
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/drover/drover/api"
)

// Fragmentation-aware GPU placement, after FGD ("Beware of Fragmentation",
// USENIX ATC '23): a GPU placement is scored by how much it grows the
// fragmentation the expected workload sees. A node's fragmentation for a
// shape of ask is its idle GPU capacity that such an ask could not use:
// all of it when the ask cannot be placed on the node at all (too few
// GPUs with room, or too little CPU or memory left beside them), else the
// idle part of the GPUs too full for it (a share) or not wholly free (a
// whole-GPU ask). The expected workload is the shapes of recent asks
// (Workload), weighted by how often they come. Unlike FGD, a shape counts
// CPU and memory too: GPUs stranded on a node whose CPU is gone are as
// lost as GPUs split too finely.

// WorkloadShape is one shape of GPU ask the workload makes, with its
// share of the asks.
type WorkloadShape struct {
	GPUs     int   // GPUs per alloc (1 for a share)
	Milli    int   // of each GPU: 1000 whole, less for a share
	CPU      int64 // MHz per alloc
	MemoryMB int64
	Weight   float64 // share of the asks, the shapes' weights sum to 1
}

// Workload is the recent GPU asks' shapes: each observed ask counts, and
// counts less the more asks came after it (an exponential decay over the
// number of asks, so the expected workload follows what is submitted).
// Safe for concurrent use.
type Workload struct {
	halfLife float64

	mu    sync.Mutex
	scale float64 // weights are stored divided by scale (lazy decay)
	w     map[shapeKey]float64
}

type shapeKey struct {
	gpus, milli int
	cpu, mem    int64 // rounded (shapeKeyOf)
}

// ShapeCoverage is the share of the recent asks' weight the shapes cover.
var ShapeCoverage = 1.0

// FitWeight is how much fragScore's fit term counts (the CPU and memory
// a GPU alloc leaves free on its node, over the largest node's) beside
// the growth of the fragmented share of the node's idle GPUs.
var FitWeight = 0.1

// workloadShapes bounds the distinct shapes kept (the lightest go).
const workloadShapes = 256

// NewWorkload returns a tracker whose observations lose half their weight
// after halfLife more asks (<= 0: 2,000).
func NewWorkload(halfLife int) *Workload {
	if halfLife <= 0 {
		halfLife = 2000
	}
	return &Workload{halfLife: float64(halfLife), scale: 1, w: map[shapeKey]float64{}}
}

// Reset forgets every observation.
func (w *Workload) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scale, w.w = 1, map[shapeKey]float64{}
}

// shapeKeyOf rounds an ask's CPU and memory (to 500 MHz and 1 GiB, up),
// so asks that differ a little share a shape.
func shapeKeyOf(gpus, milli int, cpu, mem int64) shapeKey {
	return shapeKey{gpus: gpus, milli: milli, cpu: (cpu + 499) / 500 * 500, mem: (mem + 1023) / 1024 * 1024}
}

// Observe counts the GPU asks of job: each group's allocs (Count of them)
// asking GPUs, by shape.
func (w *Workload) Observe(job *api.Job) {
	if job == nil {
		return
	}
	for _, tg := range job.TaskGroups {
		if tg == nil || tg.Count <= 0 {
			continue
		}
		gpus, milli, cpu, mem := 0, 0, int64(0), int64(0)
		for _, t := range tg.Tasks {
			if t == nil || t.Resources == nil {
				continue
			}
			cpu += int64(t.Resources.CPU)
			mem += int64(t.Resources.MemoryMB)
			for _, d := range t.Resources.Devices {
				if d == nil || !isGPUAsk(d.Name) {
					continue
				}
				n := max(int(d.Count), 1)
				m := api.MilliPerDevice
				if d.Share != nil {
					if d.Share.Fraction <= 0 {
						continue // by memory: its fraction depends on the GPU
					}
					m, _ = d.Share.Milli(0)
				}
				if gpus == 0 || m == milli {
					gpus, milli = gpus+n, m
				}
			}
		}
		if gpus > 0 {
			w.add(shapeKeyOf(gpus, milli, cpu, mem), float64(min(tg.Count, 1000)))
		}
	}
}

func (w *Workload) add(k shapeKey, n float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scale *= math.Pow(2, n/w.halfLife)
	if w.scale > 1e12 { // renormalise before the floats lose precision
		for key, v := range w.w {
			w.w[key] = v / w.scale
		}
		w.scale = 1
	}
	w.w[k] += n * w.scale
	if len(w.w) > workloadShapes {
		var low shapeKey
		lv := math.Inf(1)
		for key, v := range w.w {
			if v < lv {
				low, lv = key, v
			}
		}
		delete(w.w, low)
	}
}

// Shapes are the most frequent shapes that cover 95% of the recent asks'
// weight, most frequent first, their weights summing to 1 (nil before
// any GPU ask, or on a nil Workload).
func (w *Workload) Shapes() []WorkloadShape {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	var out []WorkloadShape
	var total float64
	for k, v := range w.w {
		out = append(out, WorkloadShape{GPUs: k.gpus, Milli: k.milli, CPU: k.cpu, MemoryMB: k.mem, Weight: v})
		total += v
	}
	w.mu.Unlock()
	if total == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Weight != b.Weight {
			return a.Weight > b.Weight
		}
		if a.GPUs != b.GPUs {
			return a.GPUs < b.GPUs
		}
		if a.Milli != b.Milli {
			return a.Milli < b.Milli
		}
		if a.CPU != b.CPU {
			return a.CPU < b.CPU
		}
		return a.MemoryMB < b.MemoryMB
	})
	var cum float64
	for i := range out {
		cum += out[i].Weight
		if cum >= ShapeCoverage*total {
			out = out[:i+1]
			break
		}
	}
	var kept float64
	for _, s := range out {
		kept += s.Weight
	}
	for i := range out {
		out[i].Weight /= kept
	}
	return out
}

// NodeFrag is a node's fragmentation for the shapes: the weighted sum
// over shapes of the node's idle GPU capacity (thousandths) a shape's
// asks could not use, given each GPU's free thousandths and the node's
// free CPU and memory. What a shape can use is the least of: the GPUs
// with room for it (a share: each GPU's free amount in whole multiples of
// the share; whole GPUs: the wholly free ones, in multiples of the ask),
// and what the node's CPU and memory let that many asks have.
func NodeFrag(shapes []WorkloadShape, free []int, cpu, mem int64) float64 {
	whole, idle := wholeIdle(free)
	if idle == 0 {
		return 0
	}
	var frag float64
	for _, s := range shapes {
		frag += s.Weight * float64(idle-int64(usableBy(s, free, whole, cpu, mem)))
	}
	return frag
}

// usableBy is the idle GPU capacity (thousandths) asks of shape s could
// use on a node (see NodeFrag); whole is the count of free's wholly free
// GPUs.
func usableBy(s WorkloadShape, free []int, whole int, cpu, mem int64) int {
	usable := 0
	if s.Milli < api.MilliPerDevice {
		if s.Milli <= 0 {
			return 0
		}
		for _, f := range free {
			usable += f / s.Milli * s.Milli
		}
	} else if s.GPUs > 0 {
		usable = whole / s.GPUs * s.GPUs * api.MilliPerDevice
	}
	per := s.GPUs * s.Milli // what one ask takes
	if s.CPU > 0 {
		usable = min(usable, int(max(cpu, 0)/s.CPU)*per)
	}
	if s.MemoryMB > 0 {
		usable = min(usable, int(max(mem, 0)/s.MemoryMB)*per)
	}
	return usable
}

// ScarcityExponent weighs each shape by how scarce room for it is: a
// pass multiplies a shape's weight by ((I+1000)/(U+1000))^ScarcityExponent,
// where I is the idle GPU capacity (thousandths) of the pass's candidate
// nodes and U the part of it asks of the shape could use (NodeFrag's
// usable, summed over the nodes), then scales the weights to sum to 1.
// A big shape few nodes can hold (all GPUs of a node with most of its CPU
// and memory) is rare in the workload, so by frequency alone small asks
// take its last nodes and its first ask fails while the cluster is far
// from full; weighted by scarcity, the fragmentation score keeps the
// nodes that are its only room. 0 turns the weighting off.
var ScarcityExponent = 2.0

// scarcityWeights returns shapes with their weights scaled by scarcity
// (ScarcityExponent), given each shape's usable capacity (supply, by
// index) and the idle capacity (thousandths) of the nodes considered.
// shapes is not modified.
func scarcityWeights(shapes []WorkloadShape, supply []int64, idle int64) []WorkloadShape {
	out := slices.Clone(shapes)
	var total float64
	for i := range out {
		out[i].Weight *= math.Pow(float64(idle+1000)/float64(supply[i]+1000), ScarcityExponent)
		total += out[i].Weight
	}
	if total <= 0 || math.IsInf(total, 0) || math.IsNaN(total) {
		return shapes
	}
	for i := range out {
		out[i].Weight /= total
	}
	return out
}
