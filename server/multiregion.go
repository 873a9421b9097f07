package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// Multiregion jobs (a job's multiregion block, as Nomad's).
//
// Registration: the region a multiregion job is submitted to (its
// origin) registers a copy in every region of the block (api.Job.
// ForRegion: the region's count, datacenters, node pool and meta), with
// the caller's token, each as a RegionCopy that is not sent on again.
// Every copy gets the same version, one above the highest any region
// holds (the state store keeps a multiregion job's asked-for version), so
// a rollout is (namespace, job, version) in every region.
//
// Rollout: the scheduler starts each region's deployment of the version
// pending (nothing placed) and marks it blocked, not successful, when the
// region has finished (scheduler/deployment.go). The leader duty here,
// woken by changes of its region's deployments, reads the deployment of
// the same version in every other region and applies nextRollout: up to
// max_parallel regions run at a time, in the order of the region blocks;
// when every region has finished, all are unblocked (successful); on a
// failure, on_failure "fail_all" fails every region, "fail_local" only
// the failed one (the others go on, then wait blocked for an operator's
// `deployment unblock`), and the default fails the failed region and
// every region after it (those before it stay blocked). A failed region
// rolls back by its own update.auto_revert, on its own (the reverted
// version has no multiregion block: deploymentwatcher.go). A region that
// has no deployment of the version yet keeps its turn (nextRollout).
// Cross-region calls run with the server's own identity.

// multiregionRetry is the pause after a failed cross-region read or call
// (a region down), before the duty tries again.
var multiregionRetry = 2 * time.Second

// multiregionCallTimeout bounds one cross-region request.
const multiregionCallTimeout = 10 * time.Second

type callerTokenKey struct{}

// WithCallerToken returns ctx carrying the ACL secret of the request
// being served: a multiregion registration sends it to the other regions
// (the HTTP layer sets it; "" for none).
func WithCallerToken(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, callerTokenKey{}, secret)
}

func callerToken(ctx context.Context) string {
	s, _ := ctx.Value(callerTokenKey{}).(string)
	return s
}

// registerElsewhere registers a multiregion job's copies in the other
// regions of its block and returns the version every region gets (this
// one registers its own copy with it). A region that fails stops the
// registration: the answer names the regions already registered.
func (j *Jobs) registerElsewhere(ctx context.Context, req *api.JobRegisterRequest, job *api.Job) (uint64, error) {
	m := job.Multiregion
	names := m.Names()
	others := slices.DeleteFunc(slices.Clone(names), func(r string) bool { return r == j.region })
	if len(others) > 0 && j.regions == nil {
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("job %q: multiregion names regions %s but this server is not federated with any other region",
			job.ID, strings.Join(others, ", ")))
	}
	token := callerToken(ctx)
	clients := map[string]*api.Client{}
	copies := map[string]*api.Job{}
	var existing []*api.Job
	for _, r := range names {
		c := job.ForRegion(r)
		copies[r] = c
		var cur *api.Job
		if r == j.region {
			var err error
			if cur, err = j.state().JobByID(nil, job.Namespace, job.ID); err != nil {
				return 0, fmt.Errorf("job %q: %w", job.ID, err)
			}
		} else {
			cl, err := j.regions.Client(r, token)
			if err != nil {
				return 0, fmt.Errorf("multiregion job %q: region %q: %w", job.ID, r, err)
			}
			clients[r] = cl
			rctx, cancel := context.WithTimeout(ctx, multiregionCallTimeout)
			cur, _, err = cl.Job(rctx, job.ID, &api.QueryOptions{Namespace: job.Namespace})
			cancel()
			if errors.Is(err, api.ErrJobNotFound) {
				cur, err = nil, nil
			}
			if err != nil {
				return 0, fmt.Errorf("multiregion job %q: read it in region %q: %w", job.ID, r, err)
			}
		}
		existing = append(existing, cur)
	}
	version := multiregionTarget(existing)
	var done []string
	for _, r := range names {
		c := copies[r]
		c.Version = version // a region where the job is unchanged keeps its own (state store)
		if r == j.region {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, multiregionCallTimeout)
		_, err := clients[r].RegisterJob(rctx, &api.JobRegisterRequest{Job: c, RegionCopy: true, PolicyOverride: req.PolicyOverride,
			PreserveCounts: req.PreserveCounts}, &api.WriteOptions{Namespace: job.Namespace})
		cancel()
		if err != nil {
			if len(done) > 0 {
				return 0, fmt.Errorf("multiregion job %q: register in region %q (already registered in %s): %w", job.ID, r, strings.Join(done, ", "), err)
			}
			return 0, fmt.Errorf("multiregion job %q: register in region %q: %w", job.ID, r, err)
		}
		done = append(done, r)
	}
	return version, nil
}

// multiregionTarget is the version a multiregion job gets in every
// region where it changes: one above the highest of the regions' current
// versions (nil: absent there); 0 when it is new everywhere.
func multiregionTarget(existing []*api.Job) uint64 {
	var v uint64
	found := false
	for _, e := range existing {
		if e != nil && (!found || e.Version+1 > v) {
			v, found = e.Version+1, true
		}
	}
	return v
}

// rolloutActions is what nextRollout asks for, by region.
type rolloutActions struct {
	Run     []string // pending deployments to start
	Fail    []string // active deployments to fail
	Unblock []string // blocked deployments to mark successful
}

func (a rolloutActions) empty() bool { return len(a.Run)+len(a.Fail)+len(a.Unblock) == 0 }

// nextRollout is the rollout's next step, from the status of each
// region's deployment of one version. A region missing from status has
// none yet (its registration or its scheduler has not got there): it
// keeps its place in the order, and starts itself when it has one. A
// region whose deployment was cancelled (or whose job moved past the
// version) takes no part. It is pure: the duty applies it in every
// region, and applying it twice does nothing more.
func nextRollout(m *api.Multiregion, status map[string]string) rolloutActions {
	var out rolloutActions
	names := m.Names()
	s := m.Strategy
	if s == nil {
		s = &api.MultiregionStrategy{}
	}
	active := func(st string) bool {
		switch st {
		case api.DeploymentStatusPending, api.DeploymentStatusRunning, api.DeploymentStatusPaused, api.DeploymentStatusBlocked:
			return true
		}
		return false
	}
	failedAt := slices.IndexFunc(names, func(r string) bool { return status[r] == api.DeploymentStatusFailed })
	if failedAt >= 0 && s.OnFailure != api.MultiregionFailLocal {
		for i, r := range names {
			if active(status[r]) && (s.OnFailure == api.MultiregionFailAll || i > failedAt) {
				out.Fail = append(out.Fail, r)
			}
		}
		return out
	}
	finished, blocked, taking := 0, 0, 0
	for _, r := range names {
		switch status[r] {
		case api.DeploymentStatusBlocked:
			blocked++
			finished++
		case api.DeploymentStatusSuccessful:
			finished++
		}
		if status[r] != api.DeploymentStatusCancelled {
			taking++
		}
	}
	if failedAt < 0 && blocked > 0 && finished == taking {
		for _, r := range names {
			if status[r] == api.DeploymentStatusBlocked {
				out.Unblock = append(out.Unblock, r)
			}
		}
		return out
	}
	limit := s.MaxParallel
	if limit <= 0 {
		limit = len(names)
	}
	running := 0
	for _, r := range names {
		if st := status[r]; st == api.DeploymentStatusRunning || st == api.DeploymentStatusPaused {
			running++
		}
	}
	for _, r := range names {
		if running >= limit {
			break
		}
		switch status[r] {
		case api.DeploymentStatusPending:
			out.Run = append(out.Run, r)
			running++
		case "":
			running++ // its turn: it starts itself once its deployment exists
		}
	}
	return out
}

// multiregionRollout is the leader duty that moves this region's part of
// every multiregion rollout (see the top of this file).
type multiregionRollout struct {
	serverCore
	home    string
	regions Regions // nil: not federated (the rollout is this region's alone)
	// handled is each deployment's ModifyIndex when its step last
	// succeeded: a deployment is looked at again only once it changes.
	handled map[string]uint64
}

// Run moves rollouts until ctx ends (leadership lost).
func (w *multiregionRollout) Run(ctx context.Context) {
	w.handled = map[string]uint64{}
	for {
		st := w.state()
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		retry := false
		if err := w.pass(ctx, st, ws); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Warn("multiregion rollout step failed; retrying", "err", err, "retry_in", multiregionRetry)
			retry = true
		}
		wctx, cancel := context.WithCancel(ctx)
		var timer interface{ Stop() bool }
		if retry {
			timer = w.clock.AfterFunc(multiregionRetry, cancel)
		}
		_ = ws.WatchCtx(wctx)
		cancel()
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// pass takes the next step of every rollout whose local deployment
// changed since its last step; ws learns of the next change.
func (w *multiregionRollout) pass(ctx context.Context, st *state.StateStore, ws memdb.WatchSet) error {
	deps, err := st.Deployments(ws, state.AllNamespaces, "")
	if err != nil {
		return err
	}
	var errs []error
	seen := make(map[string]bool, len(deps))
	for _, d := range deps {
		seen[d.ID] = true
		switch d.Status {
		case api.DeploymentStatusPending, api.DeploymentStatusBlocked, api.DeploymentStatusFailed:
		default:
			continue
		}
		if idx, ok := w.handled[d.ID]; ok && idx == d.ModifyIndex {
			continue
		}
		job, err := st.JobVersionByID(nil, d.Namespace, d.JobID, d.JobVersion)
		if err != nil {
			return err
		}
		latest, err := st.LatestDeploymentByJobID(nil, d.Namespace, d.JobID)
		if err != nil {
			return err
		}
		// Not a multiregion job, or superseded (a newer version's rollout
		// is the one that moves): nothing to do until it changes.
		if job == nil || job.Multiregion == nil || latest == nil || latest.ID != d.ID {
			w.handled[d.ID] = d.ModifyIndex
			continue
		}
		if err := w.step(ctx, d, job.Multiregion); err != nil {
			errs = append(errs, fmt.Errorf("job %q version %d: %w", d.JobID, d.JobVersion, err))
			continue
		}
		w.handled[d.ID] = d.ModifyIndex
	}
	for id := range w.handled {
		if !seen[id] {
			delete(w.handled, id) // garbage-collected
		}
	}
	return errors.Join(errs...)
}

// peerDeployment is one region's deployment of a rollout's version.
type peerDeployment struct {
	id, status string
	client     *api.Client // nil: this region
}

// step reads every region's deployment of d's version, then applies
// nextRollout.
func (w *multiregionRollout) step(ctx context.Context, d *api.Deployment, m *api.Multiregion) error {
	peers := map[string]*peerDeployment{w.home: {id: d.ID, status: d.Status}}
	status := map[string]string{w.home: d.Status}
	for _, r := range m.Names() {
		if r == w.home {
			continue
		}
		if w.regions == nil {
			return fmt.Errorf("region %q: %w", r, api.Errorf(api.ErrUnknownRegion, "this server is not federated"))
		}
		p, err := w.peer(ctx, r, d)
		if err != nil {
			return fmt.Errorf("read region %q: %w", r, err)
		}
		if p != nil {
			peers[r], status[r] = p, p.status
		}
	}
	acts := nextRollout(m, status)
	if acts.empty() {
		return nil
	}
	w.log.Info("multiregion rollout step", "job", d.JobID, "version", d.JobVersion, "run", acts.Run, "fail", acts.Fail, "unblock", acts.Unblock)
	var errs []error
	do := func(regions []string, local func(context.Context, string) (*api.DeploymentUpdateResponse, error),
		remote func(*api.Client, context.Context, string) (*api.DeploymentUpdateResponse, error)) {
		for _, r := range regions {
			p := peers[r]
			var err error
			if p.client == nil {
				_, err = local(ctx, p.id)
			} else {
				rctx, cancel := context.WithTimeout(ctx, multiregionCallTimeout)
				_, err = remote(p.client, rctx, p.id)
				cancel()
			}
			if err != nil && !errors.Is(err, api.ErrConflict) { // conflict: it moved on already
				errs = append(errs, fmt.Errorf("region %q deployment %s: %w", r, p.id, err))
			}
		}
	}
	dp := &Deployments{serverCore: w.serverCore}
	do(acts.Fail, dp.FailDeployment, (*api.Client).FailDeployment)
	do(acts.Run, dp.RunDeployment, (*api.Client).RunDeployment)
	do(acts.Unblock, dp.UnblockDeployment, (*api.Client).UnblockDeployment)
	return errors.Join(errs...)
}

// peer reads region's deployment of d's version, through consistent
// reads of its leader: nil when it has none yet (the job is not there,
// or not yet at the version); status cancelled when the job there moved
// past the version.
func (w *multiregionRollout) peer(ctx context.Context, region string, d *api.Deployment) (*peerDeployment, error) {
	cl, err := w.regions.Client(region, "")
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, multiregionCallTimeout)
	defer cancel()
	q := &api.QueryOptions{Namespace: d.Namespace, Consistent: true}
	job, _, err := cl.Job(rctx, d.JobID, q)
	switch {
	case errors.Is(err, api.ErrJobNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case job.Version < d.JobVersion:
		return nil, nil
	case job.Version > d.JobVersion:
		return &peerDeployment{status: api.DeploymentStatusCancelled, client: cl}, nil
	}
	deps, _, err := cl.JobDeployments(rctx, d.JobID, q)
	if errors.Is(err, api.ErrJobNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, pd := range deps { // newest first
		if pd.JobVersion == d.JobVersion {
			return &peerDeployment{id: pd.ID, status: pd.Status, client: cl}, nil
		}
	}
	return nil, nil
}

// RunDeployment starts a pending deployment of a multiregion job (its
// region's turn has come) with an eval that places its version.
func (dp *Deployments) RunDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error) {
	d, job, err := dp.active(id)
	if err != nil {
		return nil, err
	}
	if d.Status != api.DeploymentStatusPending {
		return nil, fmt.Errorf("deployment %s is %s: %w", d.ID, d.Status, api.Errorf(api.ErrConflict, "deployment is not pending"))
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, Time: dp.clock.Now(),
		Status: api.DeploymentStatusRunning, StatusDescription: "deployment is running: its region's turn came"}
	req.RequireProgressBy = renewProgress(job, req.Time)
	return dp.write(ctx, req, job)
}

// UnblockDeployment marks a blocked deployment of a multiregion job
// successful (its region finished; every region has, or an operator
// decides so after a failure elsewhere).
func (dp *Deployments) UnblockDeployment(ctx context.Context, id string) (*api.DeploymentUpdateResponse, error) {
	d, _, err := dp.active(id)
	if err != nil {
		return nil, err
	}
	if d.Status != api.DeploymentStatusBlocked {
		return nil, fmt.Errorf("deployment %s is %s: %w", d.ID, d.Status, api.Errorf(api.ErrConflict, "deployment is not blocked"))
	}
	req := &state.DeploymentUpdateRequest{DeploymentID: d.ID, Time: dp.clock.Now(),
		Status: api.DeploymentStatusSuccessful, StatusDescription: "deployment completed successfully in every region"}
	return dp.write(ctx, req, nil)
}
