package taskrunner

import (
	"fmt"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// Decision is what the restart policy says after a task exit.
type Decision struct {
	Restart bool
	Delay   time.Duration
	// Failed marks the task failed when it is not restarted.
	Failed bool
	Reason string
}

// restartTracker applies a RestartPolicy. It is pure: the caller passes
// the time, so it is tested without a clock.
type restartTracker struct {
	policy *api.RestartPolicy
	// doneOnSuccess: a clean exit ends the task (batch jobs, prestart
	// non-sidecar and poststop tasks) instead of restarting it.
	doneOnSuccess bool
	windowStart   time.Time
	count         int
}

// next decides after an exit (res nil = the driver failed to start the task).
func (r *restartTracker) next(res *drivers.ExitResult, startErr error, now time.Time) Decision {
	if startErr == nil && res != nil && res.Successful() && r.doneOnSuccess {
		return Decision{Reason: "task completed successfully"}
	}
	p := r.policy
	if p == nil {
		p = &api.RestartPolicy{Mode: api.RestartModeFail}
	}
	if r.windowStart.IsZero() || (p.Interval > 0 && !now.Before(r.windowStart.Add(p.Interval))) {
		r.windowStart = now
		r.count = 0
	}
	r.count++
	if r.count <= p.Attempts {
		return Decision{Restart: true, Delay: p.Delay, Reason: "restart within policy"}
	}
	if p.Mode == api.RestartModeDelay && p.Interval > 0 {
		delay := r.windowStart.Add(p.Interval).Sub(now)
		if delay < p.Delay {
			delay = p.Delay
		}
		// A new window starts when the delayed restart happens.
		r.windowStart = time.Time{}
		return Decision{Restart: true, Delay: delay, Reason: fmt.Sprintf("exceeded %d attempts in %s, delaying", p.Attempts, p.Interval)}
	}
	return Decision{Failed: true, Reason: fmt.Sprintf("exceeded allowed attempts %d in interval %s and mode is %q", p.Attempts, p.Interval, p.Mode)}
}
