package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/broker"
	"github.com/drover/drover/server/state"
)

// heartbeats holds one TTL timer per live node on the leader, a leader
// duty: enable arms the timers when leadership starts, Run disarms them
// when it ends. A timer that fires hands the node to expired (the server
// marks it down, or disconnected when some of its allocs' groups set
// max_client_disconnect, and re-arms the timer for that window), in a
// goroutine the heartbeats own and wait for on disable.
type heartbeats struct {
	ttlMin, grace time.Duration // HeartbeatTTLMin, HeartbeatGrace
	maxPerSecond  float64       // MaxHeartbeatsPerSecond
	clock         broker.Clock
	log           *slog.Logger
	missed        prometheus.Counter
	// expired handles a node whose timer ran out.
	expired func(ctx context.Context, nodeID string) error
	// windowLeft is what is left of a disconnected node's window.
	windowLeft func(n *api.Node) time.Duration

	mu      sync.Mutex
	enabled bool
	ctx     context.Context
	timers  map[string]broker.Timer
	gens    map[string]uint64
	gen     uint64
	wg      sync.WaitGroup // node-down writes in flight
}

func newHeartbeats(s *Server) *heartbeats {
	return &heartbeats{ttlMin: s.cfg.HeartbeatTTLMin, grace: s.cfg.HeartbeatGrace, maxPerSecond: s.cfg.MaxHeartbeatsPerSecond,
		clock: s.clock, log: s.log.With("component", "heartbeats"), missed: s.metrics.heartbeatMisses,
		expired: s.nodeExpired, windowLeft: s.disconnectLeft,
		timers: map[string]broker.Timer{}, gens: map[string]uint64{}}
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

// nodeExpired handles a node whose timer ran out: a ready node whose live
// allocs' groups set max_client_disconnect goes disconnected (and its
// timer is re-armed for the longest such window); a disconnected node
// whose window passed, or a node without such allocs, goes down.
func (s *Server) nodeExpired(ctx context.Context, nodeID string) error {
	st := s.State()
	node, err := st.NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status == api.NodeStatusDown {
		return err
	}
	if node.Status == api.NodeStatusDisconnected {
		return s.nodeDown(ctx, nodeID, "node did not reconnect within max_client_disconnect")
	}
	allocs, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	w := disconnectWindow(allocs)
	if w <= 0 {
		return s.nodeDown(ctx, nodeID, "node heartbeat missed")
	}
	return s.nodeDisconnect(ctx, node, allocs, w)
}

// nodeDisconnect marks the node disconnected: live allocs whose group
// sets max_client_disconnect become unknown (the scheduler places a
// replacement but does not stop them: the client may still run them),
// the others lost; every affected job gets an eval. The node's timer is
// re-armed for the window w: without a heartbeat by then it goes down.
func (s *Server) nodeDisconnect(ctx context.Context, node *api.Node, allocs []*api.Allocation, w time.Duration) error {
	unknown := 0
	why := "node heartbeat missed; disconnected for up to " + w.String() + " (max_client_disconnect)"
	ups, evals, err := s.writeNodeLoss(ctx, node, allocs, api.NodeStatusDisconnected, why, func(a *api.Allocation) (string, string) {
		switch {
		case a.ClientStatus == api.AllocClientStatusUnknown:
			return "", "" // marked on an earlier disconnect
		case allocMaxDisconnect(a) > 0:
			unknown++
			return api.AllocClientStatusUnknown, "alloc is unknown since its node is disconnected"
		}
		return api.AllocClientStatusLost, state.AllocLostDescription
	})
	if err != nil {
		return err
	}
	s.log.Info("node disconnected", "node", node.ID, "unknown_allocs", unknown, "lost_allocs", len(ups)-unknown,
		"window", w, "evals", len(evals))
	s.hb.reset(node.ID, w)
	return nil
}

// disconnectLeft is what is left of a disconnected node's window.
func (s *Server) disconnectLeft(n *api.Node) time.Duration {
	allocs, err := s.State().AllocsByNode(nil, n.ID)
	if err != nil {
		return 0
	}
	since := s.clock.Now().Sub(time.Unix(n.StatusUpdatedAt, 0))
	return disconnectWindow(allocs) - since
}

// disconnectWindow is the longest max_client_disconnect among the groups
// of the live allocs (0 when none sets one).
func disconnectWindow(allocs []*api.Allocation) time.Duration {
	var w time.Duration
	for _, a := range allocs {
		if !a.TerminalStatus() {
			w = max(w, allocMaxDisconnect(a))
		}
	}
	return w
}

// allocMaxDisconnect is the max_client_disconnect of the alloc's group.
func allocMaxDisconnect(a *api.Allocation) time.Duration {
	if a.Job == nil {
		return 0
	}
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil {
		return tg.MaxClientDisconnect
	}
	return 0
}

// reconnectTrigger is the trigger of the evals for a node that sends a
// heartbeat again: reconnect when it was disconnected.
func reconnectTrigger(node *api.Node) string {
	if node.Status == api.NodeStatusDisconnected {
		return api.EvalTriggerReconnect
	}
	return api.EvalTriggerNodeUpdate
}

// reconnected reports whether a client's update of an alloc the server
// marked unknown brings its real status back (its node reconnected).
func reconnected(cur, u *api.Allocation) bool {
	return cur.ClientStatus == api.AllocClientStatusUnknown && u.ClientStatus != api.AllocClientStatusUnknown &&
		cur.DesiredStatus == api.AllocDesiredStatusRun
}

// nodeDown marks the node's live allocs lost, sets the node down and
// creates an eval for every job that had allocs on it, so the scheduler
// replaces them elsewhere.
func (s *Server) nodeDown(ctx context.Context, nodeID, why string) error {
	st := s.State()
	node, err := st.NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status == api.NodeStatusDown {
		return err
	}
	allocs, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	_, evals, err := s.writeNodeLoss(ctx, node, allocs, api.NodeStatusDown, why, nil)
	if err != nil {
		return err
	}
	s.log.Info("node down", "node", nodeID, "evals", len(evals))
	return nil
}

// writeNodeLoss is a node leaving service (down or disconnected): each of
// its live allocs gets the client status mark says ("" leaves it as it
// is), then the node gets status with one eval per job that had allocs
// there (and per system job), so the scheduler replaces them. It returns
// the alloc updates and the evals written. Going down, mark is nil: the
// status write itself loses every live alloc on the node, those placed
// since allocs was read included (state.Txn.LoseNodeAllocs).
func (s *Server) writeNodeLoss(ctx context.Context, node *api.Node, allocs []*api.Allocation, status, why string,
	mark func(*api.Allocation) (clientStatus, desc string)) ([]*api.Allocation, []*api.Evaluation, error) {
	now := s.clock.Now()
	var ups []*api.Allocation
	for _, a := range allocs {
		if a.TerminalStatus() || mark == nil {
			continue
		}
		cs, desc := mark(a)
		if cs == "" {
			continue
		}
		ups = append(ups, &api.Allocation{ID: a.ID, NodeID: node.ID, Namespace: a.Namespace, JobID: a.JobID,
			TaskGroup: a.TaskGroup, ClientStatus: cs, ClientDescription: desc, TaskStates: a.TaskStates,
			ModifyTime: now.UnixNano()}) // the usage ledger's end of a lost alloc
	}
	evals := s.nodeEvals(node, allocs, api.EvalTriggerNodeUpdate, now)
	actx, cancel := s.applyCtx(ctx)
	defer cancel()
	if len(ups) > 0 {
		if _, err := s.applyAllocClientUpdate(actx, ups, nil); err != nil {
			return nil, nil, err
		}
	}
	ev := &api.NodeEvent{Message: why, Subsystem: "Cluster", Timestamp: now}
	if _, err := s.applyNodeStatus(actx, node.ID, status, now.Unix(), ev, evals); err != nil {
		return nil, nil, err
	}
	return ups, evals, nil
}

// nodeEvals builds one eval per job with a live alloc on node, plus one
// per system/sysbatch job (they may need to place on or leave the node).
func (s *Server) nodeEvals(node *api.Node, allocs []*api.Allocation, trigger string, now time.Time) []*api.Evaluation {
	type key struct{ ns, id string }
	seen := map[key]bool{}
	var out []*api.Evaluation
	add := func(job *api.Job) {
		k := key{job.Namespace, job.ID}
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, &api.Evaluation{
			ID: newID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type, TriggeredBy: trigger,
			JobID: job.ID, NodeID: node.ID, NodeModifyIndex: node.ModifyIndex, Status: api.EvalStatusPending,
			CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
		})
	}
	st := s.State()
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		job := a.Job
		if j, err := st.JobByID(nil, a.Namespace, a.JobID); err == nil && j != nil {
			job = j
		}
		if job != nil {
			add(job)
		}
	}
	jobs, err := st.Jobs(nil, "*", "")
	if err == nil {
		for _, j := range jobs {
			if (j.Type == api.JobTypeSystem || j.Type == api.JobTypeSysBatch) && !j.Stop {
				add(j)
			}
		}
	}
	return out
}
