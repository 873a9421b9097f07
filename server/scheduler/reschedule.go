package scheduler

import (
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
// this pass (earlier groups, this group) for a time within the window.
func (rc *reconciler) followUp(r *groupResult, at time.Time) *api.Evaluation {
	if f := findFollowUp(at, rc.made, r.followUps); f != nil {
		return f
	}
	f := newFollowUp(rc.env, at)
	r.followUps = append(r.followUps, f)
	return f
}

// findFollowUp returns the first eval of lists due within
// rescheduleWindow of at, or nil.
func findFollowUp(at time.Time, lists ...[]*api.Evaluation) *api.Evaluation {
	for _, list := range lists {
		for _, f := range list {
			if d := f.WaitUntil.Sub(at); d > -rescheduleWindow && d < rescheduleWindow {
				return f
			}
		}
	}
	return nil
}

// newFollowUp is a delayed eval of the pass's job at at.
func newFollowUp(env *passEnv, at time.Time) *api.Evaluation {
	ns := env.eval.Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	job, now := env.job, env.opts.Now.UnixNano()
	return &api.Evaluation{
		ID: env.newID(), Namespace: ns, Priority: job.Priority, Type: job.Type,
		TriggeredBy: api.EvalTriggerRetryFailedAlloc, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Status: api.EvalStatusPending, StatusDescription: "created for delayed rescheduling",
		WaitUntil: at, CreateTime: now, ModifyTime: now,
	}
}
