package server

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
	"github.com/drover/drover/server/state"
)

// Spill-over (a job's placement { regions, mode = "spill", spill_after }):
// the leader of a job's home region moves the job, whole, to another of
// its regions once none of its work has been placed for spill_after. It
// asks each other region for a dry-run plan of the job as it would be
// registered there (POST /v1/job/:id/plan: that region's nodes, queues
// and the job's queue limits there; nothing is committed), picks the
// region where the job fits soonest (now, then after preemption; ties in
// the order of regions), registers it there with meta
// drover.spilled_from, and stops it at home with a new version whose
// meta drover.spilled_to and drover.spill_reason say where it went and
// why (`job status`, the UI). A job with any live alloc is never moved,
// and a moved job never moves again. Usage is recorded by the ledger of
// the region whose clients run the work.

// spillCheckInterval is how often the leader looks for jobs to spill.
const spillCheckInterval = 30 * time.Second

// spillPlanTimeout bounds the dry-run plan and the registration in one
// other region: a region that does not answer is passed over this round.
const spillPlanTimeout = 10 * time.Second

// fitRank orders how soon a job fits in a region.
type fitRank int

const (
	fitNow     fitRank = iota // fits without evicting anything
	fitPreempt                // fits after preempting lower-priority work
	fitNever                  // does not fit (or the region did not answer)
)

func (r fitRank) String() string {
	switch r {
	case fitNow:
		return "fits now"
	case fitPreempt:
		return "fits after preemption"
	}
	return "does not fit"
}

// regionFit is one region's answer for a job.
type regionFit struct {
	Region string
	Rank   fitRank
	// Detail is why it does not fit, or what it would preempt.
	Detail string
}

// spillCandidate is a job none of whose work has been placed for at
// least its spill_after.
type spillCandidate struct {
	job    *api.Job
	waited time.Duration
}

// spillCandidates lists the jobs of snap (this region's: whatever their
// Region field says, they run here) that may spill at now:
// placement mode spill, not stopped, not moved here from elsewhere, no
// live alloc, a blocked eval (the scheduler could not place the work),
// and nothing placed since spill_after ago (the later of the version's
// submit time and the last change of any of its allocs).
func spillCandidates(snap *state.Snapshot, now time.Time) ([]spillCandidate, error) {
	jobs, err := snap.Jobs(nil, state.AllNamespaces, "")
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	var out []spillCandidate
	for _, j := range jobs {
		p := j.Placement
		if p == nil || p.Mode != api.PlacementSpill || j.Stop || j.Meta[api.MetaSpilledFrom] != "" ||
			j.IsPeriodic() || j.IsParameterized() ||
			(j.Type != api.JobTypeService && j.Type != api.JobTypeBatch) {
			continue
		}
		since := time.Unix(0, j.SubmitTime)
		allocs, err := snap.AllocsByJob(nil, j.Namespace, j.ID, true)
		if err != nil {
			return nil, fmt.Errorf("allocs of job %q: %w", j.ID, err)
		}
		live := false
		for _, a := range allocs {
			if !a.TerminalStatus() {
				live = true
				break
			}
			if t := time.Unix(0, a.ModifyTime); t.After(since) {
				since = t
			}
		}
		if live {
			continue // work that runs (or is placed) is never moved
		}
		evals, err := snap.EvalsByJob(nil, j.Namespace, j.ID)
		if err != nil {
			return nil, fmt.Errorf("evals of job %q: %w", j.ID, err)
		}
		if !slices.ContainsFunc(evals, func(e *api.Evaluation) bool { return e.Status == api.EvalStatusBlocked }) {
			continue // not known to be unplaceable here
		}
		if waited := now.Sub(since); waited >= p.After() {
			out = append(out, spillCandidate{job: j, waited: waited})
		}
	}
	return out, nil
}

// planFit reads a dry-run plan: fits now when nothing failed and nothing
// is preempted, after preemption when something is, else never (with the
// first reason the region gave).
func planFit(region string, resp *api.JobPlanResponse) regionFit {
	if len(resp.FailedTGAllocs) > 0 {
		for _, name := range slices.Sorted(maps.Keys(resp.FailedTGAllocs)) {
			m := resp.FailedTGAllocs[name]
			if m == nil {
				continue
			}
			switch {
			case m.GangFailure != "":
				return regionFit{Region: region, Rank: fitNever, Detail: m.GangFailure}
			case len(m.Reasons) > 0:
				return regionFit{Region: region, Rank: fitNever, Detail: fmt.Sprintf("group %s: %s", name, m.Reasons[0].Message)}
			case len(m.QuotaExhausted) > 0:
				return regionFit{Region: region, Rank: fitNever, Detail: fmt.Sprintf("group %s: queue limit %s", name, m.QuotaExhausted[0])}
			}
		}
		return regionFit{Region: region, Rank: fitNever, Detail: "no room"}
	}
	if a := resp.Annotations; a != nil {
		n := len(a.PreemptedAllocs)
		for _, u := range a.DesiredTGUpdates {
			if u != nil && int(u.Preemptions) > n {
				n = int(u.Preemptions)
			}
		}
		if n > 0 {
			return regionFit{Region: region, Rank: fitPreempt, Detail: fmt.Sprintf("would preempt %d allocs", n)}
		}
	}
	return regionFit{Region: region, Rank: fitNow}
}

// chooseSpill orders the regions where the job fits: soonest first, ties
// in the order of order (the job's placement regions). Regions that do
// not fit are left out; none is an empty list.
func chooseSpill(order []string, fits []regionFit) []regionFit {
	var out []regionFit
	for _, f := range fits {
		if f.Rank != fitNever {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b regionFit) int {
		if a.Rank != b.Rank {
			return int(a.Rank) - int(b.Rank)
		}
		return slices.Index(order, a.Region) - slices.Index(order, b.Region)
	})
	return out
}

// waitingWork describes what of job waits, for the spill reason: "gang of
// 4 x 8 GPUs", "2 x 1 GPUs", "3 allocs".
func waitingWork(job *api.Job) string {
	var parts []string
	for _, tg := range job.TaskGroups {
		what := fmt.Sprintf("%d allocs", tg.Count)
		if gpus := fairshare.GroupAsk(tg).GPUs; gpus > 0 {
			what = fmt.Sprintf("%d x %s GPUs", tg.Count, api.FormatGPUs(gpus))
		}
		if g, _ := job.GangOf(tg); g != nil {
			what = "gang of " + what
		}
		if len(job.TaskGroups) > 1 {
			what = "group " + tg.Name + ": " + what
		}
		parts = append(parts, what)
	}
	return strings.Join(parts, "; ")
}

// spillReason is the home region's record of a move, e.g. "no room in eu
// for 5m0s (gang of 4 x 8 GPUs); us fits now".
func spillReason(home string, c spillCandidate, to regionFit) string {
	r := fmt.Sprintf("no room in %s for %s (%s); %s %s", home, c.waited.Round(time.Second), waitingWork(c.job), to.Region, to.Rank)
	if to.Detail != "" {
		r += " (" + to.Detail + ")"
	}
	return r
}

// spilledCopy is job as it is registered in region: its region changed,
// its home recorded, the server-set fields cleared.
func spilledCopy(job *api.Job, home, region string) *api.Job {
	c := job.Copy()
	c.Region = region
	c.Stop, c.Status, c.StatusDescription, c.Stable = false, "", "", false
	c.Version, c.SubmitTime, c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0, 0, 0
	if c.Meta == nil {
		c.Meta = map[string]string{}
	}
	delete(c.Meta, api.MetaSpilledTo)
	delete(c.Meta, api.MetaSpillReason)
	c.Meta[api.MetaSpilledFrom] = home
	return c
}

// spiller is the leader duty that moves pending jobs to other regions.
type spiller struct {
	serverCore
	regions Regions
	home    string
}

func (s *spiller) Run(ctx context.Context) {
	for {
		tick := make(chan struct{})
		t := s.clock.AfterFunc(spillCheckInterval, func() { close(tick) })
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-tick:
		}
		if _, err := s.round(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("spill pending jobs", "err", err)
		}
	}
}

// round spills every candidate that fits elsewhere and returns how many
// moved. A job that fits nowhere stays (and is asked about next round).
func (s *spiller) round(ctx context.Context) (int, error) {
	snap, err := s.state().Snapshot()
	if err != nil {
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	cands, err := spillCandidates(snap, s.clock.Now())
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, c := range cands {
		ok, err := s.spill(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return moved, ctx.Err()
			}
			s.log.Warn("spill job", "job", c.job.ID, "namespace", c.job.Namespace, "err", err)
			continue
		}
		if ok {
			moved++
		}
	}
	return moved, nil
}

// fits asks every other region of the job's placement for its dry-run
// plan.
func (s *spiller) fits(ctx context.Context, job *api.Job) []regionFit {
	known := s.regions.Known()
	var out []regionFit
	for _, r := range job.Placement.Regions {
		if r == s.home {
			continue
		}
		if !slices.Contains(known, r) {
			out = append(out, regionFit{Region: r, Rank: fitNever, Detail: "region unknown"})
			continue
		}
		f, err := s.planIn(ctx, job, r)
		if err != nil {
			s.log.Debug("spill plan", "job", job.ID, "region", r, "err", err)
			f = regionFit{Region: r, Rank: fitNever, Detail: err.Error()}
		}
		out = append(out, f)
	}
	return out
}

func (s *spiller) planIn(ctx context.Context, job *api.Job, region string) (regionFit, error) {
	cl, err := s.regions.Client(region, "")
	if err != nil {
		return regionFit{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, spillPlanTimeout)
	defer cancel()
	resp, err := cl.PlanJob(ctx, &api.JobPlanRequest{Job: spilledCopy(job, s.home, region)}, &api.WriteOptions{Namespace: job.Namespace})
	if err != nil {
		return regionFit{}, fmt.Errorf("plan in region %q: %w", region, err)
	}
	return planFit(region, resp), nil
}

// spill moves one candidate: to the first region where it fits soonest
// and registers (a region whose registration fails, say because the
// job's queue does not exist there, is passed over), then stops it here.
func (s *spiller) spill(ctx context.Context, c spillCandidate) (bool, error) {
	job := c.job
	for _, to := range chooseSpill(job.Placement.Regions, s.fits(ctx, job)) {
		// The plans took a while: a job updated or placed meanwhile is
		// left to the next round.
		if ok, err := s.stillPending(job); err != nil || !ok {
			return false, err
		}
		if err := s.registerIn(ctx, job, to.Region); err != nil {
			s.log.Warn("spill: register in region", "job", job.ID, "region", to.Region, "err", err)
			continue
		}
		reason := spillReason(s.home, c, to)
		if err := s.stopHome(ctx, job, to.Region, reason); err != nil {
			// Registered there and still here: the next round registers
			// there again (an unchanged spec keeps its version) and retries.
			return false, fmt.Errorf("stop job %q after spilling to %s: %w", job.ID, to.Region, err)
		}
		s.log.Info("job spilled", "job", job.ID, "namespace", job.Namespace, "to", to.Region, "reason", reason)
		return true, nil
	}
	return false, nil
}

// stillPending reports whether job is unchanged here and has no live
// alloc.
func (s *spiller) stillPending(job *api.Job) (bool, error) {
	cur, err := s.state().JobByID(nil, job.Namespace, job.ID)
	if err != nil || cur == nil || cur.JobModifyIndex != job.JobModifyIndex || cur.Stop {
		return false, err
	}
	allocs, err := s.state().AllocsByJob(nil, job.Namespace, job.ID, true)
	if err != nil {
		return false, err
	}
	return !slices.ContainsFunc(allocs, func(a *api.Allocation) bool { return !a.TerminalStatus() }), nil
}

func (s *spiller) registerIn(ctx context.Context, job *api.Job, region string) error {
	cl, err := s.regions.Client(region, "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, spillPlanTimeout)
	defer cancel()
	_, err = cl.RegisterJob(ctx, &api.JobRegisterRequest{Job: spilledCopy(job, s.home, region)}, &api.WriteOptions{Namespace: job.Namespace})
	return err
}

// stopHome stops the job here with a new version (history kept) whose
// meta records the move; its eval (a deregister) drops the blocked eval.
func (s *spiller) stopHome(ctx context.Context, job *api.Job, region, reason string) error {
	cur, err := s.state().JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if cur == nil || cur.JobModifyIndex != job.JobModifyIndex {
		return fmt.Errorf("job changed while spilling: %w", api.ErrIndexConflict)
	}
	stopped := cur.Copy()
	stopped.Stop = true
	if stopped.Meta == nil {
		stopped.Meta = map[string]string{}
	}
	stopped.Meta[api.MetaSpilledTo] = region
	stopped.Meta[api.MetaSpillReason] = reason
	stopped.SubmitTime = s.clock.Now().UnixNano()
	eval := s.newJobEval(stopped, api.EvalTriggerJobDeregister)
	actx, cancel := s.applyCtx(ctx)
	defer cancel()
	_, err = s.applyJobRegister(actx, stopped, eval)
	return err
}
