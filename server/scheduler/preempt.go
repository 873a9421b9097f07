package scheduler

import (
	"slices"
	"sort"

	"github.com/drover/drover/api"
)

// PreemptionConfig says which job types may evict lower-priority allocs
// to make room: the cluster's api.PreemptionConfig (kept in Raft with the
// scheduler configuration). The zero Options use the cluster default:
// every job type preempts.
type PreemptionConfig = api.PreemptionConfig

// DefaultPreemptionConfig is used when Options.Preemption is nil (the
// cluster's default, api.DefaultPreemptionConfig).
var DefaultPreemptionConfig = api.DefaultPreemptionConfig()

// preemptPriorityDelta: only allocs of jobs at least this much lower in
// priority can be preempted.
const preemptPriorityDelta = 10

// maxPreemptNodes bounds the nodes with preemptible allocs examined for
// one placement, maxPreemptVisits all nodes looked at.
const (
	maxPreemptNodes  = 64
	maxPreemptVisits = 1024
)

func (s *sched) preemptionEnabled() bool {
	cfg := DefaultPreemptionConfig
	if s.opts.Preemption != nil {
		cfg = *s.opts.Preemption
	}
	switch s.job.Type {
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

func allocPriority(a *api.Allocation) int {
	if a.Job == nil {
		return api.DefaultPriority
	}
	return a.Job.Priority
}

// preempt looks for the node where evicting the fewest, lowest-priority
// allocs lets the group fit. It returns the scored candidate and the
// victims, leaving every node's usage unchanged (evict applies them).
func (s *sched) preempt(tc *tgCtx, nodes []*nodeState, prevNode string) (*cand, []*api.Allocation) {
	var best *cand
	var bestVictims []*api.Allocation
	bestMax, examined := 0, 0
	for i, ns := range nodes {
		if examined >= maxPreemptNodes || i >= maxPreemptVisits {
			break
		}
		if ok, _ := s.classOK(tc, ns); !ok {
			continue
		}
		if ok, _ := s.nodeOK(tc, ns); !ok {
			continue
		}
		s.load(ns)
		var pool []*api.Allocation
		for _, a := range ns.allocs {
			if a.JobID == s.job.ID && a.Namespace == s.job.Namespace {
				continue
			}
			if allocPriority(a) <= s.job.Priority-preemptPriorityDelta {
				pool = append(pool, a)
			}
		}
		if len(pool) == 0 {
			continue
		}
		examined++
		order := slices.Clone(ns.allocs) // probing below reorders the list; usage it restores itself
		// Lowest priority first; among equals, the allocs holding devices
		// (when devices are asked) and then the biggest.
		sort.SliceStable(pool, func(i, j int) bool {
			pi, pj := allocPriority(pool[i]), allocPriority(pool[j])
			if pi != pj {
				return pi < pj
			}
			if len(tc.devs) > 0 {
				if di, dj := hasDevices(pool[i]), hasDevices(pool[j]); di != dj {
					return di
				}
			}
			ci, mi, _ := pool[i].AllocatedResources.Comparable()
			cj, mj, _ := pool[j].AllocatedResources.Comparable()
			return ci+mi > cj+mj
		})
		var victims []*api.Allocation
		fit := false
		for _, v := range pool {
			ns.removeAlloc(v, s.job)
			victims = append(victims, v)
			if _, dim := s.fits(tc, ns); dim == "" {
				fit = true
				break
			}
		}
		if fit {
			// Prune: give back every victim the group can do without.
			// kept is a new slice: filling victims in place while reading
			// it backwards would overwrite victims not yet looked at.
			kept := make([]*api.Allocation, 0, len(victims))
			for i := len(victims) - 1; i >= 0; i-- {
				v := victims[i]
				ns.addAlloc(v, s.job)
				if _, dim := s.fits(tc, ns); dim == "" {
					continue
				}
				ns.removeAlloc(v, s.job)
				kept = append(kept, v)
			}
			victims = kept
			maxPri := 0
			for _, v := range victims {
				maxPri = max(maxPri, allocPriority(v))
			}
			if best == nil || maxPri < bestMax || (maxPri == bestMax && len(victims) < len(bestVictims)) {
				picks, _ := s.fits(tc, ns)
				c := s.score(tc, ns, picks, prevNode, tc.tg.Count)
				best, bestVictims, bestMax = &c, append([]*api.Allocation(nil), victims...), maxPri
			}
		}
		for _, v := range victims {
			ns.addAlloc(v, s.job)
		}
		ns.allocs = order
	}
	if best != nil {
		tc.cands = append(tc.cands[:0], *best)
		best = &tc.cands[0]
	}
	return best, bestVictims
}

func hasDevices(a *api.Allocation) bool {
	if a.AllocatedResources == nil {
		return false
	}
	for _, t := range a.AllocatedResources.Tasks {
		if len(t.Devices) > 0 {
			return true
		}
	}
	return false
}

// recordEvictions adds the victims (already released from the node's
// usage) to the plan as preempted by a.
func (s *sched) recordEvictions(a *api.Allocation, victims []*api.Allocation) {
	d := s.annotate(a.TaskGroup)
	for _, v := range victims {
		c := v.Copy()
		c.DesiredStatus = api.AllocDesiredStatusEvict
		c.DesiredDescription = "preempted by alloc " + a.ID
		c.PreemptedByAllocation = a.ID
		c.ModifyTime = s.opts.Now.UnixNano()
		if s.plan.NodePreemptions == nil {
			s.plan.NodePreemptions = map[string][]*api.Allocation{}
		}
		s.plan.NodePreemptions[v.NodeID] = append(s.plan.NodePreemptions[v.NodeID], c)
		a.PreemptedAllocations = append(a.PreemptedAllocations, v.ID)
		s.plan.Annotations.PreemptedAllocs = append(s.plan.Annotations.PreemptedAllocs, v.Stub())
		d.Preemptions++
	}
}
