package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/state"
)

// periodicChildPrefix joins a periodic job's ID and a launch time into
// the child job's ID, as Nomad names them.
const periodicChildPrefix = "/periodic-"

// periodicLauncher is the leader's periodic-job launcher. For every enabled,
// running periodic job it computes the next cron time after the later of
// "leadership start" and the newest child's launch, arms one timer (the
// injected clock) for the earliest, and registers a child job (ParentID
// set, Periodic cleared, with its eval) when it fires. ProhibitOverlap
// skips a launch while a previous child is not dead. Launches missed while
// no leader ran are not made up. Job changes re-plan at once (memdb watch).
type periodicLauncher struct {
	serverCore
	since time.Time // when this leadership started
}

// Run launches periodic jobs until ctx ends.
func (p *periodicLauncher) Run(ctx context.Context) {
	since := p.since
	for {
		ws := memdb.NewWatchSet()
		next, err := p.periodicPass(ctx, ws, since)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.log.Warn("periodic launch", "err", err)
		}
		wake := make(chan struct{})
		var t clock.Timer
		if !next.IsZero() {
			t = p.clock.AtFunc(next, func() { close(wake) })
		}
		ws.Add(p.state().AbandonCh())
		wctx, cancel := context.WithCancel(ctx)
		select {
		case <-ctx.Done():
		case <-ws.WatchCh(wctx):
		case <-wake:
		}
		cancel()
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// periodicPass launches the due children and returns the next launch time.
func (p *periodicLauncher) periodicPass(ctx context.Context, ws memdb.WatchSet, since time.Time) (time.Time, error) {
	st := p.state()
	jobs, err := st.Jobs(ws, state.AllNamespaces, "")
	if err != nil {
		return time.Time{}, fmt.Errorf("list jobs: %w", err)
	}
	now := p.clock.Now()
	var earliest time.Time
	var firstErr error
	for _, j := range jobs {
		if !j.IsPeriodic() || j.Stop || j.ParentID != "" {
			continue
		}
		due, err := p.periodicNext(j, since)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if due.IsZero() {
			continue
		}
		if !due.After(now) {
			if err := p.launchPeriodic(ctx, j, due); err != nil && firstErr == nil {
				firstErr = err
			}
			// The launch wrote a child: the job watch wakes the next pass.
			continue
		}
		if earliest.IsZero() || due.Before(earliest) {
			earliest = due
		}
	}
	return earliest, firstErr
}

// periodicNext is the job's next launch after max(since, newest child).
func (p *periodicLauncher) periodicNext(j *api.Job, since time.Time) (time.Time, error) {
	after := since
	if last := p.lastPeriodicLaunch(j); last.After(after) {
		after = last
	}
	next, err := j.Periodic.Next(after)
	if err != nil {
		return time.Time{}, fmt.Errorf("periodic job %q: %w", j.ID, err)
	}
	return next, nil
}

// lastPeriodicLaunch reads the newest child's launch time from its ID.
func (p *periodicLauncher) lastPeriodicLaunch(j *api.Job) time.Time {
	children, err := p.state().Jobs(nil, j.Namespace, j.ID+periodicChildPrefix)
	if err != nil {
		return time.Time{}
	}
	var last time.Time
	for _, c := range children {
		if c.ParentID != j.ID {
			continue
		}
		sec, err := strconv.ParseInt(c.ID[len(j.ID)+len(periodicChildPrefix):], 10, 64)
		if err != nil {
			continue
		}
		if t := time.Unix(sec, 0); t.After(last) {
			last = t
		}
	}
	return last
}

func (p *periodicLauncher) launchPeriodic(ctx context.Context, parent *api.Job, at time.Time) error {
	if parent.Periodic.ProhibitOverlap {
		children, err := p.state().Jobs(nil, parent.Namespace, parent.ID+periodicChildPrefix)
		if err != nil {
			return err
		}
		for _, c := range children {
			if c.ParentID == parent.ID && c.Status != api.JobStatusDead {
				p.log.Info("periodic launch skipped: previous child still running", "job", parent.ID, "child", c.ID)
				_, _, _, err := p.registerPeriodicChild(ctx, parent, at, true)
				return err
			}
		}
	}
	_, _, _, err := p.registerPeriodicChild(ctx, parent, at, false)
	return err
}

// childJob is a copy of parent registered as its child id (a periodic
// launch, a dispatch): a new job of its own, with parent's spec.
func childJob(parent *api.Job, id string, now time.Time) *api.Job {
	child := parent.Copy()
	child.ID, child.Name, child.ParentID = id, id, parent.ID
	child.Status, child.StatusDescription = "", ""
	child.Version, child.CreateIndex, child.ModifyIndex, child.JobModifyIndex = 0, 0, 0, 0
	child.SubmitTime = now.UnixNano()
	return child
}

// registerPeriodicChild registers the child job launched at at and
// returns it and its eval (nil when skipped). A skipped launch (overlap)
// registers it stopped, so the launch time is recorded and the next one is
// computed from it.
func (c *serverCore) registerPeriodicChild(ctx context.Context, parent *api.Job, at time.Time, skipped bool) (*api.Job, *api.Evaluation, uint64, error) {
	child := childJob(parent, parent.ID+periodicChildPrefix+strconv.FormatInt(at.Unix(), 10), c.clock.Now())
	child.Periodic = nil
	child.Stop = skipped
	var eval *api.Evaluation
	if !skipped {
		eval = c.newJobEval(child, api.EvalTriggerPeriodicJob)
	}
	actx, cancel := c.applyCtx(ctx)
	defer cancel()
	idx, err := c.applyJobRegister(actx, child, eval)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("launch periodic job %q: %w", parent.ID, err)
	}
	return child, eval, idx, nil
}
