package allocrunner

import (
	"context"
	"sync"

	"github.com/drover/drover/agent/taskrunner"
	"github.com/drover/drover/api"
)

func (ar *AllocRunner) hook(name string) (hook string, sidecar bool) {
	if lc := ar.hooks[name]; lc != nil {
		return lc.Hook, lc.Sidecar
	}
	return "", false
}

func (ar *AllocRunner) names(hook string) []string {
	var out []string
	for _, n := range ar.order {
		if h, _ := ar.hook(n); h == hook {
			out = append(out, n)
		}
	}
	return out
}

func (ar *AllocRunner) launch(ctx context.Context, names ...string) {
	for _, n := range names {
		ar.mu.Lock()
		already := ar.launched[n]
		ar.launched[n] = true
		ar.mu.Unlock()
		if already {
			continue
		}
		tr := ar.runners[n]
		ar.wg.Add(1)
		go func() {
			defer ar.wg.Done()
			tr.Run(ctx)
		}()
	}
}

// waitFor re-checks cond on every task change; false when the alloc is
// killed or ctx ends first.
func (ar *AllocRunner) waitFor(ctx context.Context, cond func() bool) bool {
	return ar.waitForKill(ctx, ar.killCh, cond)
}

func (ar *AllocRunner) waitForKill(ctx context.Context, killCh <-chan struct{}, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ar.taskCh:
		case <-killCh:
			return cond()
		case <-ctx.Done():
			return false
		}
	}
}

// Run drives the allocation through its lifecycle until every task is
// dead, or until ctx ends (agent shutdown: tasks keep running for a
// later agent to reattach). The client owns and waits for it.
func (ar *AllocRunner) Run(ctx context.Context) {
	defer close(ar.doneCh)
	defer ar.wg.Wait()
	if ar.svc != nil {
		stop := make(chan struct{})
		ar.wg.Add(1)
		go ar.watchServices(stop)
		defer func() {
			close(stop)
			if ctx.Err() != nil {
				ar.svc.Close() // agent shutdown: the tasks and their registrations stay
			} else {
				ar.svc.Deregister()
			}
		}()
	}
	a := ar.Alloc()
	if ar.cfg.Store != nil && !ar.cfg.Restore {
		if err := ar.cfg.Store.PutAlloc(ar.cfg.Alloc); err != nil {
			ar.log.Error("persist alloc", "error", err)
		}
	}
	if err := BuildAllocDir(ar.cfg.AllocDir, ar.order); err != nil {
		ar.log.Error("build alloc dir", "error", err)
	}
	if err := WriteGangFiles(ar.cfg.AllocDir, a.JobID, a.Gang); err != nil {
		ar.log.Error("write gang files", "error", err)
	}
	if a.DesiredStatus == api.AllocDesiredStatusStop || a.DesiredStatus == api.AllocDesiredStatusEvict {
		ar.Kill() // a stopped alloc is never revived
	}

	dead := func(n string) bool { return ar.runners[n].IsDead() }
	state := func(n string) *api.TaskState { return ar.runners[n].State() }
	started := func(n string) bool {
		select {
		case <-ar.runners[n].StartedCh():
			return true
		default:
			return dead(n)
		}
	}
	pre, main, post, stop := ar.names(api.TaskLifecycleHookPrestart), ar.names(""), ar.names(api.TaskLifecycleHookPoststart), ar.names(api.TaskLifecycleHookPoststop)

	var reason *api.TaskEvent
	// 1. prestart: non-sidecars run to completion, sidecars start.
	ar.launch(ctx, pre...)
	ok := ar.waitFor(ctx, func() bool {
		for _, n := range pre {
			if _, sidecar := ar.hook(n); sidecar && !started(n) || !sidecar && !dead(n) {
				return false
			}
		}
		return true
	})
	if ctx.Err() != nil {
		return
	}
	for _, n := range pre {
		if s := state(n); s.Failed {
			ok = false
			reason = &api.TaskEvent{Type: api.TaskSiblingFailed, DisplayMessage: "Task's sibling " + n + " failed", Details: map[string]string{"failed_sibling": n}}
		}
	}
	if ok && !ar.killed() {
		// 2. main tasks, then poststart once they have all started.
		ar.launch(ctx, main...)
		postLaunched := false
		ar.waitFor(ctx, func() bool {
			if !postLaunched {
				all := true
				for _, n := range main {
					all = all && started(n)
				}
				if all {
					postLaunched = true
					ar.launch(ctx, post...)
				}
			}
			allDead := true
			for _, n := range main {
				if !dead(n) {
					allDead = false
					continue
				}
				s := state(n)
				if s.Failed {
					reason = &api.TaskEvent{Type: api.TaskSiblingFailed, DisplayMessage: "Task's sibling " + n + " failed", Details: map[string]string{"failed_sibling": n}}
					return true
				}
				if ar.isLeader(n) {
					reason = &api.TaskEvent{Type: api.TaskLeaderDead, DisplayMessage: "Leader task " + n + " is dead"}
					return true
				}
			}
			if allDead && len(main) > 0 {
				reason = &api.TaskEvent{Type: api.TaskMainDead, DisplayMessage: "Main tasks in the group died"}
			}
			return allDead
		})
		if ctx.Err() != nil {
			return
		}
	}
	// 3. kill whatever still runs (sidecars, siblings, or all on a stop);
	// the services leave first, so traffic stops before shutdown_delay.
	if ar.svc != nil {
		ar.svc.Deregister()
	}
	if reason == nil || ar.killed() {
		reason = &api.TaskEvent{Type: api.TaskKilling, DisplayMessage: "Allocation is being stopped"}
	}
	if ar.killed() {
		// The tasks learn why before their kill_signal (killAll).
		why := ar.stopReason()
		reason.Details = map[string]string{"stop_reason": why}
		if err := WriteStopReason(ar.cfg.AllocDir, why); err != nil {
			ar.log.Error("write stop reason", "error", err)
		}
	}
	var rest []string
	for _, n := range ar.order {
		if h, _ := ar.hook(n); h != api.TaskLifecycleHookPoststop {
			rest = append(rest, n)
		}
	}
	ar.killAll(ctx, rest, reason)
	if ctx.Err() != nil {
		return
	}
	// 4. poststop tasks run to completion.
	ar.launch(ctx, stop...)
	ar.waitForKill(ctx, nil, func() bool {
		for _, n := range stop {
			if !dead(n) {
				return false
			}
		}
		return true
	})
	if ctx.Err() != nil {
		return
	}
	ar.teardownNetwork(ctx)
	ar.notify()
}

func (ar *AllocRunner) isLeader(name string) bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if tg := ar.alloc.Job.LookupTaskGroup(ar.alloc.TaskGroup); tg != nil {
		if t := tg.LookupTask(name); t != nil {
			return t.Leader
		}
	}
	return false
}

// killAll kills the named tasks in parallel (never-started ones are
// marked dead) and waits for them.
func (ar *AllocRunner) killAll(ctx context.Context, names []string, ev *api.TaskEvent) {
	var wg sync.WaitGroup
	for _, n := range names {
		tr := ar.runners[n]
		if tr.IsDead() {
			continue
		}
		e := *ev
		tr.MarkKilled(&e)
		ar.launch(ctx, n)
		wg.Add(1)
		go func(tr *taskrunner.TaskRunner) {
			defer wg.Done()
			select {
			case <-tr.WaitCh():
			case <-ctx.Done():
			}
		}(tr)
	}
	wg.Wait()
}
