package autoscale

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// Sim is the simulated provider: instances boot after Boot on the
// clock and cost their shape's price per hour from Create to Destroy.
// Whoever runs the simulation registers the nodes Due returns (the
// benchmark puts them in its state store) and may inject interruptions
// with Interrupt.
type Sim struct {
	Clock clock.Clock
	Boot  time.Duration

	mu        sync.Mutex
	next      int
	instances map[string]*simInstance
	notices   []Interruption
	// paid is the node-seconds and GPU-seconds of destroyed instances,
	// weighted by price in cost.
	nodeSec, gpuSec, cost float64
}

type simInstance struct {
	inst    Instance
	shape   Shape
	readyAt time.Time
	due     bool // returned by Due
}

var _ Provider = (*Sim)(nil)

// NewSim returns a sim provider on clk with boot delay boot.
func NewSim(clk clock.Clock, boot time.Duration) *Sim {
	return &Sim{Clock: clk, Boot: boot, instances: map[string]*simInstance{}}
}

// Create implements Provider.
func (s *Sim) Create(_ context.Context, pool string, shape Shape, n int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	ids := make([]string, 0, n)
	for range n {
		s.next++
		id := fmt.Sprintf("sim-%s-%d", pool, s.next)
		s.instances[id] = &simInstance{inst: Instance{ID: id, Pool: pool, Spot: shape.Spot, Price: shape.Price, Created: now},
			shape: shape, readyAt: now.Add(s.Boot)}
		ids = append(ids, id)
	}
	return ids, nil
}

// Destroy implements Provider.
func (s *Sim) Destroy(_ context.Context, ids []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	for _, id := range ids {
		in, ok := s.instances[id]
		if !ok {
			continue
		}
		s.chargeLocked(in, now)
		delete(s.instances, id)
	}
	return nil
}

func (s *Sim) chargeLocked(in *simInstance, now time.Time) {
	sec := now.Sub(in.inst.Created).Seconds()
	s.nodeSec += sec
	s.gpuSec += sec * float64(in.shape.GPUs)
	s.cost += sec / 3600 * in.shape.Price
}

// List implements Provider.
func (s *Sim) List(context.Context) ([]Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Instance, 0, len(s.instances))
	for _, in := range s.instances {
		out = append(out, in.inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Interruptions implements Provider.
func (s *Sim) Interruptions(context.Context) ([]Interruption, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.notices
	s.notices = nil
	return out, nil
}

// Interrupt queues an interruption notice for instance id.
func (s *Sim) Interrupt(id string, deadline time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notices = append(s.notices, Interruption{ID: id, Deadline: deadline})
}

// Due returns the nodes of the instances that finished booting since the
// last call, ready to register, by instance ID.
func (s *Sim) Due() []*api.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	var out []*api.Node
	for id, in := range s.instances {
		if in.due || in.readyAt.After(now) {
			continue
		}
		in.due = true
		out = append(out, in.shape.Node(simNodeID(s, id), id, in.inst.Pool))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NextBoot is when the next booting instance is ready (zero: none).
func (s *Sim) NextBoot() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, in := range s.instances {
		if !in.due && (next.IsZero() || in.readyAt.Before(next)) {
			next = in.readyAt
		}
	}
	return next
}

// Paid returns node-hours, GPU-hours and cost paid up to now, live
// instances included.
func (s *Sim) Paid() (nodeHours, gpuHours, cost float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodeSec, gpuSec, c := s.nodeSec, s.gpuSec, s.cost
	now := s.Clock.Now()
	for _, in := range s.instances {
		sec := now.Sub(in.inst.Created).Seconds()
		nodeSec += sec
		gpuSec += sec * float64(in.shape.GPUs)
		c += sec / 3600 * in.shape.Price
	}
	return nodeSec / 3600, gpuSec / 3600, c
}

// simNodeID is a UUID-shaped node ID derived from the instance's number.
func simNodeID(_ *Sim, id string) string {
	var n int
	for _, r := range id {
		if r >= '0' && r <= '9' {
			n = n*10 + int(r-'0')
		} else {
			n = 0
		}
	}
	h := 0
	for _, r := range id {
		h = h*31 + int(r)
	}
	return fmt.Sprintf("5a000000-0000-4000-8000-%04x%08d", h&0xffff, n%100000000)
}
