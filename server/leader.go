package server

import (
	"context"
	"fmt"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
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
	if err := s.rs.raft.Barrier(s.cfg.RaftApplyTimeout).Error(); err != nil {
		s.log.Error("leadership barrier failed", "err", err)
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.leaderMu.Lock()
	s.leaderCancel = cancel
	s.leaderMu.Unlock()

	// Periodic launches count from here, read before the broker is
	// enabled (what tests take for "leader ready"), not when a goroutine
	// happens to run.
	since := s.clock.Now()
	s.planQueue.SetEnabled(true)
	s.broker.SetEnabled(true)
	s.blocked.SetEnabled(true)
	if err := s.restoreEvals(); err != nil {
		s.log.Error("restore evals", "err", err)
	}
	nodes, err := s.State().Nodes(nil, "")
	if err != nil {
		s.log.Error("list nodes for heartbeats", "err", err)
	}
	s.hb.enable(ctx, nodes) // armed before anything can advance the clock

	for _, d := range s.leaderDuties(since) {
		s.leaderGo(func() { d.Run(ctx) })
	}
	if s.cfg.RequireNodeIntro {
		// Introductions are signed with the keyring: its first key is
		// made now, so that followers can sign them from the start.
		s.leaderGo(func() {
			if _, _, err := s.activeKey(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("create the keyring's first key", "err", err)
			}
		})
	}
	s.log.Info("leadership established", "workers", s.cfg.NumSchedulers, "nodes", len(nodes))
}

// leaderDuties builds the duties of one leadership term. The state-driven
// ones get the server's core (state, Raft writes, clock, log), workers the
// broker, plan queue and blocked tracker besides, autopilot the Raft node
// and gossip membership; none gets the whole server.
func (s *Server) leaderDuties(since time.Time) []leaderDuty {
	duties := []leaderDuty{
		s.hb,
		&planApplier{serverCore: s.named("planapplier"), plans: s.planQueue, tokens: s.broker, hook: &s.planHook,
			predecode: s.rs.fsm.Predecode, applied: s.metrics.planApply, placed: s.metrics.placements},
		&drainer{serverCore: s.named("drainer")},
		&evalReaper{serverCore: s.named("evalreaper"), queue: &s.reap},
		&evalGC{serverCore: s.named("evalgc"), interval: s.cfg.EvalGCInterval, threshold: s.cfg.EvalGCThreshold},
		&periodicLauncher{serverCore: s.named("periodic"), since: since},
		&deploymentWatcher{serverCore: s.named("deploymentwatcher")},
	}
	for range s.cfg.NumSchedulers {
		duties = append(duties, &worker{serverCore: s.named("worker"), evals: s.broker, plans: s.planQueue,
			blocked: s.blocked, obsolete: s.cancelDuplicateBlocked, fair: s.fair, maxGroupCount: s.cfg.JobMaxGroupCount})
	}
	if a := s.newAutopilot(); a != nil {
		duties = append(duties, a)
	}
	return duties
}

func (s *Server) leaderGo(f func()) {
	s.leaderWG.Add(1)
	go func() {
		defer s.leaderWG.Done()
		f()
	}()
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
	cancel()
	s.broker.SetEnabled(false)
	s.blocked.SetEnabled(false)
	s.planQueue.SetEnabled(false)
	s.leaderWG.Wait() // the heartbeats duty disarms its timers on the way out
	s.log.Info("leadership revoked")
}

// restoreEvals hands every stored eval to the commit reactor, as if it
// had just been committed: pending ones go to the broker, blocked ones to
// the tracker.
func (s *Server) restoreEvals() error {
	evals, err := s.State().Evals(nil, state.AllNamespaces, "")
	if err != nil {
		return fmt.Errorf("list evals: %w", err)
	}
	s.reactor.dispatch(evals)
	return nil
}

// planRetryBackoff is the WaitUntil delay of a max-plan-attempts follow-up.
const planRetryBackoff = 5 * time.Second
