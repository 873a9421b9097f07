package server

import (
	"context"
	"fmt"
	"log/slog"

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
	r, err := raftstore.New(raftstore.Config{
		DataDir: cfg.DataDir, BindAddr: cfg.BindAddr, RaftPort: cfg.RaftPort, RaftAddr: cfg.RaftAddr,
		Listener: cfg.RaftListener, BootstrapExpect: be, FSM: f, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start raft: %w", err)
	}
	return &raftSystem{fsm: f, raft: r}, nil
}

func (r *raftSystem) state() *state.StateStore { return r.fsm.State() }

func (r *raftSystem) shutdown(ctx context.Context) error {
	return r.raft.Shutdown(ctx)
}
