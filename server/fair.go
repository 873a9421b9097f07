package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
	"github.com/drover/drover/server/scheduler"
)

// blockedLister lists the blocked evals (the blocked tracker).
type blockedLister interface {
	Each(fn func(*api.Evaluation))
}

// fairShares computes the queues' fair shares the workers schedule with
// and the broker orders by (leader only; shared by the workers).
//
// Per Raft index it computes a base from the state: capacity (ready
// nodes), the queues, their usage (State.QueueUsage) and their demand =
// usage + the blocked evals' queued allocs (each times its group's ask).
// For one eval, the job's own unplaced allocs (its groups' counts less
// its live allocs) are added to its queue's demand unless its blocked
// eval already counts them, and the shares are computed again (cheap:
// one pass over the queue tree). The decayed usage history advances with
// each new base; it lives in memory, so a new leader starts without
// history (shares are then plain weighted shares until it builds up).
//
// With no queue but "default" it returns nil shares: the scheduler then
// works as without queues (priority preemption only) and the broker
// keeps its priority order.
type fairShares struct {
	cfg     fairshare.Config
	blocked blockedLister

	mu     sync.Mutex
	index  uint64
	in     fairshare.Input
	base   *fairshare.Shares
	queues map[jobKey]string // job -> queue, as last read
	hist   *fairshare.History
}

type jobKey struct{ ns, id string }

func newFairShares(cfg fairshare.Config, blocked blockedLister) *fairShares {
	return &fairShares{cfg: cfg, blocked: blocked, queues: map[jobKey]string{}}
}

// forJob returns the shares to schedule job with at st's index (nil
// without queues besides "default").
func (f *fairShares) forJob(st scheduler.State, job *api.Job, now time.Time) (*fairshare.Shares, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refreshLocked(st, now); err != nil || f.base == nil || job == nil {
		return f.base, err
	}
	q := api.JobQueue(job)
	f.queues[jobKey{job.Namespace, job.ID}] = q
	pending, err := jobPending(st, job)
	if err != nil || pending == nil {
		return f.base, err
	}
	in := f.in
	in.Demand = make(map[string]*api.QueueResources, len(f.in.Demand)+1)
	for k, v := range f.in.Demand {
		in.Demand[k] = v
	}
	d := in.Demand[q].Copy()
	if d == nil {
		d = &api.QueueResources{}
	}
	d.Add(*pending, 1)
	in.Demand[q] = d
	return fairshare.Compute(f.cfg, in), nil
}

// refreshLocked recomputes the base when st is at a new index.
func (f *fairShares) refreshLocked(st scheduler.State, now time.Time) error {
	if st.Index() == f.index && f.index != 0 {
		return nil
	}
	queues, err := st.Queues()
	if err != nil {
		return fmt.Errorf("read queues: %w", err)
	}
	if len(queues) == 0 || len(queues) == 1 && queues[0].Name == api.DefaultQueue {
		// Only the default queue: nothing to share (and no broker scan).
		f.index, f.base = st.Index(), nil
		return nil
	}
	usage, err := st.QueueUsage()
	if err != nil {
		return fmt.Errorf("read queue usage: %w", err)
	}
	nodes, err := st.Nodes()
	if err != nil {
		return fmt.Errorf("read nodes: %w", err)
	}
	in := fairshare.Input{Queues: queues, Allocated: usage, Demand: map[string]*api.QueueResources{}}
	for _, n := range nodes {
		in.Capacity.Add(fairshare.NodeOffers(n), 1)
	}
	for q, r := range usage {
		in.Demand[q] = r.Copy()
	}
	var blocked []*api.Evaluation
	f.blocked.Each(func(e *api.Evaluation) { blocked = append(blocked, e) })
	slices.SortFunc(blocked, func(a, b *api.Evaluation) int { return strings.Compare(a.ID, b.ID) })
	for _, e := range blocked {
		job, err := st.JobByID(e.Namespace, e.JobID)
		if err != nil {
			return fmt.Errorf("read job %q of blocked eval %s: %w", e.JobID, e.ID, err)
		}
		if job == nil {
			continue
		}
		q := api.JobQueue(job)
		f.queues[jobKey{job.Namespace, job.ID}] = q
		for g, n := range e.QueuedAllocations {
			if tg := job.LookupTaskGroup(g); tg != nil && n > 0 {
				if in.Demand[q] == nil {
					in.Demand[q] = &api.QueueResources{}
				}
				in.Demand[q].Add(fairshare.Scale(fairshare.GroupAsk(tg), n), 1)
			}
		}
	}
	in.History = f.hist
	f.base = fairshare.Compute(f.cfg, in)
	f.hist = f.hist.Advance(f.cfg, now, f.base.Levels())
	f.in, f.index = in, st.Index()
	return nil
}

// jobPending is what job's groups still ask beyond their live allocs
// (nil when nothing).
func jobPending(st scheduler.State, job *api.Job) (*api.QueueResources, error) {
	if job.Stop {
		return nil, nil
	}
	allocs, err := st.AllocsByJob(job.Namespace, job.ID)
	if err != nil {
		return nil, err
	}
	live := map[string]int{}
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live[a.TaskGroup]++
		}
	}
	var out *api.QueueResources
	for _, tg := range job.TaskGroups {
		if n := tg.Count - live[tg.Name]; n > 0 {
			if out == nil {
				out = &api.QueueResources{}
			}
			out.Add(fairshare.Scale(fairshare.GroupAsk(tg), n), 1)
		}
	}
	return out, nil
}

// deficits is the broker's Config.QueueDeficit: nil without queues
// (priority order), else how far each eval's job's queue is below its
// fair share in the latest base (0 while the job's queue is unknown).
// Cheap: it reads no state.
func (f *fairShares) deficits() func(*api.Evaluation) float64 {
	f.mu.Lock()
	base := f.base
	f.mu.Unlock()
	if base == nil {
		return nil
	}
	return func(e *api.Evaluation) float64 {
		f.mu.Lock()
		q, ok := f.queues[jobKey{e.Namespace, e.JobID}]
		f.mu.Unlock()
		if !ok {
			return 0
		}
		return base.Deficit(q)
	}
}

// share is queue q's current fair share (nil before the first
// computation or without queues), for queue status.
func (f *fairShares) share(q string) *api.QueueResources {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.base == nil {
		return nil
	}
	return f.base.Share(q)
}
