package server

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// ACL replication across regions (as Nomad's): one region is
// authoritative for ACL policies and global tokens (Global=true); the
// leader of every other region copies them from it into its own Raft,
// so a token made there works here too and a deleted one stops here.
// Local tokens (Global=false) are never touched: they live in the
// region that made them. Writes of policies and global tokens arriving
// here are forwarded to the authoritative region by the HTTP layer.

// ACLSource reads the authoritative region's ACL state (the agent reads
// it over the HTTP API, forwarded by region, with the replication token).
type ACLSource interface {
	// Policies waits until the authoritative region's policies change
	// past index (a blocking query; it may also return unchanged after a
	// while) and returns all of them, rules included, and their index.
	Policies(ctx context.Context, index uint64) ([]*api.ACLPolicy, uint64, error)
	// Tokens is Policies for the global tokens, secrets included.
	Tokens(ctx context.Context, index uint64) ([]*api.ACLToken, uint64, error)
}

// aclReplicationRetry is the pause after a failed read or write (the
// authoritative region down, or this server no longer the leader).
var aclReplicationRetry = time.Second

// aclReplicator is the leader duty that copies the authoritative
// region's policies and global tokens: one blocking-query loop each.
type aclReplicator struct {
	serverCore
	src ACLSource
}

// Run replicates until ctx ends (leadership lost, shutdown).
func (r *aclReplicator) Run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.loop(ctx, "policies", r.syncPolicies)
	}()
	r.loop(ctx, "tokens", r.syncTokens)
	<-done
}

// loop runs sync with the last index it answered, pausing after errors.
func (r *aclReplicator) loop(ctx context.Context, what string, sync func(context.Context, uint64) (uint64, error)) {
	var index uint64
	for ctx.Err() == nil {
		next, err := sync(ctx, index)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("acl replication failed; retrying", "what", what, "err", err, "retry_in", aclReplicationRetry)
			}
			select {
			case <-ctx.Done():
			case <-r.clock.After(aclReplicationRetry):
			}
			continue
		}
		index = next
	}
}

// syncPolicies makes this region's policies the authoritative region's.
func (r *aclReplicator) syncPolicies(ctx context.Context, index uint64) (uint64, error) {
	remote, next, err := r.src.Policies(ctx, index)
	if err != nil {
		return index, err
	}
	local, err := r.state().ACLPolicies(nil)
	if err != nil {
		return index, err
	}
	w := diffPolicies(local, remote)
	if len(w.Policies)+len(w.DeletePolicies) > 0 {
		if _, err := r.applyACL(ctx, w); err != nil {
			return index, err
		}
		r.log.Info("acl policies replicated", "upserted", len(w.Policies), "deleted", len(w.DeletePolicies), "index", next)
	}
	return next, nil
}

// syncTokens makes this region's global tokens the authoritative region's.
func (r *aclReplicator) syncTokens(ctx context.Context, index uint64) (uint64, error) {
	remote, next, err := r.src.Tokens(ctx, index)
	if err != nil {
		return index, err
	}
	local, err := r.state().ACLTokens(nil)
	if err != nil {
		return index, err
	}
	w := diffTokens(local, remote)
	if len(w.Tokens)+len(w.DeleteTokens) > 0 {
		if _, err := r.applyACL(ctx, w); err != nil {
			return index, err
		}
		r.log.Info("acl global tokens replicated", "upserted", len(w.Tokens), "deleted", len(w.DeleteTokens), "index", next)
	}
	return next, nil
}

// diffPolicies is the write that turns local into remote: policies
// missing or different here, and local ones the authoritative region
// does not have (policies are all global).
func diffPolicies(local, remote []*api.ACLPolicy) *state.ACLWrite {
	have := map[string]*api.ACLPolicy{}
	for _, p := range local {
		have[p.Name] = p
	}
	w := &state.ACLWrite{}
	want := map[string]bool{}
	for _, p := range remote {
		want[p.Name] = true
		if l := have[p.Name]; l == nil || l.Rules != p.Rules || l.Description != p.Description {
			c := *p
			c.CreateIndex, c.ModifyIndex = 0, 0
			w.Policies = append(w.Policies, &c)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if !want[name] {
			w.DeletePolicies = append(w.DeletePolicies, name)
		}
	}
	return w
}

// diffTokens is the write that turns local's global tokens into remote's
// global ones; local tokens (Global=false) are left alone.
func diffTokens(local, remote []*api.ACLToken) *state.ACLWrite {
	have := map[string]*api.ACLToken{}
	for _, t := range local {
		if t.Global {
			have[t.AccessorID] = t
		}
	}
	w := &state.ACLWrite{}
	want := map[string]bool{}
	for _, t := range remote {
		if !t.Global || t.SecretID == "" {
			continue
		}
		want[t.AccessorID] = true
		if l := have[t.AccessorID]; l == nil || !sameToken(l, t) {
			c := *t
			c.CreateIndex, c.ModifyIndex = 0, 0
			w.Tokens = append(w.Tokens, &c)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(have)) {
		if !want[id] {
			w.DeleteTokens = append(w.DeleteTokens, id)
		}
	}
	return w
}

// sameToken compares what a token grants and how it is named.
func sameToken(a, b *api.ACLToken) bool {
	if a.SecretID != b.SecretID || a.Name != b.Name || a.Type != b.Type || !slices.Equal(a.Policies, b.Policies) ||
		len(a.Roles) != len(b.Roles) || (a.ExpirationTime == nil) != (b.ExpirationTime == nil) ||
		a.ExpirationTime != nil && !a.ExpirationTime.Equal(*b.ExpirationTime) {
		return false
	}
	for i := range a.Roles {
		if *a.Roles[i] != *b.Roles[i] {
			return false
		}
	}
	return true
}
