package server

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// drainRetry is how soon the drainer retries after a failed write.
const drainRetry = time.Second

// drainer is the leader's node drainer. Each pass looks at every
// draining node and:
//   - asks the scheduler to migrate (DesiredTransition.Migrate) the node's
//     service allocs, at most migrate.max_parallel per group at a time
//     (an alloc counts until the client reports it stopped);
//   - leaves batch allocs alone until the deadline;
//   - at the deadline (or for a negative deadline) migrates everything;
//   - migrates system allocs last, once everything else stopped, unless
//     IgnoreSystemJobs;
//   - marks the drain complete only when the client reported every alloc
//     that had to go as terminal.
//
// Passes run when the nodes or the draining nodes' allocs change (memdb
// watch) or a deadline is reached (injected clock), never by polling.
type drainer struct{ serverCore }

// Run drains until ctx ends.
func (d *drainer) Run(ctx context.Context) {
	log := d.log
	for {
		ws := memdb.NewWatchSet()
		next, err := d.drainPass(ctx, ws)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn("drain pass", "err", err)
			if next.IsZero() || next.After(d.clock.Now().Add(drainRetry)) {
				next = d.clock.Now().Add(drainRetry)
			}
		}
		log.Debug("drain pass done", "next", next, "now", d.clock.Now())
		wake := make(chan struct{})
		var t clock.Timer
		if !next.IsZero() {
			t = d.clock.AtFunc(next, func() { close(wake) })
		}
		ws.Add(d.state().AbandonCh())
		wctx, cancel := context.WithCancel(ctx)
		changed := ws.WatchCh(wctx)
		select {
		case <-ctx.Done():
		case <-changed:
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

type tgKey struct{ ns, job, tg string }

// drainPass does one pass and returns the earliest future force deadline.
func (d *drainer) drainPass(ctx context.Context, ws memdb.WatchSet) (time.Time, error) {
	st := d.state()
	// The draining nodes only: listing every node (and waking on every
	// node write) costs the leader CPU in proportion to the cluster.
	nodes, err := st.DrainingNodes(ws)
	if err != nil {
		return time.Time{}, fmt.Errorf("list draining nodes: %w", err)
	}
	var next time.Time
	var firstErr error
	for _, node := range nodes {
		deadline, err := d.drainNode(ctx, ws, node)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("drain node %s: %w", node.ID, err)
		}
		if !deadline.IsZero() && (next.IsZero() || deadline.Before(next)) {
			next = deadline
		}
	}
	return next, firstErr
}

func (d *drainer) drainNode(ctx context.Context, ws memdb.WatchSet, node *api.Node) (time.Time, error) {
	st := d.state()
	ds := node.DrainStrategy
	now := d.clock.Now()
	forced := ds.Deadline < 0 || (!ds.ForceDeadline.IsZero() && !now.Before(ds.ForceDeadline))
	var next time.Time
	if !forced && !ds.ForceDeadline.IsZero() {
		next = ds.ForceDeadline
	}
	allocs, err := st.AllocsByNode(ws, node.ID)
	if err != nil {
		return next, err
	}
	var others, system []*api.Allocation
	jobs := map[tgKey]*api.Job{}
	jobOf := func(a *api.Allocation) *api.Job {
		k := tgKey{a.Namespace, a.JobID, ""}
		if j, ok := jobs[k]; ok {
			return j
		}
		j := a.Job
		if cur, err := st.JobByID(nil, a.Namespace, a.JobID); err == nil && cur != nil {
			j = cur
		}
		jobs[k] = j
		return j
	}
	for _, a := range allocs {
		if a.ClientTerminalStatus() {
			continue
		}
		j := jobOf(a)
		if j != nil && (j.Type == api.JobTypeSystem || j.Type == api.JobTypeSysBatch) {
			if !ds.IgnoreSystemJobs {
				system = append(system, a)
			}
			continue
		}
		others = append(others, a)
	}
	if len(others) == 0 && len(system) == 0 {
		ev := &api.NodeEvent{Message: "Node drain complete", Subsystem: "Drain", Timestamp: now}
		actx, cancel := d.applyCtx(ctx)
		defer cancel()
		if _, err := d.applyNodeDrain(actx, node.ID, nil, false, ev, nil); err != nil {
			return next, err
		}
		d.log.Info("node drain complete", "node", node.ID)
		return time.Time{}, nil
	}

	migrate := map[string]*api.DesiredTransition{}
	mark := func(a *api.Allocation) {
		t := true
		migrate[a.ID] = &api.DesiredTransition{Migrate: &t}
	}
	groups := map[tgKey][]*api.Allocation{}
	for _, a := range others {
		k := tgKey{a.Namespace, a.JobID, a.TaskGroup}
		groups[k] = append(groups[k], a)
	}
	for k, as := range groups {
		j := jobOf(as[0])
		maxPar := 1
		if j != nil {
			if tg := j.LookupTaskGroup(k.tg); tg != nil && tg.Migrate != nil && tg.Migrate.MaxParallel > 0 {
				maxPar = tg.Migrate.MaxParallel
			}
		}
		batch := j != nil && j.Type == api.JobTypeBatch
		inflight := 0
		for _, a := range as {
			if a.DesiredTransition.ShouldMigrate() || a.DesiredStatus != api.AllocDesiredStatusRun {
				inflight++
			}
		}
		for _, a := range as {
			if a.DesiredTransition.ShouldMigrate() || a.DesiredStatus != api.AllocDesiredStatusRun {
				continue
			}
			if forced || (!batch && inflight < maxPar) {
				mark(a)
				inflight++
			}
		}
	}
	if len(others) == 0 || forced {
		for _, a := range system {
			if !a.DesiredTransition.ShouldMigrate() && a.DesiredStatus == api.AllocDesiredStatusRun {
				mark(a)
			}
		}
	}
	if len(migrate) == 0 {
		return next, nil
	}
	evals := map[tgKey]*api.Evaluation{}
	for _, a := range allocs {
		if _, ok := migrate[a.ID]; !ok {
			continue
		}
		k := tgKey{a.Namespace, a.JobID, ""}
		if _, ok := evals[k]; ok {
			continue
		}
		j := jobOf(a)
		e := &api.Evaluation{ID: newID(), Namespace: a.Namespace, JobID: a.JobID, TriggeredBy: api.EvalTriggerNodeDrain,
			NodeID: node.ID, Status: api.EvalStatusPending, CreateTime: now.UnixNano(), ModifyTime: now.UnixNano(),
			Priority: api.DefaultPriority, Type: api.JobTypeService}
		if j != nil {
			e.Priority, e.Type = j.Priority, j.Type
		}
		evals[k] = e
	}
	list := make([]*api.Evaluation, 0, len(evals))
	for _, e := range evals {
		list = append(list, e)
	}
	actx, cancel := d.applyCtx(ctx)
	defer cancel()
	if _, err := d.applyDesiredTransitions(actx, migrate, list); err != nil {
		return next, err
	}
	d.log.Info("drain migrating allocs", "node", node.ID, "allocs", len(migrate), "forced", forced)
	return next, nil
}
