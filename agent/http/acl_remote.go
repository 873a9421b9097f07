package http

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	nethttp "net/http"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/acl"
)

// Defaults of RemoteACL, as Nomad's client acl { token_ttl, policy_ttl }.
const (
	DefaultRemoteACLTTL     = 30 * time.Second
	DefaultRemoteACLEntries = 4096
	remoteACLTimeout        = 10 * time.Second
)

// RemoteACL is the ACLResolver of a client-only agent with ACLs on: it
// asks its servers what a secret may do (GET /v1/acl/resolve, sent with
// that secret, so a secret can only ever resolve itself), compiles the
// rules and keeps the answer for at most TTL; Watch drops every answer
// as soon as the servers' ACLs change, so a revoked token stops working
// here at once (TTL bounds what is kept while the watch cannot reach a
// server). Failed lookups are not kept. Safe for concurrent use.
type RemoteACL struct {
	// Servers are HTTP addresses (host:port or URLs), tried in turn.
	Servers []string
	// HTTP is the client used to reach them (nil: a default one).
	HTTP *nethttp.Client
	// TTL bounds how long an answer is kept (default 30s); Entries how
	// many (default 4096; when full, those near expiry go first).
	TTL     time.Duration
	Entries int
	// Clock is the clock of the TTL and of Watch's retries (nil:
	// clock.Real).
	Clock clock.Clock

	mu    sync.Mutex
	cache map[[32]byte]*remoteEntry
	gen   uint64 // flushes so far: an answer fetched before one is not kept
}

type remoteEntry struct {
	acl     *acl.ACL
	expires time.Time
}

// ACLEnabled is always true: a RemoteACL is configured only when ACLs are on.
func (r *RemoteACL) ACLEnabled() bool { return true }

// ResolveToken returns the secret's ACL, from the cache or its servers;
// the token itself is not returned (nil).
func (r *RemoteACL) ResolveToken(secret string) (*acl.ACL, *api.ACLToken, error) {
	key := sha256.Sum256([]byte(secret))
	now := r.now()
	r.mu.Lock()
	e, gen := r.cache[key], r.gen
	r.mu.Unlock()
	if e != nil && now.Before(e.expires) {
		return e.acl, nil, nil
	}
	res, err := r.fetch(secret)
	if err != nil {
		return nil, nil, err
	}
	a := acl.Management()
	if res.NodeID != "" {
		a = acl.Node(res.NodeID)
	} else if w := res.Workload; w != nil {
		a = acl.ForWorkload(acl.Workload{Namespace: w.Namespace, JobID: w.JobID, Group: w.Group, Task: w.Task})
	} else if !res.Management {
		ps := make([]*acl.Policy, 0, len(res.Rules))
		for _, rules := range res.Rules {
			p, err := acl.Parse(rules)
			if err != nil {
				return nil, nil, api.Errorf(api.ErrInternal, fmt.Sprintf("policy from server: %v", err))
			}
			ps = append(ps, p)
		}
		a = acl.New(ps...)
	}
	expires := now.Add(r.ttl())
	if t := res.ExpirationTime; t != nil && t.Before(expires) {
		expires = *t
	}
	r.put(key, &remoteEntry{acl: a, expires: expires}, now, gen)
	return a, nil, nil
}

func (r *RemoteACL) fetch(secret string) (*api.ACLResolution, error) {
	ctx, cancel := context.WithTimeout(context.Background(), remoteACLTimeout)
	defer cancel()
	hc := r.HTTP
	if hc == nil {
		hc = &nethttp.Client{}
	}
	var last error = api.Errorf(api.ErrUnavailable, "no servers to resolve ACL tokens")
	for _, addr := range r.Servers {
		c := api.NewClient(addr)
		c.HTTP, c.Token = hc, secret
		var res api.ACLResolution
		_, err := c.Query(ctx, "/v1/acl/resolve", &res, &api.QueryOptions{AllowStale: true})
		if err == nil {
			return &res, nil
		}
		var ae *api.Error
		if errors.As(err, &ae) && ae.Status < 500 {
			return nil, ae // the server's answer (denied, ACLs off there, ...)
		}
		last = api.Errorf(api.ErrUnavailable, fmt.Sprintf("resolve ACL token at server %s: %v", addr, err))
	}
	return nil, last
}

// Watch drops every kept answer as soon as the servers' tokens, policies
// or roles change, so a deleted token or a new deny rule holds here at
// once rather than after TTL: it long-polls GET /v1/acl/resolve?index=
// with secret (the node's own; "" for none: Watch returns at once) until
// ctx ends. Failed polls are retried after a backoff of up to 30s; the
// TTL still bounds what is kept meanwhile. changed, if set, is called
// after each flush (tests wait on it).
func (r *RemoteACL) Watch(ctx context.Context, secret func() string, changed func()) {
	var index uint64
	failures := 0
	for ctx.Err() == nil {
		sec := secret()
		if sec == "" {
			return
		}
		idx, err := r.poll(ctx, sec, index)
		if err != nil {
			failures++
			select {
			case <-ctx.Done():
				return
			case <-r.clock().After(min(time.Duration(failures)*time.Second, 30*time.Second)):
			}
			continue
		}
		failures = 0
		if index != 0 && idx != index {
			r.mu.Lock()
			clear(r.cache)
			r.gen++
			r.mu.Unlock()
			if changed != nil {
				changed()
			}
		}
		index = idx
	}
}

// poll is one blocking resolve past index at the first server that
// answers; it returns the servers' ACL index.
func (r *RemoteACL) poll(ctx context.Context, secret string, index uint64) (uint64, error) {
	hc := r.HTTP
	if hc == nil {
		hc = &nethttp.Client{}
	}
	var last error = errors.New("no servers")
	for _, addr := range r.Servers {
		c := api.NewClient(addr)
		c.HTTP, c.Token = hc, secret
		var res api.ACLResolution
		qm, err := c.Query(ctx, "/v1/acl/resolve", &res, &api.QueryOptions{AllowStale: true, WaitIndex: index, WaitTime: 5 * time.Minute})
		if err == nil {
			return qm.LastIndex, nil
		}
		last = err
	}
	return 0, last
}

func (r *RemoteACL) put(key [32]byte, e *remoteEntry, now time.Time, gen uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen {
		return // fetched before the last flush: possibly stale
	}
	if r.cache == nil {
		r.cache = map[[32]byte]*remoteEntry{}
	}
	max := r.Entries
	if max <= 0 {
		max = DefaultRemoteACLEntries
	}
	if len(r.cache) >= max {
		// Drop the expired ones, then (still full) those expiring first.
		cut := now.Add(r.ttl() / 2)
		for k, old := range r.cache {
			if !old.expires.After(cut) {
				delete(r.cache, k)
			}
		}
		for k := range r.cache {
			if len(r.cache) < max {
				break
			}
			delete(r.cache, k)
		}
	}
	r.cache[key] = e
}

func (r *RemoteACL) ttl() time.Duration {
	if r.TTL > 0 {
		return r.TTL
	}
	return DefaultRemoteACLTTL
}

func (r *RemoteACL) clock() clock.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return clock.Real{}
}

func (r *RemoteACL) now() time.Time { return r.clock().Now() }
