package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
	"github.com/drover/drover/server/state"
)

// AnonymousPolicy is the policy requests without a token get (none: they
// may do nothing but the public routes), as Nomad's "anonymous".
const AnonymousPolicy = "anonymous"

// ACL is the component of ACL tokens, policies and roles: their writes
// through Raft, and resolving a secret to what it may do (a token's
// policies, a node secret's node, anonymous). Auth methods, binding
// rules and OIDC logins are SSO's. It is safe for concurrent use (the
// parsed policies are cached under a lock).
type ACL struct {
	serverCore
	enabled  bool     // Config.ACLEnabled
	policies aclCache // parsed policies
	keys     *Keyring // verifies workload identities (acl_workload.go)
}

// ACLEnabled reports whether this server enforces ACLs.
func (a *ACL) ACLEnabled() bool { return a.enabled }

// BootstrapACL creates the first management token; once any token exists
// it answers api.ErrBadRequest. The route is public, so a bootstrap that
// the state already refuses is refused here, before Raft: repeated calls
// write nothing. The FSM checks again, for two bootstraps racing.
func (a *ACL) BootstrapACL(ctx context.Context) (*api.ACLToken, error) {
	done, err := a.state().ACLBootstrapped()
	if err != nil {
		return nil, fmt.Errorf("acl bootstrap: %w", err)
	}
	if done {
		// The same answer as the FSM's (state.Txn.ApplyACL).
		return nil, fmt.Errorf("acl bootstrap: %w", api.Errorf(api.ErrBadRequest, "ACL bootstrap already done"))
	}
	now := a.clock.Now().UTC()
	tok := &api.ACLToken{AccessorID: newID(), SecretID: newID(), Name: "Bootstrap Token", Type: api.ACLTokenManagement,
		Global: true, CreateTime: now}
	idx, err := a.applyACL(ctx, &state.ACLWrite{Tokens: []*api.ACLToken{tok}, Bootstrap: true})
	if err != nil {
		return nil, fmt.Errorf("acl bootstrap: %w", err)
	}
	tok.CreateIndex, tok.ModifyIndex = idx, idx
	return tok, nil
}

// UpsertACLPolicy validates and stores a policy.
func (a *ACL) UpsertACLPolicy(ctx context.Context, p *api.ACLPolicy) (uint64, error) {
	if p.Name == "" || strings.ContainsAny(p.Name, "/ \t\n") {
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL policy name %q: want letters, digits, - and _", p.Name))
	}
	if _, err := acl.Parse(p.Rules); err != nil {
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL policy %q: %v", p.Name, err))
	}
	return a.applyACL(ctx, &state.ACLWrite{Policies: []*api.ACLPolicy{p}})
}

// DeleteACLPolicy removes a policy (not one a role names).
func (a *ACL) DeleteACLPolicy(ctx context.Context, name string) (uint64, error) {
	return a.applyACL(ctx, &state.ACLWrite{DeletePolicies: []string{name}})
}

// UpsertACLToken creates a token (AccessorID empty: new IDs, TTL turned
// into an expiry) or updates one's name, policies and roles.
func (a *ACL) UpsertACLToken(ctx context.Context, t *api.ACLToken) (*api.ACLToken, error) {
	c := *t
	switch c.Type {
	case "":
		c.Type = api.ACLTokenClient
	case api.ACLTokenClient, api.ACLTokenManagement:
	default:
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL token type %q: want client or management", c.Type))
	}
	if c.Type == api.ACLTokenClient && len(c.Policies) == 0 && len(c.Roles) == 0 {
		return nil, api.Errorf(api.ErrBadRequest, "a client token needs policies or roles")
	}
	if c.Type == api.ACLTokenManagement && (len(c.Policies) > 0 || len(c.Roles) > 0) {
		return nil, api.Errorf(api.ErrBadRequest, "a management token takes no policies or roles")
	}
	for i, l := range c.Roles {
		if l.ID == "" && l.Name != "" {
			r, err := a.state().ACLRoleByName(nil, l.Name)
			if err != nil {
				return nil, err
			}
			if r == nil {
				return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL role %q does not exist", l.Name))
			}
			c.Roles[i] = &api.ACLTokenRoleLink{ID: r.ID, Name: r.Name}
		}
	}
	now := a.clock.Now().UTC()
	if c.AccessorID == "" {
		c.AccessorID, c.SecretID, c.CreateTime = newID(), newID(), now
		if c.ExpirationTTL < 0 {
			return nil, api.Errorf(api.ErrBadRequest, "ExpirationTTL must not be negative")
		}
		if c.ExpirationTTL > 0 {
			exp := now.Add(c.ExpirationTTL)
			c.ExpirationTime = &exp
		}
	} else {
		old, err := a.state().ACLTokenByAccessor(nil, c.AccessorID)
		if err != nil {
			return nil, err
		}
		if old == nil {
			return nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL token %q not found", c.AccessorID))
		}
		c.SecretID, c.CreateTime, c.ExpirationTime, c.Type = old.SecretID, old.CreateTime, old.ExpirationTime, old.Type
	}
	idx, err := a.applyACL(ctx, &state.ACLWrite{Tokens: []*api.ACLToken{&c}})
	if err != nil {
		return nil, err
	}
	c.ModifyIndex = idx
	if c.CreateIndex == 0 {
		c.CreateIndex = idx
	}
	return &c, nil
}

// DeleteACLToken removes a token by accessor.
func (a *ACL) DeleteACLToken(ctx context.Context, accessor string) (uint64, error) {
	return a.applyACL(ctx, &state.ACLWrite{DeleteTokens: []string{accessor}})
}

// UpsertACLRole creates (ID empty) or replaces a role.
func (a *ACL) UpsertACLRole(ctx context.Context, r *api.ACLRole) (*api.ACLRole, error) {
	c := *r
	if c.Name == "" || len(c.Policies) == 0 {
		return nil, api.Errorf(api.ErrBadRequest, "an ACL role needs a name and policies")
	}
	if c.ID == "" {
		c.ID = newID()
	}
	idx, err := a.applyACL(ctx, &state.ACLWrite{Roles: []*api.ACLRole{&c}})
	if err != nil {
		return nil, err
	}
	c.ModifyIndex = idx
	return &c, nil
}

// DeleteACLRole removes a role by ID.
func (a *ACL) DeleteACLRole(ctx context.Context, id string) (uint64, error) {
	return a.applyACL(ctx, &state.ACLWrite{DeleteRoles: []string{id}})
}

// aclCache keeps the parsed policies by name and ModifyIndex.
type aclCache struct {
	mu       sync.Mutex
	policies map[string]*cachedPolicy
}

type cachedPolicy struct {
	index uint64
	p     *acl.Policy
}

func (c *aclCache) policy(p *api.ACLPolicy) (*acl.Policy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.policies[p.Name]; e != nil && e.index == p.ModifyIndex {
		return e.p, nil
	}
	parsed, err := acl.Parse(p.Rules)
	if err != nil {
		return nil, err
	}
	if c.policies == nil {
		c.policies = map[string]*cachedPolicy{}
	}
	c.policies[p.Name] = &cachedPolicy{index: p.ModifyIndex, p: parsed}
	return parsed, nil
}

// resolved is what a secret stands for: a management token, a node
// secret, or a token (nil for anonymous) with its policies.
type resolved struct {
	management bool
	nodeID     string        // a node secret's node
	workload   *acl.Workload // a workload identity's task
	token      *api.ACLToken
	policies   []*api.ACLPolicy
}

// resolve looks a secret up: a token (expired ones are refused, roles
// expanded, deleted policies skipped), a node secret, or "" (anonymous).
func (a *ACL) resolve(secret string) (*resolved, error) {
	st := a.state()
	var names []string
	res := &resolved{}
	if secret != "" {
		t, err := st.ACLTokenBySecret(nil, secret)
		if err != nil {
			return nil, err
		}
		if t == nil {
			n, err := st.NodeBySecretID(nil, secret)
			if err != nil {
				return nil, err
			}
			if n != nil {
				return &resolved{nodeID: n.ID}, nil
			}
			if w, ok, err := a.workloadIdentity(secret); ok || err != nil {
				return &resolved{workload: w}, err
			}
			return nil, api.Errorf(api.ErrPermissionDenied, "ACL token not found")
		}
		if expired(t, a.clock.Now()) {
			return nil, api.Errorf(api.ErrPermissionDenied, "ACL token expired")
		}
		res.token = t
		if t.Type == api.ACLTokenManagement {
			res.management = true
			return res, nil
		}
		names = append(names, t.Policies...)
		for _, l := range t.Roles {
			r, err := st.ACLRoleByID(nil, l.ID)
			if err != nil {
				return nil, err
			}
			if r != nil {
				for _, p := range r.Policies {
					names = append(names, p.Name)
				}
			}
		}
	} else {
		names = []string{AnonymousPolicy}
	}
	for _, n := range names {
		p, err := st.ACLPolicyByName(nil, n)
		if err != nil {
			return nil, err
		}
		if p != nil { // a deleted policy grants nothing
			res.policies = append(res.policies, p)
		}
	}
	return res, nil
}

// ResolveToken returns the ACL of a secret: a token's (expired ones are
// refused), a node secret's (acl.Node, bound to that node), or the
// anonymous policy's for "".
// It also returns the token (nil for anonymous and node secrets).
func (a *ACL) ResolveToken(secret string) (*acl.ACL, *api.ACLToken, error) {
	res, err := a.resolve(secret)
	switch {
	case err != nil:
		return nil, nil, err
	case res.nodeID != "":
		return acl.Node(res.nodeID), nil, nil
	case res.workload != nil:
		return acl.ForWorkload(*res.workload), nil, nil
	case res.management:
		return acl.Management(), res.token, nil
	}
	ps := make([]*acl.Policy, 0, len(res.policies))
	for _, p := range res.policies {
		parsed, err := a.policies.policy(p)
		if err != nil {
			return nil, nil, err
		}
		ps = append(ps, parsed)
	}
	return acl.New(ps...), res.token, nil
}

// ResolveRules is ResolveToken for a client-only agent that enforces ACLs
// on its own routes (GET /v1/acl/resolve): the caller's own token's
// rules, which the agent compiles and caches.
func (a *ACL) ResolveRules(secret string) (*api.ACLResolution, error) {
	res, err := a.resolve(secret)
	if err != nil {
		return nil, err
	}
	out := &api.ACLResolution{Management: res.management, NodeID: res.nodeID}
	if w := res.workload; w != nil {
		out.Workload = &api.ACLWorkload{Namespace: w.Namespace, JobID: w.JobID, Group: w.Group, Task: w.Task}
	}
	for _, p := range res.policies {
		out.Rules = append(out.Rules, p.Rules)
	}
	if t := res.token; t != nil {
		out.AccessorID, out.ExpirationTime = t.AccessorID, t.ExpirationTime
	}
	return out, nil
}

// expired reports whether a token's expiry passed at now.
func expired(t *api.ACLToken, now time.Time) bool {
	return t.ExpirationTime != nil && !now.Before(*t.ExpirationTime)
}
