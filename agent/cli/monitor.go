package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/drover/drover/api"
)

// monitorEval follows an evaluation (and its follow-ups) with blocking
// queries until it is terminal, printing what the scheduler did, like
// Nomad's monitor. It returns exit code 2 when placements failed, as
// Nomad does, 1 when the eval failed, and 0 otherwise.
func monitorEval(ctx context.Context, w io.Writer, c *api.Client, evalID string) (int, error) {
	fmt.Fprintf(w, "==> %s: Monitoring evaluation %q\n", now(), short(evalID))
	var idx uint64
	var ev *api.Evaluation
	for {
		e, m, err := c.Evaluation(ctx, evalID, &api.QueryOptions{WaitIndex: idx, WaitTime: 30 * time.Second})
		if err != nil {
			return ExitError, fmt.Errorf("read evaluation %s: %w", short(evalID), err)
		}
		if m.LastIndex > idx {
			idx = m.LastIndex
		}
		if e.TerminalStatus() {
			ev = e
			break
		}
		if err := ctx.Err(); err != nil {
			return ExitError, err
		}
	}
	fmt.Fprintf(w, "    %s: Evaluation triggered by job %q\n", now(), ev.JobID)
	var allocs []*api.AllocListStub
	if _, err := c.Query(ctx, "/v1/evaluation/"+evalID+"/allocations", &allocs, nil); err != nil {
		return ExitError, fmt.Errorf("read allocations of evaluation %s: %w", short(evalID), err)
	}
	sort.Slice(allocs, func(i, j int) bool { return allocs[i].Name < allocs[j].Name })
	for _, a := range allocs {
		if a.CreateIndex >= ev.CreateIndex || a.EvalID == ev.ID {
			fmt.Fprintf(w, "    %s: Allocation %q created: node %q, group %q\n", now(), short(a.ID), short(a.NodeID), a.TaskGroup)
		}
	}
	fmt.Fprintf(w, "    %s: Evaluation status changed: %q -> %q\n", now(), api.EvalStatusPending, ev.Status)
	code := ExitOK
	if len(ev.FailedTGAllocs) > 0 {
		fmt.Fprintf(w, "==> %s: Evaluation %q finished with status %q but failed to place all allocations:\n", now(), short(ev.ID), ev.Status)
		job, _, _ := c.Job(ctx, ev.JobID, &api.QueryOptions{Namespace: ev.Namespace}) // for gang lines; nil is fine
		for _, l := range failureLines(ev.FailedTGAllocs, job) {
			fmt.Fprintln(w, "    "+l)
		}
		if ev.BlockedEval != "" {
			fmt.Fprintf(w, "    Evaluation %q waiting for additional capacity to place remainder\n", short(ev.BlockedEval))
		}
		code = ExitUsage
	} else {
		fmt.Fprintf(w, "==> %s: Evaluation %q finished with status %q\n", now(), short(ev.ID), ev.Status)
	}
	if ev.Status == api.EvalStatusFailed {
		code = ExitError
	}
	return code, nil
}

func now() string { return time.Now().Format("2006-01-02T15:04:05Z07:00") }
