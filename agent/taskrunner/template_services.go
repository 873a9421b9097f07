package taskrunner

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// ServiceLookup reads the instances of a native service for templates:
// at once with index 0, else blocking until the service list's index
// passes index or wait elapses. It returns the list and its index.
type ServiceLookup func(ctx context.Context, namespace, name string, index uint64, wait time.Duration) ([]*api.ServiceRegistration, uint64, error)

// ServiceCache holds the service lists a task's templates read
// (nomadService), so a render reads each once and Watch can tell when one
// changes.
type ServiceCache struct {
	lookup ServiceLookup
	ns     string
	clock  clock.Clock // Watch's retry backoff

	mu      sync.Mutex
	entries map[string]*cacheEntry
}

type cacheEntry struct {
	regs  []*api.ServiceRegistration // passing instances, sorted by ID
	index uint64
}

// NewServiceCache returns a cache reading through lookup in namespace ns,
// waiting out Watch's retries on clk.
func NewServiceCache(lookup ServiceLookup, ns string, clk clock.Clock) *ServiceCache {
	return &ServiceCache{lookup: lookup, ns: ns, clock: clk, entries: map[string]*cacheEntry{}}
}

// get returns the passing instances of a service, reading it on first use.
func (c *ServiceCache) get(ctx context.Context, name string) ([]*api.ServiceRegistration, error) {
	c.mu.Lock()
	e := c.entries[name]
	c.mu.Unlock()
	if e != nil {
		return e.regs, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	regs, idx, err := c.lookup(ctx, c.ns, name, 0, 0)
	if err != nil {
		return nil, err
	}
	e = &cacheEntry{regs: passing(regs), index: idx}
	c.mu.Lock()
	c.entries[name] = e
	c.mu.Unlock()
	return e.regs, nil
}

func passing(regs []*api.ServiceRegistration) []*api.ServiceRegistration {
	out := []*api.ServiceRegistration{}
	for _, r := range regs {
		if r.Passing() {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *api.ServiceRegistration) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Names are the services read so far.
func (c *ServiceCache) Names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n := range c.entries {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Watch blocks until the passing instances of a service read so far
// change, updates the cache and returns true; false when ctx ends.
func (c *ServiceCache) Watch(ctx context.Context) bool {
	return watchEach(ctx, c.Names(), c.watchName)
}

// watchName waits for the passing instances of one service to change
// (true) or ctx to end (false); transient errors are retried with backoff.
func (c *ServiceCache) watchName(ctx context.Context, name string) bool {
	retry := clock.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second}
	for ctx.Err() == nil {
		c.mu.Lock()
		e := c.entries[name]
		c.mu.Unlock()
		regs, idx, err := c.lookup(ctx, c.ns, name, e.index, 5*time.Minute)
		if err != nil {
			retry.Wait(ctx, c.clock)
			continue
		}
		retry.Reset()
		p := passing(regs)
		same := slices.EqualFunc(p, e.regs, func(a, b *api.ServiceRegistration) bool {
			return a.ID == b.ID && a.Address == b.Address && a.Port == b.Port && slices.Equal(a.Tags, b.Tags)
		})
		c.mu.Lock()
		c.entries[name] = &cacheEntry{regs: p, index: max(idx, e.index)}
		c.mu.Unlock()
		if !same {
			return true
		}
	}
	return false
}

// watchEach runs watch for every key at once until one reports a change
// (true) or ctx ends (false); the others are let go. With no keys it waits
// for ctx.
func watchEach(ctx context.Context, keys []string, watch func(context.Context, string) bool) bool {
	if len(keys) == 0 {
		<-ctx.Done()
		return false
	}
	watches := make([]func(context.Context) bool, len(keys))
	for i, k := range keys {
		watches[i] = func(ctx context.Context) bool { return watch(ctx, k) }
	}
	return watchAny(ctx, watches...)
}

// watchTemplates re-renders the task's templates whenever a service or
// a variable they read changes, then applies their change_mode.
func (tr *TaskRunner) watchTemplates(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-tr.tmplCh: // a render read services or variables
	}
	tr.mu.Lock()
	var watches []func(context.Context) bool
	if tr.svc != nil {
		watches = append(watches, tr.svc.Watch)
	}
	if tr.vars != nil {
		watches = append(watches, tr.vars.Watch)
	}
	tr.mu.Unlock()
	for watchAny(ctx, watches...) {
		tr.rerender(ctx)
	}
}

// rerender renders the templates again with the env of the last render;
// when a file changed, the strongest change_mode of the changed templates
// acts: restart (also for env templates), else signal, else nothing.
func (tr *TaskRunner) rerender(ctx context.Context) {
	tr.mu.Lock()
	env, task := tr.rendered, tr.task
	tr.mu.Unlock()
	_, changed, err := renderTemplates(ctx, task.Templates, filepath.Join(tr.cfg.AllocDir, task.Name), env, tr.cfg.Node, tr.svc, tr.vars)
	if err != nil {
		tr.log.Warn("re-render templates", "error", err)
		return
	}
	restart := false
	var signals []string
	for _, t := range changed {
		switch mode := cmp.Or(t.ChangeMode, api.DefaultTemplateChangeMode); {
		case mode == "restart" || t.Envvars:
			restart = true
		case mode == "signal" && !slices.Contains(signals, t.ChangeSignal):
			signals = append(signals, t.ChangeSignal)
		}
	}
	switch {
	case restart:
		if err := tr.RestartFor(ctx, "Template with change_mode restart re-rendered"); err != nil {
			tr.log.Info("template re-rendered while the task is not running", "error", err)
		}
	case len(signals) > 0:
		for _, sig := range signals {
			if err := tr.Signal(ctx, sig); err != nil {
				tr.log.Warn("template change_signal", "signal", sig, "error", err)
			}
		}
	case len(changed) > 0:
		tr.log.Info("templates re-rendered (change_mode noop)", "count", len(changed))
	}
}
