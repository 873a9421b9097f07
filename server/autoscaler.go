package server

import (
	"context"
	"fmt"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/autoscale"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/scheduler"
)

// AutoscaleConfig is the cluster autoscaler (server/autoscale): one policy
// per node pool and the providers they name. With no policy the leader
// duty does not run.
type AutoscaleConfig struct {
	Policies  []autoscale.Policy
	Providers map[string]autoscale.Provider
	// Interval between passes (autoscale.DefaultInterval when 0).
	Interval time.Duration
}

// autoscaleCluster is the server as the autoscaler sees it: the state
// with the blocked evals, node drains through Raft and node removal.
type autoscaleCluster struct{ serverCore }

var _ autoscale.Cluster = (*autoscaleCluster)(nil)

func (c *autoscaleCluster) State() (scheduler.State, []*api.Evaluation, error) {
	snap, err := c.state().Snapshot()
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	evals, err := snap.Evals(nil, "", "")
	if err != nil {
		return nil, nil, fmt.Errorf("list evals: %w", err)
	}
	var blocked []*api.Evaluation
	for _, e := range evals {
		if e.Status == api.EvalStatusBlocked {
			blocked = append(blocked, e)
		}
	}
	return snap.Scheduler(), blocked, nil
}

// Drain starts the node's drain with the deadline and reason (the
// drainer duty migrates its work).
func (c *autoscaleCluster) Drain(ctx context.Context, nodeID string, deadline time.Duration, reason string) error {
	now := c.clock.Now()
	ds := &api.DrainStrategy{DrainSpec: api.DrainSpec{Deadline: deadline, Reason: reason}, StartedAt: now}
	switch {
	case deadline > 0:
		ds.ForceDeadline = now.Add(deadline)
	case deadline < 0:
		ds.ForceDeadline = now
	}
	ev := &api.NodeEvent{Message: "Node drain strategy set: " + reason, Subsystem: "Autoscaler", Timestamp: now}
	actx, cancel := c.applyCtx(ctx)
	defer cancel()
	if _, err := c.applyNodeDrain(actx, nodeID, ds, false, ev, nil); err != nil {
		return fmt.Errorf("drain node %s: %w", nodeID, err)
	}
	return nil
}

// Remove deregisters a node whose instance was destroyed.
func (c *autoscaleCluster) Remove(ctx context.Context, nodeID string) error {
	actx, cancel := c.applyCtx(ctx)
	defer cancel()
	if _, err := c.apply(actx, fsm.NodeDeregisterType, &fsm.NodeDeregisterRequest{NodeIDs: []string{nodeID}}); err != nil {
		return fmt.Errorf("deregister node %s: %w", nodeID, err)
	}
	return nil
}

// newAutoscaler is the autoscaler leader duty of one term. Its
// counterfactual passes take the workers' preemption rules, algorithm and
// group count bound (not the fair shares: reclaim across queues makes no
// room a new node would).
func newAutoscaler(c serverCore, cfg AutoscaleConfig, maxGroupCount int) leaderDuty {
	options := func() scheduler.Options {
		opts := scheduler.Options{Now: c.clock.Now(), MaxGroupCount: maxGroupCount}
		if snap, err := c.state().Snapshot(); err == nil {
			pre, algorithm := schedulerOptions(snap)
			opts.Preemption, opts.Algorithm = &pre, algorithm
		}
		return opts
	}
	return &autoscale.Scaler{Policies: cfg.Policies, Providers: cfg.Providers, Cluster: &autoscaleCluster{serverCore: c},
		Clock: c.clock, Log: c.log, Interval: cfg.Interval, Options: options}
}
