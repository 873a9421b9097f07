package cli

import (
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// TestReschedulingLines: a failed alloc waiting out its reschedule delay
// says when its replacement comes and which attempt it is.
func TestReschedulingLines(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	job := &api.Job{ID: "web", Type: api.JobTypeService, TaskGroups: []*api.TaskGroup{
		{Name: "web", ReschedulePolicy: &api.ReschedulePolicy{Attempts: 3, Interval: time.Hour, Delay: 30 * time.Second}},
		{Name: "api"}, // the service default: unlimited
	}}
	allocs := []*api.AllocListStub{
		{ID: "aaaaaaaa-1", TaskGroup: "web", ClientStatus: api.AllocClientStatusFailed, FollowupEvalID: "f1", CreateIndex: 1},
		{ID: "bbbbbbbb-2", TaskGroup: "api", ClientStatus: api.AllocClientStatusFailed, FollowupEvalID: "f2", CreateIndex: 2,
			RescheduleTracker: &api.RescheduleTracker{Events: []*api.RescheduleEvent{{}}}},
		// Already replaced, or its follow-up already ran: nothing to say.
		{ID: "cccccccc-3", TaskGroup: "web", ClientStatus: api.AllocClientStatusFailed, FollowupEvalID: "f1", NextAllocation: "x", CreateIndex: 3},
		{ID: "dddddddd-4", TaskGroup: "web", ClientStatus: api.AllocClientStatusFailed, FollowupEvalID: "done", CreateIndex: 4},
		{ID: "eeeeeeee-5", TaskGroup: "web", ClientStatus: api.AllocClientStatusRunning, CreateIndex: 5},
	}
	evals := []*api.Evaluation{
		{ID: "f1", Status: api.EvalStatusPending, WaitUntil: now.Add(27*time.Second + 300*time.Millisecond)},
		{ID: "f2", Status: api.EvalStatusPending, WaitUntil: now.Add(-time.Second)},
		{ID: "done", Status: api.EvalStatusComplete, WaitUntil: now.Add(time.Minute)},
	}
	got := reschedulingLines(job, allocs, evals, now)
	want := []string{
		"Alloc aaaaaaaa (group web) failed: rescheduling in 27s (attempt 1 of 3)",
		"Alloc bbbbbbbb (group api) failed: rescheduling now (attempt 2, unlimited)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines\n got %q\nwant %q", got, want)
	}
}
