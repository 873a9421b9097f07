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
