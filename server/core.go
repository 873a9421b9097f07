package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/broker"
	"github.com/drover/drover/server/state"
)

// serverCore is what the server's parts share, and all that a leader duty
// gets of the server: the current state, the Raft write path (typed
// commands, apply.go), the injected clock, a logger and the apply timeout.
// *Server embeds it; each duty (drainer, periodic launcher, deployment
// watcher, GC, eval reaper) embeds a copy with its own logger instead of
// holding the whole server.
type serverCore struct {
	state func() *state.StateStore
	// commit appends one encoded command to the Raft log and waits for
	// the FSM (Server.raftApply).
	commit  func(ctx context.Context, buf []byte) (uint64, any, error)
	clock   broker.Clock
	log     *slog.Logger
	timeout time.Duration // bound of one Raft apply (Config.RaftApplyTimeout)
}

// State returns the current state store (it changes after a snapshot
// restore, so call it for each read).
func (c *serverCore) State() *state.StateStore { return c.state() }

// named returns a copy of the core logging as component name.
func (c *serverCore) named(name string) serverCore {
	cp := *c
	cp.log = c.log.With("component", name)
	return cp
}

// newJobEval returns a pending eval for job.
func (c *serverCore) newJobEval(job *api.Job, trigger string) *api.Evaluation {
	now := c.clock.Now().UnixNano()
	return &api.Evaluation{
		ID: newID(), Namespace: job.Namespace, Priority: job.Priority, Type: job.Type, TriggeredBy: trigger,
		JobID: job.ID, Status: api.EvalStatusPending, CreateTime: now, ModifyTime: now,
	}
}

// applyCtx bounds ctx by the Raft apply timeout.
func (c *serverCore) applyCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// leaderDuty is one of the leader's long-running loops: a component with
// narrow dependencies that runs until ctx ends (leadership lost or the
// server stopping). establishLeadership starts them, revokeLeadership
// cancels ctx and waits.
type leaderDuty interface {
	Run(ctx context.Context)
}
