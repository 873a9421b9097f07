package taskrunner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// VariableReader reads Nomad Variables from the servers for templates,
// with a task's workload identity token: at once with index 0, else
// blocking until the read's index passes index or wait elapses. A missing
// variable is (nil, 0, nil).
type VariableReader interface {
	Variable(ctx context.Context, token, ns, path string, index uint64, wait time.Duration) (*api.Variable, uint64, error)
	Variables(ctx context.Context, token, ns, prefix string, index uint64, wait time.Duration) ([]*api.VariableMetadata, uint64, error)
}

// VarCache holds the variables a task's templates read (nomadVar,
// nomadVarList), so a render reads each once and Watch can tell when one
// changes. Reads carry the task's workload identity (token, fetched on
// first use): it reads nomad/jobs/<job>[/<group>[/<task>]] by itself, and
// other paths as its ACL policies allow.
type VarCache struct {
	r     VariableReader
	ns    string
	token func(ctx context.Context) (string, error)
	clock clock.Clock

	mu      sync.Mutex
	tok     string
	entries map[string]*varEntry // "var:<path>" or "list:<prefix>"
}

type varEntry struct {
	v     *api.Variable // nil: missing (var: entries)
	list  []*api.VariableMetadata
	index uint64
}

// NewVarCache returns a cache reading through r in namespace ns with the
// token token returns, waiting out Watch's retries on clk.
func NewVarCache(r VariableReader, ns string, token func(ctx context.Context) (string, error), clk clock.Clock) *VarCache {
	return &VarCache{r: r, ns: ns, token: token, clock: clk, entries: map[string]*varEntry{}}
}

func (c *VarCache) authToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	t := c.tok
	c.mu.Unlock()
	if t != "" || c.token == nil {
		return t, nil
	}
	t, err := c.token(ctx)
	if err != nil {
		return "", fmt.Errorf("workload identity: %w", err)
	}
	c.mu.Lock()
	c.tok = t
	c.mu.Unlock()
	return t, nil
}

// read reads key (var:/list:) once, blocking on index when > 0.
func (c *VarCache) read(ctx context.Context, key string, index uint64, wait time.Duration) (*varEntry, error) {
	tok, err := c.authToken(ctx)
	if err != nil {
		return nil, err
	}
	if p, ok := strings.CutPrefix(key, "var:"); ok {
		v, idx, err := c.r.Variable(ctx, tok, c.ns, p, index, wait)
		if err != nil {
			return nil, err
		}
		return &varEntry{v: v, index: idx}, nil
	}
	l, idx, err := c.r.Variables(ctx, tok, c.ns, strings.TrimPrefix(key, "list:"), index, wait)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(l, func(a, b *api.VariableMetadata) int { return strings.Compare(a.Path, b.Path) })
	return &varEntry{list: l, index: idx}, nil
}

func (c *VarCache) entry(ctx context.Context, key string) (*varEntry, error) {
	c.mu.Lock()
	e := c.entries[key]
	c.mu.Unlock()
	if e != nil && (e.v != nil || strings.HasPrefix(key, "list:")) {
		return e, nil // a missing variable is read again: a render after a failed one may find it
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	e, err := c.read(ctx, key, 0, 0)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.entries[key] = e
	c.mu.Unlock()
	return e, nil
}

// get is nomadVar: the items of the variable at path. A missing one
// fails the render (the task does not start without it; the restart
// policy tries again), and is watched so its creation re-renders.
func (c *VarCache) get(ctx context.Context, path string) (map[string]string, error) {
	e, err := c.entry(ctx, "var:"+path)
	if err != nil {
		return nil, fmt.Errorf("nomadVar %q: %w", path, err)
	}
	if e.v == nil {
		return nil, fmt.Errorf("nomadVar %q: no such variable in namespace %q", path, c.ns)
	}
	return maps.Clone(e.v.Items), nil
}

// list is nomadVarList: the metadata of the variables under prefix, by
// path.
func (c *VarCache) list(ctx context.Context, prefix string) ([]*api.VariableMetadata, error) {
	e, err := c.entry(ctx, "list:"+prefix)
	if err != nil {
		return nil, fmt.Errorf("nomadVarList %q: %w", prefix, err)
	}
	return e.list, nil
}

// Keys are the reads made so far.
func (c *VarCache) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.entries))
}

// sameEntry reports whether a re-read changes what templates see: a
// variable's items, or the paths of a list (a list is re-rendered when a
// variable under its prefix appears or goes, not on each write to one).
func sameEntry(a, b *varEntry) bool {
	if (a.v == nil) != (b.v == nil) {
		return false
	}
	if a.v != nil {
		return maps.Equal(a.v.Items, b.v.Items)
	}
	return slices.EqualFunc(a.list, b.list, func(x, y *api.VariableMetadata) bool { return x.Path == y.Path })
}

// Watch blocks until a variable (or list) read so far changes, updates
// the cache and returns true; false when ctx ends.
func (c *VarCache) Watch(ctx context.Context) bool {
	return watchEach(ctx, c.Keys(), c.watchKey)
}

// watchKey waits for one read (a variable or a list) to change (true) or
// ctx to end (false). Transient errors, and a missing variable (no index
// to block on), are retried with backoff.
func (c *VarCache) watchKey(ctx context.Context, key string) bool {
	retry := clock.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second}
	for ctx.Err() == nil {
		c.mu.Lock()
		e := c.entries[key]
		c.mu.Unlock()
		n, err := c.read(ctx, key, e.index, 5*time.Minute)
		if err != nil || n.index == 0 {
			if err == nil && !sameEntry(e, n) {
				c.set(key, n)
				return true
			}
			retry.Wait(ctx, c.clock)
			continue
		}
		retry.Reset()
		if n.index <= e.index {
			continue // the wait elapsed
		}
		c.set(key, n)
		if !sameEntry(e, n) {
			return true
		}
	}
	return false
}

func (c *VarCache) set(key string, e *varEntry) {
	c.mu.Lock()
	c.entries[key] = e
	c.mu.Unlock()
}

// watchAny blocks until one of the watches reports a change (true) or
// ctx ends (false); the others are let go.
func watchAny(ctx context.Context, watches ...func(context.Context) bool) bool {
	if len(watches) == 1 {
		return watches[0](ctx)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := make(chan bool, len(watches))
	for _, w := range watches {
		go func() { res <- w(wctx) }()
	}
	ok := false
	for range watches {
		if <-res && !ok {
			ok = true
			cancel()
		}
	}
	return ok
}

// varToken is the task's default workload identity, for its variable
// reads.
func (tr *TaskRunner) varToken(ctx context.Context) (string, error) {
	if tr.cfg.Identities == nil {
		return "", fmt.Errorf("this client cannot sign identities")
	}
	resp, err := fetchIdentities(ctx, tr.clock, tr.cfg.Identities, tr.cfg.Alloc.ID, tr.cfg.Task.Name)
	if err != nil {
		return "", err
	}
	for _, si := range resp.Identities {
		if si.Name == api.DefaultIdentityName {
			return si.Token, nil
		}
	}
	return "", fmt.Errorf("no default identity signed for task %q", tr.cfg.Task.Name)
}
