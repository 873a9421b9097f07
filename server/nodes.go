package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// Nodes is the component of client nodes: registration (with an
// introduction where the servers require one), heartbeats, drain and
// eligibility, the clients' alloc status updates (group-committed,
// allocbatch.go), and a node leaving service when its heartbeat TTL runs
// out (the heartbeats duty calls expired: down, or disconnected for its
// allocs' max_client_disconnect). Every write carries the evals it calls
// for. It is safe for concurrent use; the TTL timers are the heartbeats
// duty's (heartbeat.go).
type Nodes struct {
	serverCore
	requireIntro bool          // Config.RequireNodeIntro
	grace        time.Duration // Config.HeartbeatGrace, added to the TTL handed out
	hb           *heartbeats
	intro        *nodeIntros
	allocUpdates allocUpdateBatcher
	servers      serverAddrs
	beats        prometheus.Counter // heartbeats received
}

// serverAddrs is what a node is told of the servers (Server).
type serverAddrs interface {
	// ServerHTTPAddrs lists the alive servers' HTTP addresses, the
	// leader's first; LeaderHTTPAddr is the leader's ("" when unknown).
	ServerHTTPAddrs() []string
	LeaderHTTPAddr() string
}

// CreateNodeIntro signs an introduction token for a node of req.NodePool
// (which must exist) named req.NodeName ("" = any name); see node_intro.go.
func (n *Nodes) CreateNodeIntro(ctx context.Context, req *api.NodeIntroRequest) (*api.NodeIntroResponse, error) {
	return n.intro.create(ctx, req)
}

// RegisterNode registers (or re-registers) a client node. A new node
// starts ready; a re-registration must present the same SecretID and
// keeps drain and eligibility. Where the servers require an introduction
// (Config.RequireNodeIntro), a new node, or one moving to another node
// pool, must also be introduced (node_intro.go). Nodes that (re)become
// ready get evals for system jobs; committing the node wakes blocked
// evals (commitReactor).
func (n *Nodes) RegisterNode(ctx context.Context, in *api.Node, intro api.NodeIntro) (*api.NodeRegisterResponse, error) {
	if in == nil || in.ID == "" {
		return nil, fmt.Errorf("register node: missing node ID: %w", api.ErrBadRequest)
	}
	if in.SecretID == "" {
		return nil, fmt.Errorf("register node %s: missing SecretID: %w", in.ID, api.ErrBadRequest)
	}
	if !n.isLeader() {
		return nil, errNotLeader()
	}
	cur, err := n.state().NodeByID(nil, in.ID)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", in.ID, err)
	}
	if cur != nil && !secretMatch(cur.SecretID, in.SecretID) {
		return nil, fmt.Errorf("node %s: secret does not match: %w", in.ID, api.ErrPermissionDenied)
	}
	node := in.Copy()
	now := n.clock.Now()
	node.Status = api.NodeStatusReady
	node.StatusUpdatedAt = now.Unix()
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = api.NodeSchedulingEligible
	}
	if node.NodePool == "" {
		node.NodePool = api.DefaultNodePool
	}
	if n.requireIntro && (cur == nil || cur.NodePool != node.NodePool) {
		if err := n.intro.check(node, intro); err != nil {
			return nil, err
		}
	}
	var evals []*api.Evaluation
	becameReady := cur == nil || cur.Status != api.NodeStatusReady
	if becameReady {
		var allocs []*api.Allocation
		if cur != nil {
			allocs, _ = n.state().AllocsByNode(nil, in.ID)
		}
		evals = n.nodeEvals(node, allocs, api.EvalTriggerNodeUpdate, now)
	}
	idx, err := n.applyNodeRegister(ctx, node, evals)
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", in.ID, err)
	}
	ttl := n.hb.ttl()
	n.hb.reset(in.ID, ttl+n.grace)
	return n.registerResponse(ttl, idx), nil
}

func (n *Nodes) registerResponse(ttl time.Duration, idx uint64) *api.NodeRegisterResponse {
	r := &api.NodeRegisterResponse{Index: idx, HeartbeatTTL: ttl}
	// Every alive server of the region (from gossip), the leader first.
	r.Servers = n.servers.ServerHTTPAddrs()
	r.LeaderHTTP = n.servers.LeaderHTTPAddr()
	return r
}

func secretMatch(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// authNode returns the node if secret is its SecretID.
func authNode(st *state.StateStore, id, secret string) (*api.Node, error) {
	node, err := st.NodeByID(nil, id)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", id, err)
	}
	if node == nil {
		return nil, fmt.Errorf("node %s: %w", id, api.ErrNodeNotFound)
	}
	if !secretMatch(node.SecretID, secret) {
		return nil, fmt.Errorf("node %s: secret does not match: %w", id, api.ErrPermissionDenied)
	}
	return node, nil
}

// HeartbeatNode renews a node's TTL. A node that was down comes back
// ready (with evals); Status "down" in the request is a graceful leave.
func (n *Nodes) HeartbeatNode(ctx context.Context, id, secret string, req *api.NodeHeartbeatRequest) (*api.NodeRegisterResponse, error) {
	if !n.isLeader() {
		return nil, errNotLeader()
	}
	node, err := authNode(n.state(), id, secret)
	if err != nil {
		return nil, err
	}
	n.beats.Inc()
	idx := n.state().LatestIndex()
	if req != nil && req.Status == api.NodeStatusDown {
		n.hb.clear(id)
		if err := n.down(ctx, id, "node left"); err != nil {
			return nil, fmt.Errorf("node %s leave: %w", id, err)
		}
		return n.registerResponse(n.hb.ttl(), n.state().LatestIndex()), nil
	}
	if node.Status != api.NodeStatusReady {
		now := n.clock.Now()
		allocs, _ := n.state().AllocsByNode(nil, id)
		evals := n.nodeEvals(node, allocs, reconnectTrigger(node), now)
		ev := &api.NodeEvent{Message: "Node heartbeat resumed", Subsystem: "Cluster", Timestamp: now}
		idx, err = n.applyNodeStatus(ctx, id, api.NodeStatusReady, now.Unix(), ev, evals)
		if err != nil {
			return nil, fmt.Errorf("node %s ready: %w", id, err)
		}
	}
	ttl := n.hb.ttl()
	n.hb.reset(id, ttl+n.grace)
	return n.registerResponse(ttl, idx), nil
}

// UpdateAllocsFromClient applies a client's batch of alloc status
// changes. Failed allocs get an eval (the scheduler reschedules them);
// allocs that became terminal free capacity, which wakes blocked evals
// (commitReactor). Only the client-owned fields of allocs are taken
// (ClientStatus, ClientDescription, TaskStates, DeploymentStatus), and
// kept without a copy: the caller hands over allocs (a decoded request)
// and must not modify them afterwards.
func (n *Nodes) UpdateAllocsFromClient(ctx context.Context, nodeID, secret string, allocs []*api.Allocation) (uint64, error) {
	if !n.isLeader() {
		return 0, errNotLeader()
	}
	if _, err := authNode(n.state(), nodeID, secret); err != nil {
		return 0, err
	}
	if len(allocs) == 0 {
		return n.state().LatestIndex(), nil
	}
	st := n.state()
	now := n.clock.Now()
	type jk struct{ ns, id string }
	evalFor := map[jk]*api.Evaluation{}
	var evals []*api.Evaluation
	updates := make([]*api.Allocation, 0, len(allocs))
	ids := make([]string, len(allocs))
	for i, a := range allocs {
		if a == nil || a.ID == "" {
			return 0, fmt.Errorf("alloc update without ID: %w", api.ErrBadRequest)
		}
		ids[i] = a.ID
	}
	onNode, err := st.NodeAllocsByID(nodeID, ids)
	if err != nil {
		return 0, fmt.Errorf("allocs of node %s: %w", nodeID, err)
	}
	for i, a := range allocs {
		cur := onNode[i]
		if cur == nil { // none, or another node's: which, for the error
			if cur, err = st.AllocByID(nil, a.ID); err != nil {
				return 0, fmt.Errorf("alloc %s: %w", a.ID, err)
			}
		}
		if cur == nil {
			return 0, fmt.Errorf("alloc %s: %w", a.ID, api.ErrAllocNotFound)
		}
		if cur.NodeID != nodeID {
			return 0, fmt.Errorf("alloc %s belongs to another node: %w", a.ID, api.ErrPermissionDenied)
		}
		u := &api.Allocation{ID: a.ID, NodeID: cur.NodeID, Namespace: cur.Namespace, JobID: cur.JobID, TaskGroup: cur.TaskGroup,
			ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription, TaskStates: a.TaskStates,
			DeploymentStatus: a.DeploymentStatus, ModifyTime: now.UnixNano(), GPUUsage: a.GPUUsage}
		updates = append(updates, u)
		failed := u.ClientStatus == api.AllocClientStatusFailed && cur.ClientStatus != api.AllocClientStatusFailed &&
			cur.DesiredStatus == api.AllocDesiredStatusRun
		if failed || reconnected(cur, u) {
			k := jk{cur.Namespace, cur.JobID}
			if evalFor[k] != nil {
				continue
			}
			job, _ := st.JobByID(nil, cur.Namespace, cur.JobID)
			if job == nil || job.Stop {
				continue
			}
			trigger := api.EvalTriggerRetryFailedAlloc
			if !failed {
				trigger = api.EvalTriggerReconnect
			}
			e := n.newJobEval(job, trigger)
			e.NodeID = nodeID
			evalFor[k] = e
			evals = append(evals, e)
		}
	}
	idx, err := n.allocUpdates.submit(ctx, updates, evals)
	if err != nil {
		return 0, fmt.Errorf("alloc updates of node %s: %w", nodeID, err)
	}
	return idx, nil
}

// leaderNode is node id as the leader has it, for an operator's change
// of it: an error when this server is not the leader or the node is
// unknown.
func (n *Nodes) leaderNode(id string) (*api.Node, error) {
	if !n.isLeader() {
		return nil, errNotLeader()
	}
	node, err := n.state().NodeByID(nil, id)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", id, err)
	}
	if node == nil {
		return nil, fmt.Errorf("node %s: %w", id, api.ErrNodeNotFound)
	}
	return node, nil
}

// UpdateNodeDrain starts (DrainSpec set) or ends (nil) a drain.
func (n *Nodes) UpdateNodeDrain(ctx context.Context, req *api.NodeUpdateDrainRequest) (*api.NodeUpdateResponse, error) {
	if req == nil || req.NodeID == "" {
		return nil, fmt.Errorf("drain: missing node ID: %w", api.ErrBadRequest)
	}
	node, err := n.leaderNode(req.NodeID)
	if err != nil {
		return nil, err
	}
	now := n.clock.Now()
	var ds *api.DrainStrategy
	msg := "Node drain strategy unset"
	if req.DrainSpec != nil {
		ds = &api.DrainStrategy{DrainSpec: *req.DrainSpec, StartedAt: now}
		switch {
		case ds.Deadline > 0:
			ds.ForceDeadline = now.Add(ds.Deadline)
		case ds.Deadline < 0:
			ds.ForceDeadline = now
		}
		if node.DrainStrategy != nil && !node.DrainStrategy.StartedAt.IsZero() {
			ds.StartedAt = node.DrainStrategy.StartedAt
		}
		msg = "Node drain strategy set"
	}
	ev := &api.NodeEvent{Message: msg, Subsystem: "Drain", Timestamp: now}
	var evals []*api.Evaluation
	if ds == nil && req.MarkEligible && node.SchedulingEligibility != api.NodeSchedulingEligible {
		// The node takes work again: system jobs (whose allocs the drain
		// stopped) are placed there anew, like `node eligibility -enable`.
		evals = n.nodeEvals(node, nil, api.EvalTriggerNodeUpdate, now)
	}
	idx, err := n.applyNodeDrain(ctx, req.NodeID, ds, req.MarkEligible, ev, evals)
	if err != nil {
		return nil, fmt.Errorf("drain node %s: %w", req.NodeID, err)
	}
	return &api.NodeUpdateResponse{EvalIDs: evalIDs(evals), EvalCreateIndex: idx, NodeModifyIndex: idx, Index: idx}, nil
}

// UpdateNodeEligibility toggles scheduling eligibility. A draining node
// cannot be made eligible.
func (n *Nodes) UpdateNodeEligibility(ctx context.Context, req *api.NodeUpdateEligibilityRequest) (*api.NodeUpdateResponse, error) {
	if req == nil || req.NodeID == "" {
		return nil, fmt.Errorf("eligibility: missing node ID: %w", api.ErrBadRequest)
	}
	switch req.Eligibility {
	case api.NodeSchedulingEligible, api.NodeSchedulingIneligible:
	default:
		return nil, fmt.Errorf("eligibility %q: must be %q or %q: %w", req.Eligibility,
			api.NodeSchedulingEligible, api.NodeSchedulingIneligible, api.ErrBadRequest)
	}
	node, err := n.leaderNode(req.NodeID)
	if err != nil {
		return nil, err
	}
	if node.DrainStrategy != nil && req.Eligibility == api.NodeSchedulingEligible {
		return nil, fmt.Errorf("node %s is draining; end the drain first: %w", req.NodeID, api.ErrConflict)
	}
	now := n.clock.Now()
	ev := &api.NodeEvent{Message: "Node marked as " + req.Eligibility, Subsystem: "Cluster", Timestamp: now}
	var evals []*api.Evaluation
	if req.Eligibility == api.NodeSchedulingEligible && node.SchedulingEligibility != api.NodeSchedulingEligible {
		evals = n.nodeEvals(node, nil, api.EvalTriggerNodeUpdate, now)
	}
	idx, err := n.applyNodeEligibility(ctx, req.NodeID, req.Eligibility, ev, evals)
	if err != nil {
		return nil, fmt.Errorf("eligibility of node %s: %w", req.NodeID, err)
	}
	return &api.NodeUpdateResponse{EvalIDs: evalIDs(evals), EvalCreateIndex: idx, NodeModifyIndex: idx, Index: idx}, nil
}

// expired handles a node whose timer ran out: a ready node whose live
// allocs' groups set max_client_disconnect goes disconnected (and its
// timer is re-armed for the longest such window); a disconnected node
// whose window passed, or a node without such allocs, goes down.
func (n *Nodes) expired(ctx context.Context, nodeID string) error {
	st := n.state()
	node, err := st.NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status == api.NodeStatusDown {
		return err
	}
	if node.Status == api.NodeStatusDisconnected {
		return n.down(ctx, nodeID, "node did not reconnect within max_client_disconnect")
	}
	allocs, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	w := disconnectWindow(allocs)
	if w <= 0 {
		return n.down(ctx, nodeID, "node heartbeat missed")
	}
	return n.disconnect(ctx, node, allocs, w)
}

// disconnect marks the node disconnected: live allocs whose group
// sets max_client_disconnect become unknown (the scheduler places a
// replacement but does not stop them: the client may still run them),
// the others lost; every affected job gets an eval. The node's timer is
// re-armed for the window w: without a heartbeat by then it goes down.
func (n *Nodes) disconnect(ctx context.Context, node *api.Node, allocs []*api.Allocation, w time.Duration) error {
	unknown := 0
	why := "node heartbeat missed; disconnected for up to " + w.String() + " (max_client_disconnect)"
	ups, evals, err := n.writeLoss(ctx, node, allocs, api.NodeStatusDisconnected, why, func(a *api.Allocation) (string, string) {
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
	n.log.Info("node disconnected", "node", node.ID, "unknown_allocs", unknown, "lost_allocs", len(ups)-unknown,
		"window", w, "evals", len(evals))
	n.hb.reset(node.ID, w)
	return nil
}

// disconnectLeft is what is left of a disconnected node's window.
func (n *Nodes) disconnectLeft(node *api.Node) time.Duration {
	allocs, err := n.state().AllocsByNode(nil, node.ID)
	if err != nil {
		return 0
	}
	since := n.clock.Now().Sub(time.Unix(node.StatusUpdatedAt, 0))
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

// down marks the node's live allocs lost, sets the node down and
// creates an eval for every job that had allocs on it, so the scheduler
// replaces them elsewhere.
func (n *Nodes) down(ctx context.Context, nodeID, why string) error {
	st := n.state()
	node, err := st.NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status == api.NodeStatusDown {
		return err
	}
	allocs, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	_, evals, err := n.writeLoss(ctx, node, allocs, api.NodeStatusDown, why, nil)
	if err != nil {
		return err
	}
	n.log.Info("node down", "node", nodeID, "evals", len(evals))
	return nil
}

// writeLoss is a node leaving service (down or disconnected): each of
// its live allocs gets the client status mark says ("" leaves it as it
// is), then the node gets status with one eval per job that had allocs
// there (and per system job), so the scheduler replaces them. It returns
// the alloc updates and the evals written. Going down, mark is nil: the
// status write itself loses every live alloc on the node, those placed
// since allocs was read included (state.Txn.LoseNodeAllocs).
func (n *Nodes) writeLoss(ctx context.Context, node *api.Node, allocs []*api.Allocation, status, why string,
	mark func(*api.Allocation) (clientStatus, desc string)) ([]*api.Allocation, []*api.Evaluation, error) {
	now := n.clock.Now()
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
	evals := n.nodeEvals(node, allocs, api.EvalTriggerNodeUpdate, now)
	actx, cancel := n.applyCtx(ctx)
	defer cancel()
	if len(ups) > 0 {
		if _, err := n.applyAllocClientUpdate(actx, ups, nil); err != nil {
			return nil, nil, err
		}
	}
	ev := &api.NodeEvent{Message: why, Subsystem: "Cluster", Timestamp: now}
	if _, err := n.applyNodeStatus(actx, node.ID, status, now.Unix(), ev, evals); err != nil {
		return nil, nil, err
	}
	return ups, evals, nil
}

// nodeEvals builds one eval per job with a live alloc on node, plus one
// per system/sysbatch job (they may need to place on or leave the node).
func (n *Nodes) nodeEvals(node *api.Node, allocs []*api.Allocation, trigger string, now time.Time) []*api.Evaluation {
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
	st := n.state()
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
