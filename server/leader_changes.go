package server

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/server/raftstore"
)

// leaderChanges tells waiters that the leader changed: a request held for
// a leader (agent/http's forwardWithHold: writes during an election, a
// dev agent's first requests) goes on at once instead of at its next
// retry, 5-50 ms later.
type leaderChanges struct {
	mu sync.Mutex
	ch chan struct{} // closed and dropped at the next change
}

// next returns a channel closed at the next change.
func (l *leaderChanges) next() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch == nil {
		l.ch = make(chan struct{})
	}
	return l.ch
}

func (l *leaderChanges) notify() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ch != nil {
		close(l.ch)
		l.ch = nil
	}
}

// watch feeds r's leader observations (this server winning an election,
// a follower learning the leader, or losing it) to the waiters until ctx
// ends, in a goroutine wg tracks.
func (l *leaderChanges) watch(ctx context.Context, wg *sync.WaitGroup, r *raftstore.Raft) {
	obs := make(chan raft.Observation, 16)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(o)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer r.DeregisterObserver(o)
		for {
			select {
			case <-ctx.Done():
				return
			case <-obs:
				l.notify()
			}
		}
	}()
}

// LeaderChanged returns a channel closed at the next change of leader,
// as this server sees it. Take it before looking at the leader, then wait
// on it: no change is missed.
func (s *Server) LeaderChanged() <-chan struct{} { return s.leaderChanges.next() }

// readiness is the server's ready signal (Ready): a channel closed once
// this server leads and its leader duties run, replaced by an open one
// when leadership is revoked.
type readiness struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns the current channel.
func (r *readiness) wait() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

// set closes the channel (ready) or replaces a closed one (not ready).
func (r *readiness) set(ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	select {
	case <-r.ch:
		if !ready {
			r.ch = make(chan struct{})
		}
	default:
		if ready {
			close(r.ch)
		}
	}
}

// Ready returns a channel closed once this server leads and is ready to
// work: the broker, blocked tracker and plan queue are enabled, stored
// evals restored, heartbeat timers armed and every leader duty started.
// While it is not, the channel is open; losing leadership swaps in a new
// open channel, so take it again after a change (LeaderChanged) and wait
// on it rather than on a loop over IsLeader.
func (s *Server) Ready() <-chan struct{} { return s.ready.wait() }

// BrokerIdle returns the eval broker's idle signal (broker.EvalBroker.Idle):
// a channel closed once no eval is ready or in flight on this server
// (always, on a follower). Take it after the write whose evals it should
// cover: the write's evals are enqueued before the write returns.
func (s *Server) BrokerIdle() <-chan struct{} { return s.broker.Idle() }
