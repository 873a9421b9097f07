package services

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// SendFunc writes registrations to the servers (the client's
// PUT /v1/node/{id}/services).
type SendFunc func(ctx context.Context, req *api.NodeServicesRequest) error

// Registrar keeps the servers' registrations of this node equal to the
// wanted set: every change is sent as one batch of upserts and deletes,
// retried with backoff until the servers take it.
type Registrar struct {
	send  SendFunc
	clock clock.Clock // the retry backoff
	log   *slog.Logger

	mu   sync.Mutex
	want map[string]map[string]*api.ServiceRegistration // alloc ID -> registration ID -> registration
	sent map[string]*api.ServiceRegistration            // registration ID -> as the servers hold it
	kick chan struct{}
	idle chan struct{} // closed while nothing is left to send (replaced when something is)
}

// NewRegistrar returns a Registrar sending through send, waiting out
// retries on clk (nil: the wall clock); Run drives it.
func NewRegistrar(send SendFunc, clk clock.Clock, log *slog.Logger) *Registrar {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.Real{}
	}
	idle := make(chan struct{})
	close(idle)
	return &Registrar{send: send, clock: clk, log: log.With("component", "services"), want: map[string]map[string]*api.ServiceRegistration{},
		sent: map[string]*api.ServiceRegistration{}, kick: make(chan struct{}, 1), idle: idle}
}

// SetAlloc replaces the wanted registrations of an alloc.
func (r *Registrar) SetAlloc(allocID string, regs []*api.ServiceRegistration) {
	m := make(map[string]*api.ServiceRegistration, len(regs))
	for _, g := range regs {
		c := *g
		c.Tags = slices.Clone(g.Tags)
		m[g.ID] = &c
	}
	r.mu.Lock()
	if len(m) == 0 {
		delete(r.want, allocID)
	} else {
		r.want[allocID] = m
	}
	r.dirtyLocked()
	r.mu.Unlock()
}

// RemoveAlloc deregisters every service of an alloc.
func (r *Registrar) RemoveAlloc(allocID string) { r.SetAlloc(allocID, nil) }

// Wanted returns the wanted registrations of an alloc, sorted by ID.
func (r *Registrar) Wanted(allocID string) []*api.ServiceRegistration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*api.ServiceRegistration
	for _, g := range r.want[allocID] {
		c := *g
		out = append(out, &c)
	}
	slices.SortFunc(out, func(a, b *api.ServiceRegistration) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Idle returns a channel closed once the servers hold every wanted change
// made so far.
func (r *Registrar) Idle() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idle
}

// Resync forgets what the servers hold, so every wanted registration is
// sent again (after the node registered anew: a dev server may have
// restarted empty).
func (r *Registrar) Resync() {
	r.mu.Lock()
	r.sent = map[string]*api.ServiceRegistration{}
	r.dirtyLocked()
	r.mu.Unlock()
}

func (r *Registrar) dirtyLocked() {
	select {
	case <-r.idle:
		r.idle = make(chan struct{})
	default:
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run sends changes until ctx ends.
func (r *Registrar) Run(ctx context.Context) {
	backoff := clock.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second}
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-retry:
		}
		retry = nil
		if err := r.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			d := backoff.Next()
			r.log.Warn("service registrations not sent; retrying", "error", err, "in", d)
			retry = r.clock.After(d)
			continue
		}
		backoff.Reset()
	}
}

// sync sends one batch of what differs; more may be wanted by the time it
// returns (a kick is then pending).
func (r *Registrar) sync(ctx context.Context) error {
	r.mu.Lock()
	req := &api.NodeServicesRequest{}
	wanted := map[string]bool{}
	for _, regs := range r.want {
		for id, g := range regs {
			wanted[id] = true
			if s := r.sent[id]; s == nil || !same(s, g) {
				c := *g
				req.Upserts = append(req.Upserts, &c)
			}
		}
	}
	for id := range r.sent {
		if !wanted[id] {
			req.Deletes = append(req.Deletes, id)
		}
	}
	if len(req.Upserts)+len(req.Deletes) == 0 {
		select {
		case <-r.idle:
		default:
			close(r.idle)
		}
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	slices.SortFunc(req.Upserts, func(a, b *api.ServiceRegistration) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(req.Deletes)
	if err := r.send(ctx, req); err != nil {
		return err
	}
	r.mu.Lock()
	for _, g := range req.Upserts {
		r.sent[g.ID] = g
	}
	for _, id := range req.Deletes {
		delete(r.sent, id)
	}
	r.dirtyLocked() // look again: something may have changed meanwhile
	r.mu.Unlock()
	return nil
}

func same(a, b *api.ServiceRegistration) bool {
	return a.ServiceName == b.ServiceName && a.AllocID == b.AllocID && a.Address == b.Address && a.Port == b.Port &&
		a.Health == b.Health && a.HealthTime == b.HealthTime && slices.Equal(a.Tags, b.Tags)
}
