package server

import (
	"context"
	"fmt"
	"time"

	"github.com/drover/drover/api"
)

// errNotLeader names the leader when one is known.
func errNotLeader() error { return fmt.Errorf("write on a follower: %w", api.ErrNotLeader) }

// monitorLeadership turns leader duties on and off as Raft reports
// leadership changes. LeaderCh never blocks Raft: it keeps only the latest
// transition, so a `true` while already leading means leadership was lost
// and regained meanwhile.
func (s *Server) monitorLeadership() {
	ch := s.rs.raft.LeaderCh()
	for {
		select {
		case <-s.ctx.Done():
			return
		case isLeader := <-ch:
			s.revokeLeadership()
			if isLeader {
				s.establishLeadership()
			}
		case req := <-s.cluster.pause:
			s.pauseLeadership(req)
		case <-s.cluster.reestablish:
			// Membership was set or a snapshot was restored: restart the
			// leader duties from the current state.
			if s.IsLeader() {
				s.revokeLeadership()
				s.establishLeadership()
			}
		}
	}
}

// establishLeadership waits for the FSM to catch up with the log, enables
// the broker, blocked tracker and plan queue, restores evals from state,
// arms heartbeat timers and starts every leader duty (leaderDuties).
func (s *Server) establishLeadership() {
	log := s.core.log
	if err := s.rs.raft.Barrier(s.cfg.RaftApplyTimeout).Error(); err != nil {
		log.Error("leadership barrier failed", "err", err)
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.leaderMu.Lock()
	s.leaderCancel = cancel
	s.leaderMu.Unlock()

	// Periodic launches count from here, read before the broker is
	// enabled, not when a goroutine happens to run.
	since := s.core.clock.Now()
	s.planQueue.SetEnabled(true)
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	// Every stored eval goes to the commit reactor, as if just committed:
	// pending ones to the broker, blocked ones to the tracker.
	if err := s.reactor.restore(); err != nil {
		log.Error("restore evals", "err", err)
	}
	nodes, err := s.State().Nodes(nil, "")
	if err != nil {
		log.Error("list nodes for heartbeats", "err", err)
	}
	s.hb.enable(ctx, nodes) // armed before anything can advance the clock
	if err := seedWorkload(s.workload, s.State()); err != nil {
		log.Error("seed the expected GPU workload", "err", err)
	}

	run := func(f func()) {
		s.leaderWG.Add(1)
		go func() {
			defer s.leaderWG.Done()
			f()
		}()
	}
	for _, d := range s.leaderDuties(since) {
		run(func() { d.Run(ctx) })
	}
	if s.cfg.RequireNodeIntro {
		// Introductions are signed with the keyring: its first key is
		// made now, so that followers can sign them from the start.
		run(func() {
			if _, _, err := s.keyring.activeKey(ctx); err != nil && ctx.Err() == nil {
				log.Error("create the keyring's first key", "err", err)
			}
		})
	}
	s.ready.set(true)
	log.Info("leadership established", "workers", s.cfg.NumSchedulers, "nodes", len(nodes))
}

// leaderDuties builds the duties of one leadership term. The state-driven
// ones get the server's core (state, Raft writes, clock, log), workers the
// broker, plan queue and blocked tracker besides, autopilot (with gossip
// only) the Raft node and the membership; none gets the whole server.
func (s *Server) leaderDuties(since time.Time) []leaderDuty {
	c := &s.core
	duties := []leaderDuty{
		s.hb,
		&planApplier{serverCore: c.named("planapplier"), plans: s.planQueue, tokens: s.broker, hook: &s.planHook,
			predecode: s.rs.fsm.Predecode, applied: s.metrics.planApply, placed: s.metrics.placements},
		&drainer{serverCore: c.named("drainer")},
		&evalReaper{serverCore: c.named("evalreaper"), queue: &s.reap},
		&evalGC{serverCore: c.named("evalgc"), interval: s.cfg.EvalGCInterval, threshold: s.cfg.EvalGCThreshold},
		&periodicLauncher{serverCore: c.named("periodic"), since: since},
		&deploymentWatcher{serverCore: c.named("deploymentwatcher")},
		&multiregionRollout{serverCore: c.named("multiregion"), home: s.cfg.Region, regions: s.cfg.Regions},
	}
	for range s.cfg.NumSchedulers {
		duties = append(duties, &worker{serverCore: c.named("worker"), evals: s.broker, plans: s.planQueue,
			blocked: s.blocked, obsolete: s.reap.superseded, fair: s.fair, maxGroupCount: s.cfg.JobMaxGroupCount,
			workload: s.workload, usage: s.usage})
	}
	if m := s.cluster.membership(); m != nil {
		duties = append(duties, newAutopilot(&s.cfg, s.rs.raft, m, c.log))
	}
	if len(s.cfg.Autoscale.Policies) > 0 {
		duties = append(duties, newAutoscaler(c.named("autoscaler"), s.cfg.Autoscale, s.cfg.JobMaxGroupCount))
	}
	duties = append(duties, &idleReclaimer{serverCore: c.named("idlereclaim")})
	if s.cfg.ACLReplication != nil {
		duties = append(duties, &aclReplicator{serverCore: c.named("aclreplication"), src: s.cfg.ACLReplication})
	}
	if s.cfg.Regions != nil {
		duties = append(duties, &spiller{serverCore: c.named("spill"), regions: s.cfg.Regions, home: s.cfg.Region})
	}
	if s.cfg.Defrag.Enabled {
		duties = append(duties, &defragDuty{serverCore: c.named("defrag"), cfg: s.cfg.Defrag})
	}
	return duties
}

// revokeLeadership stops every leader duty and waits for its goroutines.
func (s *Server) revokeLeadership() {
	s.leaderMu.Lock()
	cancel := s.leaderCancel
	s.leaderCancel = nil
	s.leaderMu.Unlock()
	if cancel == nil {
		return
	}
	s.ready.set(false)
	cancel()
	s.broker.SetEnabled(false)
	s.blocked.SetEnabled(false)
	s.planQueue.SetEnabled(false)
	s.leaderWG.Wait() // the heartbeats duty disarms its timers on the way out
	s.core.log.Info("leadership revoked")
}

// pauseRequest stops leader duties: paused is closed once they stopped;
// closing resume restarts them (if still leader).
type pauseRequest struct {
	paused chan struct{}
	resume chan struct{}
}

// pauseLeadership runs on the leader loop.
func (s *Server) pauseLeadership(req pauseRequest) {
	s.revokeLeadership()
	close(req.paused)
	select {
	case <-req.resume:
	case <-s.ctx.Done():
		return
	}
	if s.IsLeader() {
		s.establishLeadership()
	}
}

// withLeaderDutiesPaused runs fn while no leader duty (worker, plan
// applier, heartbeat timer ...) runs, so nothing writes from old state.
func (s *Server) withLeaderDutiesPaused(ctx context.Context, fn func() error) error {
	req := pauseRequest{paused: make(chan struct{}), resume: make(chan struct{})}
	select {
	case s.cluster.pause <- req:
	case <-ctx.Done():
		return fmt.Errorf("pause leader duties: %w", ctx.Err())
	case <-s.ctx.Done():
		return fmt.Errorf("pause leader duties: %w", api.ErrUnavailable)
	}
	defer close(req.resume)
	select {
	case <-req.paused:
	case <-s.ctx.Done():
		return fmt.Errorf("pause leader duties: %w", api.ErrUnavailable)
	}
	return fn()
}

// planRetryBackoff is the WaitUntil delay of a max-plan-attempts follow-up.
const planRetryBackoff = 5 * time.Second
