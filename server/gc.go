package server

import (
	"context"
	"fmt"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
	"github.com/drover/drover/server/state"
)

// evalGC periodically (EvalGCInterval on the injected clock) deletes
// evaluations that finished more than EvalGCThreshold ago, together with
// their allocations, once every one of those allocs is finished on its
// client. Evals of live batch jobs are kept (their allocs are the job's
// record of completion).
type evalGC struct {
	serverCore
	interval, threshold time.Duration
}

// Run collects until ctx ends.
func (g *evalGC) Run(ctx context.Context) {
	for {
		tick := make(chan struct{})
		t := g.clock.AfterFunc(g.interval, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		n, err := g.collect(ctx)
		if err != nil && ctx.Err() == nil {
			g.log.Warn("eval gc", "err", err)
		} else if n > 0 {
			g.log.Info("eval gc", "evals", n)
		}
	}
}

// collect does one collection and returns how many evals it deleted.
func (g *evalGC) collect(ctx context.Context) (int, error) {
	st := g.state()
	evals, err := st.Evals(nil, state.AllNamespaces, "")
	if err != nil {
		return 0, fmt.Errorf("list evals: %w", err)
	}
	cutoff := g.clock.Now().Add(-g.threshold).UnixNano()
	// Each job's allocs by eval, read once for all of the job's evals
	// (allocs have no eval index).
	byEval := map[api.NamespacedID]map[string][]*api.Allocation{}
	allocsOf := func(e *api.Evaluation) ([]*api.Allocation, error) {
		k := api.NamespacedID{Namespace: e.Namespace, ID: e.JobID}
		m, ok := byEval[k]
		if !ok {
			all, err := st.AllocsByJob(nil, e.Namespace, e.JobID, true)
			if err != nil {
				return nil, err
			}
			m = map[string][]*api.Allocation{}
			for _, a := range all {
				m[a.EvalID] = append(m[a.EvalID], a)
			}
			byEval[k] = m
		}
		return m[e.ID], nil
	}
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
		var allocs []*api.Allocation
		if e.JobID != "" {
			if allocs, err = allocsOf(e); err != nil {
				return 0, fmt.Errorf("allocs of eval %s: %w", e.ID, err)
			}
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
	actx, cancel := g.applyCtx(ctx)
	defer cancel()
	if _, err := g.apply(actx, fsm.EvalDeleteType, &fsm.EvalDeleteRequest{Evals: evalIDs, Allocs: allocIDs}); err != nil {
		return 0, err
	}
	return len(evalIDs), nil
}
