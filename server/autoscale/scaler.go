package autoscale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/scheduler"
)

// DefaultInterval is how often the leader duty runs a pass.
const DefaultInterval = 10 * time.Second

// BootTimeout is how long an instance may take to join as a node before
// it is destroyed.
const BootTimeout = 15 * time.Minute

// ReasonScaleIn is the drain reason of a node the autoscaler removes.
const ReasonScaleIn = "autoscaler scale-in: node idle"

// Cluster is what the scaler needs of the server: its state and pending
// work, and the node writes (drain, remove).
type Cluster interface {
	// State returns a consistent snapshot and the evals waiting for
	// capacity (blocked) in it.
	State() (scheduler.State, []*api.Evaluation, error)
	// Drain starts draining the node with the deadline and reason.
	Drain(ctx context.Context, nodeID string, deadline time.Duration, reason string) error
	// Remove deregisters the node once its instance is destroyed.
	Remove(ctx context.Context, nodeID string) error
}

// Scaler applies the policies: the leader duty (Run) or one pass at a
// time (Step, for simulations). Its fields are set before the first
// call; Step and Run are called from one goroutine at a time.
type Scaler struct {
	Policies  []Policy
	Providers map[string]Provider
	Cluster   Cluster
	Clock     clock.Clock
	Log       *slog.Logger
	// Interval between passes (DefaultInterval when 0).
	Interval time.Duration
	// Options returns the scheduler options of the counterfactual passes
	// (nil: the defaults with the clock's time).
	Options func() scheduler.Options
	// LowWatermark is the largest used share of a node least_busy may
	// count idle (0: 0.5).
	LowWatermark float64

	idle     map[string]time.Time // node ID -> candidate since
	removing map[string]removal   // node ID -> removal in progress
	lastIn   map[string]time.Time // pool -> last scale-in
}

type removal struct {
	pool, instance string
	since          time.Time
}

// Report is what one pass did, by pool.
type Report struct {
	Created     map[string][]string // pool -> instance IDs
	Drained     []string            // node IDs drained (scale-in or interruption)
	Interrupted []string            // node IDs drained for an interruption
	Destroyed   []string            // instance IDs destroyed
	// Demand is the scale-out counterfactual of each pool with pending
	// work.
	Demand map[string]DemandResult
}

// Run runs a pass every Interval until ctx ends.
func (s *Scaler) Run(ctx context.Context) {
	log := s.logger()
	every := s.Interval
	if every <= 0 {
		every = DefaultInterval
	}
	for {
		if _, err := s.Step(ctx); err != nil && ctx.Err() == nil {
			log.Warn("autoscale pass", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.Clock.After(every):
		}
	}
}

func (s *Scaler) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Scaler) options() scheduler.Options {
	if s.Options != nil {
		return s.Options()
	}
	return scheduler.Options{Now: s.Clock.Now()}
}

// instanceOf is the instance ID a node was made for ("" when none).
func instanceOf(n *api.Node) string {
	if id := n.Meta[MetaInstance]; id != "" {
		return id
	}
	return n.Name
}

// Step runs one pass: interruption notices, removals in progress,
// scale-out from pending work, scale-in of idle nodes. It returns what it
// did and the first error (a failing pool does not stop the others).
func (s *Scaler) Step(ctx context.Context) (*Report, error) {
	if s.idle == nil {
		s.idle, s.removing, s.lastIn = map[string]time.Time{}, map[string]removal{}, map[string]time.Time{}
	}
	rep := &Report{Created: map[string][]string{}, Demand: map[string]DemandResult{}}
	st, pending, err := s.Cluster.State()
	if err != nil {
		return rep, fmt.Errorf("read state: %w", err)
	}
	nodes, err := st.Nodes()
	if err != nil {
		return rep, fmt.Errorf("list nodes: %w", err)
	}
	var errs []error
	instances := map[string]map[string]Instance{} // provider -> id -> instance
	for _, name := range s.providerNames() {
		list, err := s.Providers[name].List(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("provider %s: list: %w", name, err))
			continue
		}
		m := map[string]Instance{}
		for _, in := range list {
			m[in.ID] = in
		}
		instances[name] = m
		if err := s.interruptions(ctx, name, nodes, rep); err != nil {
			errs = append(errs, err)
		}
	}
	for _, pol := range s.Policies {
		owned, ok := instances[pol.Provider]
		if !ok {
			if s.Providers[pol.Provider] == nil {
				errs = append(errs, fmt.Errorf("pool %s: no provider %q", pol.Pool, pol.Provider))
			}
			continue
		}
		if err := s.pool(ctx, st, pending, nodes, pol, owned, rep); err != nil {
			errs = append(errs, fmt.Errorf("pool %s: %w", pol.Pool, err))
		}
	}
	return rep, errors.Join(errs...)
}

func (s *Scaler) providerNames() []string {
	names := make([]string, 0, len(s.Providers))
	for n := range s.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// interruptions drains the nodes of the provider's interruption notices
// with their deadlines.
func (s *Scaler) interruptions(ctx context.Context, provider string, nodes []*api.Node, rep *Report) error {
	notices, err := s.Providers[provider].Interruptions(ctx)
	if err != nil {
		return fmt.Errorf("provider %s: interruptions: %w", provider, err)
	}
	var errs []error
	for _, in := range notices {
		for _, n := range nodes {
			if instanceOf(n) != in.ID || n.Status == api.NodeStatusDown {
				continue
			}
			deadline := in.Deadline
			if deadline <= 0 {
				deadline = -1 // reclaimed now: force
			}
			if err := s.Cluster.Drain(ctx, n.ID, deadline, ReasonSpot); err != nil {
				errs = append(errs, fmt.Errorf("drain interrupted node %s: %w", n.ID, err))
				continue
			}
			rep.Drained = append(rep.Drained, n.ID)
			rep.Interrupted = append(rep.Interrupted, n.ID)
			s.removing[n.ID] = removal{pool: n.NodePool, instance: in.ID, since: s.Clock.Now()}
		}
	}
	return errors.Join(errs...)
}

// live are the allocs of a node its client has not reported terminal.
func live(st scheduler.State, nodeID string) ([]*api.Allocation, error) {
	all, err := st.AllocsByNode(nodeID)
	if err != nil {
		return nil, fmt.Errorf("allocs of node %s: %w", nodeID, err)
	}
	out := all[:0:0]
	for _, a := range all {
		if !a.ClientTerminalStatus() {
			out = append(out, a)
		}
	}
	return out, nil
}

// poolOf is the node pool of an eval's job ("" when the job is gone).
func poolOf(st scheduler.State, e *api.Evaluation) string {
	j, err := st.JobByID(e.Namespace, e.JobID)
	if err != nil || j == nil || j.Stop {
		return ""
	}
	if j.NodePool == "" {
		return api.DefaultNodePool
	}
	return j.NodePool
}

func (s *Scaler) pool(ctx context.Context, st scheduler.State, pending []*api.Evaluation, nodes []*api.Node, pol Policy,
	owned map[string]Instance, rep *Report) error {
	prov := s.Providers[pol.Provider]
	now := s.Clock.Now()
	log := s.logger().With("pool", pol.Pool)
	mine := map[string]Instance{}
	for id, in := range owned {
		if in.Pool == pol.Pool {
			mine[id] = in
		}
	}
	byInstance := map[string]*api.Node{}
	var poolNodes []*api.Node
	unowned := 0
	for _, n := range nodes {
		if n.NodePool != pol.Pool {
			continue
		}
		id := instanceOf(n)
		if _, ok := mine[id]; ok && n.Status == api.NodeStatusDown {
			// A dead instance: its work was marked lost and is placed
			// again; the instance goes.
			if _, ok := s.removing[n.ID]; !ok {
				s.removing[n.ID] = removal{pool: pol.Pool, instance: id, since: now}
			}
			byInstance[id] = n
			continue
		}
		if _, ok := mine[id]; ok {
			byInstance[id] = n
			poolNodes = append(poolNodes, n)
			// A node drained for a spot interruption (by a notice or
			// `drover node interrupt`), or by a scale-in of an earlier
			// leader, goes when its work has moved.
			if r := drainReason(n); strings.HasPrefix(r, "spot interruption") || r == ReasonScaleIn {
				if _, ok := s.removing[n.ID]; !ok {
					s.removing[n.ID] = removal{pool: pol.Pool, instance: id, since: now}
				}
			}
		} else if n.Ready() {
			unowned++
		}
	}
	// Removals in progress: destroy once nothing runs there any more.
	var errs []error
	destroyed := map[string]bool{}
	for nodeID, r := range s.removing {
		if r.pool != pol.Pool {
			continue
		}
		n, err := st.NodeByID(nodeID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n != nil && n.Status != api.NodeStatusDown {
			la, err := live(st, nodeID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(la) > 0 || n.DrainStrategy == nil && n.SchedulingEligibility != api.NodeSchedulingIneligible {
				continue
			}
		}
		if err := prov.Destroy(ctx, []string{r.instance}); err != nil {
			errs = append(errs, fmt.Errorf("destroy %s: %w", r.instance, err))
			continue
		}
		if n != nil {
			if err := s.Cluster.Remove(ctx, nodeID); err != nil {
				errs = append(errs, fmt.Errorf("remove node %s: %w", nodeID, err))
			}
		}
		delete(s.removing, nodeID)
		delete(mine, r.instance)
		destroyed[nodeID] = true
		rep.Destroyed = append(rep.Destroyed, r.instance)
		log.Info("autoscale destroyed instance", "instance", r.instance, "node", nodeID)
	}
	booting := 0
	removing := 0
	for id, in := range mine {
		n := byInstance[id]
		switch {
		case n == nil && !in.Created.IsZero() && now.Sub(in.Created) > BootTimeout:
			// Never joined: it goes, and counts no more.
			if err := prov.Destroy(ctx, []string{id}); err != nil {
				errs = append(errs, fmt.Errorf("destroy %s (never joined): %w", id, err))
				removing++
				continue
			}
			delete(mine, id)
			rep.Destroyed = append(rep.Destroyed, id)
			log.Warn("autoscale destroyed an instance that never joined", "instance", id)
		case n == nil || n.Status == api.NodeStatusInit:
			booting++
		case s.removing[n.ID] != removal{}:
			removing++
		}
	}
	total := len(mine) + unowned // against max: every instance held
	active := total - removing   // against min: those staying
	var myPending []*api.Evaluation
	for _, e := range pending {
		if poolOf(st, e) == pol.Pool {
			myPending = append(myPending, e)
		}
	}
	// Scale-out: to min, then what the pending work needs.
	want := max(0, pol.Min-active)
	var demand DemandResult
	if len(myPending) > 0 && total < pol.Max {
		d, err := Demand(DemandInput{State: st, Pending: myPending, Policy: pol, Booting: booting, Room: pol.Max - total, Options: s.options(),
			Template: template(poolNodes)})
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		demand = d
		rep.Demand[pol.Pool] = d
		want = max(want, d.New)
	}
	want = min(want, pol.Max-total)
	if want > 0 {
		ids, err := prov.Create(ctx, pol.Pool, pol.Shape, want)
		if err != nil {
			errs = append(errs, fmt.Errorf("create %d: %w", want, err))
		}
		if len(ids) > want {
			ids = ids[:want] // a provider returning more than asked is not trusted with max
		}
		rep.Created[pol.Pool] = ids
		log.Info("autoscale created instances", "n", len(ids), "pending_evals", len(myPending))
		return errors.Join(errs...)
	}
	// Idle tracking and scale-in, held while pending work could use the
	// pool and for cooldown after the last scale-in.
	low := s.LowWatermark
	if low == 0 {
		low = 0.5
	}
	var pns []PoolNode
	for _, n := range poolNodes {
		if _, gone := s.removing[n.ID]; gone || destroyed[n.ID] {
			continue
		}
		la, err := live(st, n.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := PoolNode{Node: n, Instance: instanceOf(n), Allocs: la}
		idle := Candidate(pol.ScaleIn.Strategy, p) && (len(la) == 0 || p.Busy() < low)
		if !idle {
			delete(s.idle, n.ID)
			continue
		}
		if _, ok := s.idle[n.ID]; !ok {
			s.idle[n.ID] = now
		}
		p.IdleSince = s.idle[n.ID]
		pns = append(pns, p)
	}
	if demand.Allocs > 0 || demand.New > 0 || now.Sub(s.lastIn[pol.Pool]) < pol.Cooldown {
		return errors.Join(errs...)
	}
	out, err := ScaleIn(ScaleInInput{State: st, Policy: pol, Nodes: pns, Now: now, Count: active, Options: s.options()})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, p := range out {
		if err := s.Cluster.Drain(ctx, p.Node.ID, pol.ScaleIn.DrainDeadline, ReasonScaleIn); err != nil {
			errs = append(errs, fmt.Errorf("drain node %s: %w", p.Node.ID, err))
			continue
		}
		s.removing[p.Node.ID] = removal{pool: pol.Pool, instance: p.Instance, since: now}
		delete(s.idle, p.Node.ID)
		rep.Drained = append(rep.Drained, p.Node.ID)
		s.lastIn[pol.Pool] = now
		log.Info("autoscale draining idle node", "node", p.Node.ID, "strategy", pol.ScaleIn.Strategy)
	}
	return errors.Join(errs...)
}

// drainReason is the reason of the node's drain, or of its last one.
func drainReason(n *api.Node) string {
	if n.DrainStrategy != nil {
		return n.DrainStrategy.Reason
	}
	if n.LastDrain != nil {
		return n.LastDrain.Reason
	}
	return ""
}

// template is the pool's first ready owned node by ID, the model of the
// nodes it would buy (nil when none).
func template(nodes []*api.Node) *api.Node {
	var t *api.Node
	for _, n := range nodes {
		if n.Status == api.NodeStatusReady && (t == nil || n.ID < t.ID) {
			t = n
		}
	}
	return t
}
