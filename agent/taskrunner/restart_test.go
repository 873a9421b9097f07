package taskrunner

import (
	"errors"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

func TestRestartTracker(t *testing.T) {
	fail := &drivers.ExitResult{ExitCode: 1}
	ok := &drivers.ExitResult{}
	t0 := time.Unix(1000, 0)
	pol := func(mode string) *api.RestartPolicy {
		return &api.RestartPolicy{Attempts: 2, Interval: 10 * time.Minute, Delay: 15 * time.Second, Mode: mode}
	}
	type step struct {
		at      time.Duration
		res     *drivers.ExitResult
		err     error
		restart bool
		failed  bool
		delay   time.Duration
	}
	cases := []struct {
		name          string
		policy        *api.RestartPolicy
		doneOnSuccess bool
		steps         []step
	}{
		{"fail mode exhausts attempts", pol(api.RestartModeFail), false, []step{
			{0, fail, nil, true, false, 15 * time.Second},
			{time.Minute, fail, nil, true, false, 15 * time.Second},
			{2 * time.Minute, fail, nil, false, true, 0},
		}},
		{"interval resets the count", pol(api.RestartModeFail), false, []step{
			{0, fail, nil, true, false, 15 * time.Second},
			{time.Minute, fail, nil, true, false, 15 * time.Second},
			{11 * time.Minute, fail, nil, true, false, 15 * time.Second},
		}},
		{"delay mode waits out the interval", pol(api.RestartModeDelay), false, []step{
			{0, fail, nil, true, false, 15 * time.Second},
			{time.Minute, fail, nil, true, false, 15 * time.Second},
			{2 * time.Minute, fail, nil, true, false, 8 * time.Minute},
			{11 * time.Minute, fail, nil, true, false, 15 * time.Second},
		}},
		{"batch success completes", pol(api.RestartModeFail), true, []step{
			{0, ok, nil, false, false, 0},
		}},
		{"service success restarts", pol(api.RestartModeFail), false, []step{
			{0, ok, nil, true, false, 15 * time.Second},
		}},
		{"driver start error counts", pol(api.RestartModeFail), true, []step{
			{0, nil, errors.New("boom"), true, false, 15 * time.Second},
			{time.Second, nil, errors.New("boom"), true, false, 15 * time.Second},
			{2 * time.Second, nil, errors.New("boom"), false, true, 0},
		}},
		{"zero attempts", &api.RestartPolicy{Mode: api.RestartModeFail}, false, []step{
			{0, fail, nil, false, true, 0},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &restartTracker{policy: tc.policy, doneOnSuccess: tc.doneOnSuccess}
			for i, s := range tc.steps {
				d := r.next(s.res, s.err, t0.Add(s.at))
				if d.Restart != s.restart || d.Failed != s.failed || d.Delay != s.delay {
					t.Fatalf("step %d: got %+v, want restart=%v failed=%v delay=%v", i, d, s.restart, s.failed, s.delay)
				}
			}
		})
	}
}
