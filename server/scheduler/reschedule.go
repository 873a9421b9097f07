package scheduler

import (
	"slices"
	"time"

	"github.com/drover/drover/api"
)

// reschedDecision says what to do with a failed alloc.
type reschedDecision int

const (
	reschedNever reschedDecision = iota // policy exhausted or none
	reschedNow
	reschedLater
)

// rescheduleWindow: a reschedule time this close counts as now.
const rescheduleWindow = time.Second

// reschedulePolicy returns the group's policy or the job type's default.
func reschedulePolicy(job *api.Job, tg *api.TaskGroup) *api.ReschedulePolicy {
	if tg.ReschedulePolicy != nil {
		return tg.ReschedulePolicy
	}
	return api.DefaultReschedulePolicy(job.Type)
}

// failTime is when the alloc failed: the latest task finish, else its
// last modification.
func failTime(a *api.Allocation) time.Time {
	var t time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(t) {
			t = ts.FinishedAt
		}
	}
	if t.IsZero() {
		t = time.Unix(0, a.ModifyTime)
	}
	return t
}

// nextDelay computes the delay before the next attempt from the policy
// and the lineage's previous reschedules.
func nextDelay(p *api.ReschedulePolicy, a *api.Allocation) time.Duration {
	n := 0
	if a.RescheduleTracker != nil {
		n = len(a.RescheduleTracker.Events)
	}
	d := p.Delay
	switch p.DelayFunction {
	case "exponential":
		for i := 0; i < n && (p.MaxDelay <= 0 || d < p.MaxDelay); i++ {
			d *= 2
		}
	case "fibonacci":
		a, b := p.Delay, p.Delay
		for i := 1; i < n && (p.MaxDelay <= 0 || b < p.MaxDelay); i++ {
			a, b = b, a+b
		}
		if n > 0 {
			d = b
		}
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	return d
}

// decideReschedule applies the policy to a failed alloc at now. It
// returns the decision, the time at which to reschedule and the delay.
func decideReschedule(job *api.Job, tg *api.TaskGroup, a *api.Allocation, evalID string, now time.Time) (reschedDecision, time.Time, time.Duration) {
	p := reschedulePolicy(job, tg)
	force := a.DesiredTransition.ForceReschedule != nil && *a.DesiredTransition.ForceReschedule
	if force {
		return reschedNow, now, 0
	}
	if p == nil || (!p.Unlimited && p.Attempts <= 0) {
		return reschedNever, time.Time{}, 0
	}
	if !p.Unlimited {
		used := 0
		if a.RescheduleTracker != nil {
			for _, e := range a.RescheduleTracker.Events {
				if p.Interval <= 0 || now.Sub(time.Unix(0, e.RescheduleTime)) < p.Interval {
					used++
				}
			}
		}
		if used >= p.Attempts {
			return reschedNever, time.Time{}, 0
		}
	}
	delay := nextDelay(p, a)
	at := failTime(a).Add(delay)
	if a.FollowupEvalID != "" && a.FollowupEvalID == evalID {
		return reschedNow, at, delay // this is the follow-up eval
	}
	if !at.After(now.Add(rescheduleWindow)) {
		return reschedNow, at, delay
	}
	return reschedLater, at, delay
}

// followUp returns the delayed eval for time at, reusing one created in
// this pass for a time within the window.
func (s *sched) followUp(r *groupResult, at time.Time) *api.Evaluation {
	for _, f := range slices.Concat(s.res.FollowUps, r.followUps) {
		if d := f.WaitUntil.Sub(at); d > -rescheduleWindow && d < rescheduleWindow {
			return f
		}
	}
	ns := s.eval.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	f := &api.Evaluation{
		ID: s.newID(), Namespace: ns, Priority: s.job.Priority, Type: s.job.Type,
		TriggeredBy: api.EvalTriggerRetryFailedAlloc, JobID: s.job.ID, JobModifyIndex: s.job.JobModifyIndex,
		Status: api.EvalStatusPending, StatusDescription: "created for delayed rescheduling",
		WaitUntil: at, CreateTime: s.opts.Now.UnixNano(), ModifyTime: s.opts.Now.UnixNano(),
	}
	r.followUps = append(r.followUps, f)
	return f
}
