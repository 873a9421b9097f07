package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// heartbeats holds one TTL timer per live node on the leader, a leader
// duty: enable arms the timers when leadership starts, Run disarms them
// when it ends. A timer that fires hands the node to expired (Nodes
// marks it down, or disconnected when some of its allocs' groups set
// max_client_disconnect, and re-arms the timer for that window), in a
// goroutine the heartbeats own and wait for on disable.
type heartbeats struct {
	ttlMin, grace time.Duration // HeartbeatTTLMin, HeartbeatGrace
	maxPerSecond  float64       // MaxHeartbeatsPerSecond
	clock         clock.Clock
	log           *slog.Logger
	missed        prometheus.Counter
	// expired handles a node whose timer ran out.
	expired func(ctx context.Context, nodeID string) error
	// windowLeft is what is left of a disconnected node's window.
	windowLeft func(n *api.Node) time.Duration

	mu      sync.Mutex
	enabled bool
	ctx     context.Context
	timers  map[string]clock.Timer
	gens    map[string]uint64
	gen     uint64
	wg      sync.WaitGroup // node-down writes in flight
}

// newHeartbeats returns the duty; its owner sets expired and windowLeft
// (Nodes) before leadership can enable it.
func newHeartbeats(cfg *Config, core serverCore, missed prometheus.Counter) *heartbeats {
	return &heartbeats{ttlMin: cfg.HeartbeatTTLMin, grace: cfg.HeartbeatGrace, maxPerSecond: cfg.MaxHeartbeatsPerSecond,
		clock: core.clock, log: core.log.With("component", "heartbeats"), missed: missed,
		timers: map[string]clock.Timer{}, gens: map[string]uint64{}}
}

// Run keeps the timers armed until ctx ends (leadership lost), then
// disarms them and waits for node-down writes in flight.
func (h *heartbeats) Run(ctx context.Context) {
	<-ctx.Done()
	h.disable()
}

// ttl is the heartbeat interval handed to a client: it grows with the
// node count so the cluster stays under MaxHeartbeatsPerSecond, plus up to
// 50% random stagger so clients spread out.
func (h *heartbeats) ttl() time.Duration {
	base := h.baseTTL(h.count())
	return base + time.Duration(rand.Int64N(int64(base)/2+1))
}

// baseTTL is the TTL before stagger for n nodes.
func (h *heartbeats) baseTTL(n int) time.Duration {
	return max(h.ttlMin, time.Duration(float64(n)/h.maxPerSecond*float64(time.Second)))
}

// enable arms a timer for every node that is not down: the longest TTL
// an earlier leader may have handed out for this many nodes (base plus
// full stagger) and the grace period on top (clients need time to find
// the new leader); a disconnected node keeps what is left of its
// disconnect window. At 10,000 nodes and 50 heartbeats/s a client may
// hold a 300 s TTL: a shorter window would mark it down unheard.
func (h *heartbeats) enable(ctx context.Context, nodes []*api.Node) {
	h.mu.Lock()
	h.enabled, h.ctx = true, ctx
	h.mu.Unlock()
	base := h.baseTTL(len(nodes))
	window := base + base/2 + h.grace
	for _, n := range nodes {
		if n.Status == api.NodeStatusDown {
			continue
		}
		d := window
		if n.Status == api.NodeStatusDisconnected {
			d = max(h.windowLeft(n), h.grace)
		}
		h.reset(n.ID, d)
	}
}

// disable stops every timer and waits for node-down writes in flight.
func (h *heartbeats) disable() {
	h.mu.Lock()
	h.enabled = false
	for id, t := range h.timers {
		t.Stop()
		delete(h.timers, id)
		delete(h.gens, id)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// reset (re)arms a node's timer: the node is declared down after d.
func (h *heartbeats) reset(nodeID string, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.enabled {
		return
	}
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
	}
	h.gen++
	gen := h.gen
	h.gens[nodeID] = gen
	h.timers[nodeID] = h.clock.AfterFunc(d, func() { h.expire(nodeID, gen) })
}

// clear drops a node's timer (node down or deregistered).
func (h *heartbeats) clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
		delete(h.timers, nodeID)
		delete(h.gens, nodeID)
	}
}

func (h *heartbeats) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.timers)
}

func (h *heartbeats) expire(nodeID string, gen uint64) {
	h.mu.Lock()
	if !h.enabled || h.gens[nodeID] != gen {
		h.mu.Unlock()
		return
	}
	delete(h.timers, nodeID)
	delete(h.gens, nodeID)
	ctx := h.ctx
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		h.missed.Inc()
		if err := h.expired(ctx, nodeID); err != nil {
			h.log.Warn("mark node down", "node", nodeID, "err", err)
		}
	}()
}
