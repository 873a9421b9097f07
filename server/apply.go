package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// apply encodes one typed command and commits it through Raft.
func (c *serverCore) apply(ctx context.Context, t fsm.MessageType, body any) (uint64, error) {
	buf, err := fsm.Encode(t, body)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", t, err)
	}
	idx, _, err := c.commit(ctx, buf)
	var rej *fsm.RejectedError
	switch {
	case errors.As(err, &rej):
		// The state's reason is the answer; the command's name and
		// index mean nothing to the caller.
		c.log.Debug("raft command rejected", "type", t.String(), "index", rej.Index, "err", rej.Err)
		return 0, rej.Err
	case err != nil:
		c.log.Debug("raft command failed", "type", t.String(), "err", err)
		return 0, err // "raft apply: ...": the command's name adds nothing
	}
	return idx, nil
}

func (c *serverCore) applyJobRegister(ctx context.Context, job *api.Job, eval *api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.JobRegisterType, &fsm.JobRegisterRequest{Job: job, Eval: eval})
}

func (c *serverCore) applyJobDeregister(ctx context.Context, ns, id string, purge bool, submit int64, eval *api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.JobDeregisterType, &fsm.JobDeregisterRequest{
		Namespace: ns, JobID: id, Purge: purge, SubmitTime: submit, Eval: eval})
}

func (c *serverCore) applyEvals(ctx context.Context, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.EvalUpdateType, &fsm.EvalUpdateRequest{Evals: evals})
}

func (c *serverCore) applyNodeRegister(ctx context.Context, n *api.Node, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.NodeRegisterType, &fsm.NodeRegisterRequest{Node: n, Evals: evals})
}

func (c *serverCore) applyNodeStatus(ctx context.Context, id, status string, at int64, ev *api.NodeEvent, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.NodeStatusUpdateType, &fsm.NodeStatusUpdateRequest{
		NodeID: id, Status: status, UpdatedAt: at, Event: ev, Evals: evals})
}

func (c *serverCore) applyNodeDrain(ctx context.Context, id string, d *api.DrainStrategy, markEligible bool, ev *api.NodeEvent, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.NodeDrainUpdateType, &fsm.NodeDrainUpdateRequest{
		NodeID: id, DrainStrategy: d, MarkEligible: markEligible, Event: ev, Evals: evals})
}

func (c *serverCore) applyNodeEligibility(ctx context.Context, id, elig string, ev *api.NodeEvent, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.NodeEligibilityUpdateType, &fsm.NodeEligibilityUpdateRequest{
		NodeID: id, Eligibility: elig, Event: ev, Evals: evals})
}

func (c *serverCore) applyAllocClientUpdate(ctx context.Context, allocs []*api.Allocation, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.AllocClientUpdateType, &fsm.AllocClientUpdateRequest{Allocs: allocs, Evals: evals})
}

func (c *serverCore) applyDesiredTransitions(ctx context.Context, tr map[string]*api.DesiredTransition, evals []*api.Evaluation) (uint64, error) {
	return c.apply(ctx, fsm.AllocDesiredTransitionType, &fsm.AllocDesiredTransitionRequest{Transitions: tr, Evals: evals})
}

func (c *serverCore) applyPlanResults(ctx context.Context, req *state.ApplyPlanResultsRequest) (uint64, error) {
	return c.apply(ctx, fsm.ApplyPlanResultsType, req)
}

func (c *serverCore) applySchedulerConfig(ctx context.Context, sc *api.SchedulerConfiguration, cas bool, casIndex uint64) (uint64, error) {
	return c.apply(ctx, fsm.SchedulerConfigType, &fsm.SchedulerConfigRequest{Config: sc, CAS: cas, CASIndex: casIndex})
}

// applyACL commits an ACL write (tokens, policies, roles, auth methods,
// binding rules) on the leader.
func (c *serverCore) applyACL(ctx context.Context, w *state.ACLWrite) (uint64, error) {
	if !c.isLeader() {
		return 0, errNotLeader()
	}
	return c.apply(ctx, fsm.ACLWriteType, w)
}

// evalIDs lists the IDs of evals.
func evalIDs(evals []*api.Evaluation) []string {
	out := make([]string, 0, len(evals))
	for _, e := range evals {
		out = append(out, e.ID)
	}
	return out
}
