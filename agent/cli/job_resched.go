package cli

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/drover/drover/api"
)

// printRescheduling says, for each failed allocation waiting out its
// reschedule delay, when its replacement comes: without it a job shows
// "pending" and no new allocation for the whole delay, with nothing
// saying why.
func printRescheduling(w io.Writer, job *api.Job, allocs []*api.AllocListStub, evals []*api.Evaluation, now time.Time) {
	lines := reschedulingLines(job, allocs, evals, now)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nRescheduling")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// reschedulingLines is one line per failed alloc whose follow-up eval is
// still to run: "Alloc 1a2b3c4d (group web) failed: rescheduling in 27s
// (attempt 1 of 3)".
func reschedulingLines(job *api.Job, allocs []*api.AllocListStub, evals []*api.Evaluation, now time.Time) []string {
	byID := make(map[string]*api.Evaluation, len(evals))
	for _, e := range evals {
		byID[e.ID] = e
	}
	var out []string
	sorted := append([]*api.AllocListStub(nil), allocs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].CreateIndex < sorted[j].CreateIndex })
	for _, a := range sorted {
		if a.ClientStatus != api.AllocClientStatusFailed || a.NextAllocation != "" || a.FollowupEvalID == "" {
			continue
		}
		e := byID[a.FollowupEvalID]
		if e == nil || e.TerminalStatus() || e.WaitUntil.IsZero() {
			continue
		}
		when := "now"
		if d := e.WaitUntil.Sub(now); d > 0 {
			when = "in " + roundAgo(d.Round(time.Second))
		}
		out = append(out, fmt.Sprintf("Alloc %s (group %s) failed: rescheduling %s (%s)", short(a.ID), a.TaskGroup, when, rescheduleAttempt(job, a)))
	}
	return out
}

// rescheduleAttempt is "attempt 2 of 3" (or "attempt 2, unlimited"): the
// attempt the follow-up makes under the group's reschedule policy.
func rescheduleAttempt(job *api.Job, a *api.AllocListStub) string {
	n := 1
	if a.RescheduleTracker != nil {
		n += len(a.RescheduleTracker.Events)
	}
	var p *api.ReschedulePolicy
	if tg := job.LookupTaskGroup(a.TaskGroup); tg != nil && tg.ReschedulePolicy != nil {
		p = tg.ReschedulePolicy
	} else {
		p = api.DefaultReschedulePolicy(job.Type)
	}
	if p == nil || p.Unlimited {
		return fmt.Sprintf("attempt %d, unlimited", n)
	}
	return fmt.Sprintf("attempt %d of %d", n, p.Attempts)
}
