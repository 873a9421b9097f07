package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/state"
)

// serverCore is what the server's parts share, and all that a component
// or a leader duty gets of the server: the current state, whether this
// server leads, the Raft write path (typed commands, apply.go), the
// injected clock, a logger and the apply timeout. The Server holds one;
// each component (Jobs, Nodes, ACL ...) and each duty (drainer, periodic
// launcher, deployment watcher, GC, eval reaper) embeds a copy instead of
// holding the whole server.
type serverCore struct {
	current func() *state.StateStore
	// isLeader reports whether this server is the Raft leader now
	// (Server.IsLeader); writes check it first to answer not-leader
	// before doing any work.
	isLeader func() bool
	// commit appends one encoded command to the Raft log and waits for
	// the FSM (Server.raftApply).
	commit  func(ctx context.Context, buf []byte) (uint64, any, error)
	clock   clock.Clock
	log     *slog.Logger
	timeout time.Duration // bound of one Raft apply (Config.RaftApplyTimeout)
}

// state returns the current state store (it changes after a snapshot
// restore, so call it for each read).
func (c *serverCore) state() *state.StateStore { return c.current() }

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
