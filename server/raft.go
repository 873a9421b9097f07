package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/raftstore"
	"github.com/drover/drover/server/state"
)

// raftSystem is the server's Raft node and FSM.
type raftSystem struct {
	fsm  *fsm.FSM
	raft *raftstore.Raft
}

// newRaftSystem starts Raft over a new FSM whose commits feed reactor.
func newRaftSystem(cfg *Config, log *slog.Logger, reactor *commitReactor) (*raftSystem, error) {
	f := fsm.New(fsm.Config{Logger: log, Hooks: reactor})
	reactor.state = f.State
	be := cfg.BootstrapExpect
	if cfg.DevMode && be == 0 {
		be = 1
	}
	rc := raftstore.Config{
		DataDir: cfg.DataDir, BindAddr: cfg.BindAddr, RaftPort: cfg.RaftPort, RaftAddr: cfg.RaftAddr,
		Listener: cfg.RaftListener, BootstrapExpect: be, FSM: f, Logger: log, TLS: cfg.RaftTLS,
	}
	if cfg.DevMode && be == 1 {
		// A dev agent is its own cluster (with or without -data-dir):
		// nobody to wait for, so it elects itself in 10-20 ms (Raft's
		// shortest, 5 ms, made elections time out before the vote's
		// fsyncs ended and start over: slower).
		rc.Tune = func(c *raft.Config) {
			c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond
		}
	}
	r, err := raftstore.New(rc)
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	return &raftSystem{fsm: f, raft: r}, nil
}

func (r *raftSystem) state() *state.StateStore { return r.fsm.State() }

func (r *raftSystem) shutdown(ctx context.Context) error {
	return r.raft.Shutdown(ctx)
}

// IsLeader reports whether this server is the Raft leader.
func (s *Server) IsLeader() bool { return s.rs.raft.State() == raft.Leader }

// Leader returns the leader's Raft address, or "".
func (s *Server) Leader() string {
	addr, _ := s.rs.raft.LeaderWithID()
	return string(addr)
}

// Peers returns the Raft addresses of the voters.
func (s *Server) Peers() []string {
	f := s.rs.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil
	}
	var out []string
	for _, srv := range f.Configuration().Servers {
		out = append(out, string(srv.Address))
	}
	return out
}

// LastContact is how long ago the leader was heard from (0 on the leader).
func (s *Server) LastContact() time.Duration {
	if s.IsLeader() {
		return 0
	}
	lc := s.rs.raft.LastContact()
	if lc.IsZero() {
		return 0
	}
	return time.Since(lc)
}

// RaftID is this server's Raft server ID (persisted in the data dir).
func (s *Server) RaftID() string { return string(s.rs.raft.ID) }

// RaftAddr is this server's Raft address as peers dial it.
func (s *Server) RaftAddr() string { return string(s.rs.raft.Addr) }

// RaftConfiguration lists the Raft peers with their gossip names.
func (s *Server) RaftConfiguration() (*api.RaftConfiguration, error) {
	f := s.rs.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	names := map[string]string{}
	for _, m := range s.Members() {
		names[m.ID] = m.Name
	}
	if _, ok := names[s.RaftID()]; !ok {
		names[s.RaftID()] = s.cfg.NodeName + "." + s.cfg.Region
	}
	leader := s.Leader()
	out := &api.RaftConfiguration{Index: f.Index(), Servers: []*api.RaftServer{}}
	for _, sv := range f.Configuration().Servers {
		out.Servers = append(out.Servers, &api.RaftServer{
			ID: string(sv.ID), Node: names[string(sv.ID)], Address: string(sv.Address),
			Leader: string(sv.Address) == leader, Voter: sv.Suffrage == raft.Voter, RaftProtocol: "3",
		})
	}
	return out, nil
}

// RaftConfigurationIndex is the index of the latest Raft configuration
// (RaftConfiguration's Index), read without the member lookups.
func (s *Server) RaftConfigurationIndex() uint64 { return s.rs.raft.GetConfiguration().Index() }

// VerifyLeader confirms, with a round of heartbeats, that this server is
// still the leader (for ?consistent reads). It fails with api.ErrNotLeader.
func (s *Server) VerifyLeader(ctx context.Context) error {
	f := s.rs.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("verify leadership: %v: %w", err, api.ErrNotLeader)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("verify leadership: %w", errors.Join(ctx.Err(), api.ErrTimeout))
	}
}

// TransferLeadership hands leadership to another voter before a graceful
// shutdown, so the cluster does not wait for an election timeout. It is a
// no-op on a follower or a single server.
func (s *Server) TransferLeadership(ctx context.Context) error {
	if !s.IsLeader() || len(s.Peers()) < 2 {
		return nil
	}
	f := s.rs.raft.LeadershipTransfer()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("leadership transfer: %w", err)
		}
		s.core.log.Info("leadership transferred before shutdown")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leadership transfer: %w", ctx.Err())
	}
}

// raftApply is the single place every write goes through. On a follower
// it fails with api.ErrNotLeader (forwarding to the leader hooks in here).
// It returns the log index and the FSM's response; an error response from
// the FSM is returned as the error.
func (s *Server) raftApply(ctx context.Context, buf []byte) (uint64, any, error) {
	if !s.IsLeader() {
		return 0, nil, errNotLeader()
	}
	timeout := s.cfg.RaftApplyTimeout
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d < timeout {
			timeout = d
		}
	}
	if timeout <= 0 {
		return 0, nil, fmt.Errorf("raft apply: %w", ctx.Err())
	}
	f := s.rs.raft.Apply(buf, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return 0, nil, fmt.Errorf("raft apply: %v: %w", err, errNotLeader())
		}
		return 0, nil, fmt.Errorf("raft apply: %w", err)
	}
	resp := f.Response()
	if err, ok := resp.(error); ok && err != nil {
		return f.Index(), nil, err
	}
	return f.Index(), resp, nil
}
