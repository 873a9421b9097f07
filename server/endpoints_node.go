package server

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/drover/drover/api"
)

// RegisterNode registers (or re-registers) a client node. A new node
// starts ready; a re-registration must present the same SecretID and
// keeps drain and eligibility. Where the servers require an introduction
// (Config.RequireNodeIntro), a new node, or one moving to another node
// pool, must also be introduced (node_intro.go). Nodes that (re)become
// ready get evals for system jobs; committing the node wakes blocked
// evals (commitReactor).
func (s *Server) RegisterNode(ctx context.Context, n *api.Node, intro api.NodeIntro) (*api.NodeRegisterResponse, error) {
	if n == nil || n.ID == "" {
		return nil, fmt.Errorf("register node: missing node ID: %w", api.ErrBadRequest)
	}
	if n.SecretID == "" {
		return nil, fmt.Errorf("register node %s: missing SecretID: %w", n.ID, api.ErrBadRequest)
	}
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	cur, err := s.State().NodeByID(nil, n.ID)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.ID, err)
	}
	if cur != nil && !secretMatch(cur.SecretID, n.SecretID) {
		return nil, fmt.Errorf("node %s: secret does not match: %w", n.ID, api.ErrPermissionDenied)
	}
	node := n.Copy()
	now := s.clock.Now()
	node.Status = api.NodeStatusReady
	node.StatusUpdatedAt = now.Unix()
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = api.NodeSchedulingEligible
	}
	if node.NodePool == "" {
		node.NodePool = api.DefaultNodePool
	}
	if s.cfg.RequireNodeIntro && (cur == nil || cur.NodePool != node.NodePool) {
		if err := s.checkIntro(node, intro); err != nil {
			return nil, err
		}
	}
	var evals []*api.Evaluation
	becameReady := cur == nil || cur.Status != api.NodeStatusReady
	if becameReady {
		var allocs []*api.Allocation
		if cur != nil {
			allocs, _ = s.State().AllocsByNode(nil, n.ID)
		}
		evals = s.nodeEvals(node, allocs, api.EvalTriggerNodeUpdate, now)
	}
	idx, err := s.applyNodeRegister(ctx, node, evals)
	if err != nil {
		return nil, fmt.Errorf("register node %s: %w", n.ID, err)
	}
	ttl := s.hb.ttl()
	s.hb.reset(n.ID, ttl+s.cfg.HeartbeatGrace)
	return s.registerResponse(ttl, idx), nil
}

func (s *Server) registerResponse(ttl time.Duration, idx uint64) *api.NodeRegisterResponse {
	r := &api.NodeRegisterResponse{Index: idx, HeartbeatTTL: ttl}
	// Every alive server of the region (from gossip), the leader first.
	r.Servers = s.ServerHTTPAddrs()
	r.LeaderHTTP = s.LeaderHTTPAddr()
	return r
}

func secretMatch(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// authNode returns the node if secret is its SecretID.
func (s *Server) authNode(id, secret string) (*api.Node, error) {
	node, err := s.State().NodeByID(nil, id)
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
func (s *Server) HeartbeatNode(ctx context.Context, id, secret string, req *api.NodeHeartbeatRequest) (*api.NodeRegisterResponse, error) {
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	node, err := s.authNode(id, secret)
	if err != nil {
		return nil, err
	}
	s.metrics.heartbeats.Inc()
	idx := s.State().LatestIndex()
	if req != nil && req.Status == api.NodeStatusDown {
		s.hb.clear(id)
		if err := s.nodeDown(ctx, id, "node left"); err != nil {
			return nil, fmt.Errorf("node %s leave: %w", id, err)
		}
		return s.registerResponse(s.hb.ttl(), s.State().LatestIndex()), nil
	}
	if node.Status != api.NodeStatusReady {
		now := s.clock.Now()
		allocs, _ := s.State().AllocsByNode(nil, id)
		evals := s.nodeEvals(node, allocs, reconnectTrigger(node), now)
		ev := &api.NodeEvent{Message: "Node heartbeat resumed", Subsystem: "Cluster", Timestamp: now}
		idx, err = s.applyNodeStatus(ctx, id, api.NodeStatusReady, now.Unix(), ev, evals)
		if err != nil {
			return nil, fmt.Errorf("node %s ready: %w", id, err)
		}
	}
	ttl := s.hb.ttl()
	s.hb.reset(id, ttl+s.cfg.HeartbeatGrace)
	return s.registerResponse(ttl, idx), nil
}

// UpdateAllocsFromClient applies a client's batch of alloc status
// changes. Failed allocs get an eval (the scheduler reschedules them);
// allocs that became terminal free capacity, which wakes blocked evals
// (commitReactor). Only the client-owned fields of allocs are taken
// (ClientStatus, ClientDescription, TaskStates, DeploymentStatus), and
// kept without a copy: the caller hands over allocs (a decoded request)
// and must not modify them afterwards.
func (s *Server) UpdateAllocsFromClient(ctx context.Context, nodeID, secret string, allocs []*api.Allocation) (uint64, error) {
	if !s.IsLeader() {
		return 0, errNotLeader()
	}
	if _, err := s.authNode(nodeID, secret); err != nil {
		return 0, err
	}
	if len(allocs) == 0 {
		return s.State().LatestIndex(), nil
	}
	st := s.State()
	now := s.clock.Now()
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
			DeploymentStatus: a.DeploymentStatus, ModifyTime: now.UnixNano()}
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
			e := s.newJobEval(job, trigger)
			e.NodeID = nodeID
			evalFor[k] = e
			evals = append(evals, e)
		}
	}
	idx, err := s.allocUpdates.submit(ctx, updates, evals)
	if err != nil {
		return 0, fmt.Errorf("alloc updates of node %s: %w", nodeID, err)
	}
	return idx, nil
}

// UpdateNodeDrain starts (DrainSpec set) or ends (nil) a drain.
func (s *Server) UpdateNodeDrain(ctx context.Context, req *api.NodeUpdateDrainRequest) (*api.NodeUpdateResponse, error) {
	if req == nil || req.NodeID == "" {
		return nil, fmt.Errorf("drain: missing node ID: %w", api.ErrBadRequest)
	}
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	node, err := s.State().NodeByID(nil, req.NodeID)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, err)
	}
	if node == nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, api.ErrNodeNotFound)
	}
	now := s.clock.Now()
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
		evals = s.nodeEvals(node, nil, api.EvalTriggerNodeUpdate, now)
	}
	idx, err := s.applyNodeDrain(ctx, req.NodeID, ds, req.MarkEligible, ev, evals)
	if err != nil {
		return nil, fmt.Errorf("drain node %s: %w", req.NodeID, err)
	}
	return &api.NodeUpdateResponse{EvalIDs: evalIDs(evals), EvalCreateIndex: idx, NodeModifyIndex: idx, Index: idx}, nil
}

// UpdateNodeEligibility toggles scheduling eligibility. A draining node
// cannot be made eligible.
func (s *Server) UpdateNodeEligibility(ctx context.Context, req *api.NodeUpdateEligibilityRequest) (*api.NodeUpdateResponse, error) {
	if req == nil || req.NodeID == "" {
		return nil, fmt.Errorf("eligibility: missing node ID: %w", api.ErrBadRequest)
	}
	switch req.Eligibility {
	case api.NodeSchedulingEligible, api.NodeSchedulingIneligible:
	default:
		return nil, fmt.Errorf("eligibility %q: must be %q or %q: %w", req.Eligibility,
			api.NodeSchedulingEligible, api.NodeSchedulingIneligible, api.ErrBadRequest)
	}
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	node, err := s.State().NodeByID(nil, req.NodeID)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, err)
	}
	if node == nil {
		return nil, fmt.Errorf("node %s: %w", req.NodeID, api.ErrNodeNotFound)
	}
	if node.DrainStrategy != nil && req.Eligibility == api.NodeSchedulingEligible {
		return nil, fmt.Errorf("node %s is draining; end the drain first: %w", req.NodeID, api.ErrConflict)
	}
	now := s.clock.Now()
	ev := &api.NodeEvent{Message: "Node marked as " + req.Eligibility, Subsystem: "Cluster", Timestamp: now}
	var evals []*api.Evaluation
	if req.Eligibility == api.NodeSchedulingEligible && node.SchedulingEligibility != api.NodeSchedulingEligible {
		evals = s.nodeEvals(node, nil, api.EvalTriggerNodeUpdate, now)
	}
	idx, err := s.applyNodeEligibility(ctx, req.NodeID, req.Eligibility, ev, evals)
	if err != nil {
		return nil, fmt.Errorf("eligibility of node %s: %w", req.NodeID, err)
	}
	return &api.NodeUpdateResponse{EvalIDs: evalIDs(evals), EvalCreateIndex: idx, NodeModifyIndex: idx, Index: idx}, nil
}

// StopAlloc asks the scheduler to stop and replace an allocation.
func (s *Server) StopAlloc(ctx context.Context, id string) (*api.AllocStopResponse, error) {
	if !s.IsLeader() {
		return nil, errNotLeader()
	}
	st := s.State()
	a, err := st.AllocByID(nil, id)
	if err != nil {
		return nil, fmt.Errorf("alloc %s: %w", id, err)
	}
	if a == nil {
		return nil, fmt.Errorf("alloc %s: %w", id, api.ErrAllocNotFound)
	}
	job, _ := st.JobByID(nil, a.Namespace, a.JobID)
	if job == nil {
		job = a.Job
	}
	if job == nil {
		return nil, fmt.Errorf("job %q of alloc %s: %w", a.JobID, id, api.ErrJobNotFound)
	}
	t := true
	tr := map[string]*api.DesiredTransition{id: {Migrate: &t}}
	eval := s.newJobEval(job, api.EvalTriggerAllocStop)
	idx, err := s.applyDesiredTransitions(ctx, tr, []*api.Evaluation{eval})
	if err != nil {
		return nil, fmt.Errorf("stop alloc %s: %w", id, err)
	}
	return &api.AllocStopResponse{EvalID: eval.ID, Index: idx}, nil
}
