package server

import (
	"context"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// runGC periodically (EvalGCInterval on the injected clock) deletes
// evaluations that finished more than EvalGCThreshold ago, together with
// their allocations, once every one of those allocs is finished on its
// client. Evals of live batch jobs are kept (their allocs are the job's
// record of completion).
func (s *Server) runGC(ctx context.Context) {
	for {
		tick := make(chan struct{})
		t := s.clock.AfterFunc(s.cfg.EvalGCInterval, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		n, err := s.gcEvals(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("eval gc", "err", err)
		} else if n > 0 {
			s.log.Info("eval gc", "evals", n)
		}
	}
}

// gcEvals does one collection and returns how many evals it deleted.
func (s *Server) gcEvals(ctx context.Context) (int, error) {
	st := s.State()
	evals, err := st.Evals(nil, state.AllNamespaces, "")
	if err != nil {
		return 0, fmt.Errorf("list evals: %w", err)
	}
	cutoff := s.clock.Now().Add(-s.cfg.EvalGCThreshold).UnixNano()
	var evalIDs, allocIDs []string
	for _, e := range evals {
		if !e.TerminalStatus() || e.ModifyTime > cutoff {
			continue
		}
		if e.Type == api.JobTypeBatch {
			if j, _ := st.JobByID(nil, e.Namespace, e.JobID); j != nil && !j.Stop {
				continue
			}
		}
		allocs, err := st.AllocsByEval(nil, e.ID)
		if err != nil {
			return 0, fmt.Errorf("allocs of eval %s: %w", e.ID, err)
		}
		done := true
		for _, a := range allocs {
			if !a.TerminalStatus() || !a.ClientTerminalStatus() {
				done = false
				break
			}
		}
		if !done {
			continue
		}
		evalIDs = append(evalIDs, e.ID)
		for _, a := range allocs {
			allocIDs = append(allocIDs, a.ID)
		}
	}
	if len(evalIDs) == 0 {
		return 0, nil
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.RaftApplyTimeout)
	defer cancel()
	if _, err := s.apply(actx, fsm.EvalDeleteType, &fsm.EvalDeleteRequest{Evals: evalIDs, Allocs: allocIDs}); err != nil {
		return 0, err
	}
	return len(evalIDs), nil
}
