package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

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
