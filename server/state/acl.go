package state

import (
	"fmt"
	"sort"

	"github.com/drover/drover/api"
	"github.com/hashicorp/go-memdb"
)

// ACL tables: policies by name, tokens by accessor (and secret), roles by
// ID (and name).
const (
	TableACLPolicies = "acl_policies"
	TableACLTokens   = "acl_tokens"
	TableACLRoles    = "acl_roles"
	// TableACLAuthMethods holds auth methods by name, TableACLBindingRules
	// binding rules by ID (and auth method).
	TableACLAuthMethods  = "acl_auth_methods"
	TableACLBindingRules = "acl_binding_rules"
)

func aclTables() map[string]*memdb.TableSchema {
	return map[string]*memdb.TableSchema{
		TableACLPolicies: {Name: TableACLPolicies, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("Name")},
		}},
		TableACLTokens: {Name: TableACLTokens, Indexes: map[string]*memdb.IndexSchema{
			"id":     {Name: "id", Unique: true, Indexer: str("AccessorID")},
			"secret": {Name: "secret", Unique: true, Indexer: str("SecretID")},
		}},
		TableACLRoles: {Name: TableACLRoles, Indexes: map[string]*memdb.IndexSchema{
			"id":   {Name: "id", Unique: true, Indexer: str("ID")},
			"name": {Name: "name", Unique: true, Indexer: str("Name")},
		}},
		TableACLAuthMethods: {Name: TableACLAuthMethods, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: str("Name")},
		}},
		TableACLBindingRules: {Name: TableACLBindingRules, Indexes: map[string]*memdb.IndexSchema{
			"id":          {Name: "id", Unique: true, Indexer: str("ID")},
			"auth_method": {Name: "auth_method", Indexer: str("AuthMethod")},
		}},
	}
}

// ACLPolicies returns the policies, sorted by name.
func (r *reads) ACLPolicies(ws memdb.WatchSet) ([]*api.ACLPolicy, error) {
	out, err := list[api.ACLPolicy](r, ws, nil, TableACLPolicies, "id")
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// ACLPolicyByName returns a policy or nil.
func (r *reads) ACLPolicyByName(ws memdb.WatchSet, name string) (*api.ACLPolicy, error) {
	return first[api.ACLPolicy](r, ws, TableACLPolicies, "id", name)
}

// ACLTokens returns the tokens, oldest first.
func (r *reads) ACLTokens(ws memdb.WatchSet) ([]*api.ACLToken, error) {
	out, err := list[api.ACLToken](r, ws, nil, TableACLTokens, "id")
	sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex < out[j].CreateIndex })
	return out, err
}

// ACLBootstrapped reports whether any token exists, which is what makes
// an ACL bootstrap fail (Txn.ApplyACL); it reads one entry, not the table.
func (r *reads) ACLBootstrapped() (bool, error) {
	tok, err := first[api.ACLToken](r, nil, TableACLTokens, "id")
	return tok != nil, err
}

// ACLTokenByAccessor returns a token or nil.
func (r *reads) ACLTokenByAccessor(ws memdb.WatchSet, id string) (*api.ACLToken, error) {
	return first[api.ACLToken](r, ws, TableACLTokens, "id", id)
}

// ACLTokenBySecret returns a token or nil.
func (r *reads) ACLTokenBySecret(ws memdb.WatchSet, secret string) (*api.ACLToken, error) {
	if secret == "" {
		return nil, nil
	}
	return first[api.ACLToken](r, ws, TableACLTokens, "secret", secret)
}

// ACLRoles returns the roles, sorted by name.
func (r *reads) ACLRoles(ws memdb.WatchSet) ([]*api.ACLRole, error) {
	out, err := list[api.ACLRole](r, ws, nil, TableACLRoles, "id")
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// ACLRoleByID and ACLRoleByName return a role or nil.
func (r *reads) ACLRoleByID(ws memdb.WatchSet, id string) (*api.ACLRole, error) {
	return first[api.ACLRole](r, ws, TableACLRoles, "id", id)
}

func (r *reads) ACLRoleByName(ws memdb.WatchSet, name string) (*api.ACLRole, error) {
	return first[api.ACLRole](r, ws, TableACLRoles, "name", name)
}

// ACLAuthMethods returns the auth methods, sorted by name.
func (r *reads) ACLAuthMethods(ws memdb.WatchSet) ([]*api.ACLAuthMethod, error) {
	out, err := list[api.ACLAuthMethod](r, ws, nil, TableACLAuthMethods, "id")
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// ACLAuthMethodByName returns an auth method or nil.
func (r *reads) ACLAuthMethodByName(ws memdb.WatchSet, name string) (*api.ACLAuthMethod, error) {
	return first[api.ACLAuthMethod](r, ws, TableACLAuthMethods, "id", name)
}

// ACLBindingRules returns the binding rules (of one auth method, or all
// for ""), oldest first.
func (r *reads) ACLBindingRules(ws memdb.WatchSet, method string) ([]*api.ACLBindingRule, error) {
	var out []*api.ACLBindingRule
	var err error
	if method == "" {
		out, err = list[api.ACLBindingRule](r, ws, nil, TableACLBindingRules, "id")
	} else {
		out, err = list[api.ACLBindingRule](r, ws, nil, TableACLBindingRules, "auth_method", method)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreateIndex < out[j].CreateIndex })
	return out, err
}

// ACLBindingRuleByID returns a binding rule or nil.
func (r *reads) ACLBindingRuleByID(ws memdb.WatchSet, id string) (*api.ACLBindingRule, error) {
	return first[api.ACLBindingRule](r, ws, TableACLBindingRules, "id", id)
}

// ACLWrite is one ACL change applied through Raft (all or none).
type ACLWrite struct {
	Policies       []*api.ACLPolicy `json:"Policies,omitempty"`
	DeletePolicies []string         `json:"DeletePolicies,omitempty"`
	Tokens         []*api.ACLToken  `json:"Tokens,omitempty"`
	DeleteTokens   []string         `json:"DeleteTokens,omitempty"` // accessor IDs
	Roles          []*api.ACLRole   `json:"Roles,omitempty"`
	DeleteRoles    []string         `json:"DeleteRoles,omitempty"` // IDs
	// AuthMethods and BindingRules are upserted; deleting an auth method
	// deletes its binding rules too.
	AuthMethods        []*api.ACLAuthMethod  `json:"AuthMethods,omitempty"`
	DeleteAuthMethods  []string              `json:"DeleteAuthMethods,omitempty"` // names
	BindingRules       []*api.ACLBindingRule `json:"BindingRules,omitempty"`
	DeleteBindingRules []string              `json:"DeleteBindingRules,omitempty"` // IDs
	// Bootstrap: the tokens are written only while no token exists
	// (acl bootstrap runs once); else api.ErrBadRequest.
	Bootstrap bool `json:"Bootstrap,omitempty"`
}

// ApplyACL writes an ACLWrite at index.
func (s *StateStore) ApplyACL(index uint64, w *ACLWrite) error {
	return s.Write(index, func(t *Txn) error { return t.ApplyACL(w) })
}

// ApplyACL writes an ACLWrite. Policies named by tokens and roles must
// exist; a policy still named by a role can't be deleted.
func (t *Txn) ApplyACL(w *ACLWrite) error {
	if w.Bootstrap {
		toks, err := txnList[api.ACLToken](t, TableACLTokens, "id")
		if err != nil {
			return err
		}
		if len(toks) > 0 {
			return api.Errorf(api.ErrBadRequest, "ACL bootstrap already done")
		}
	}
	for _, name := range w.DeletePolicies {
		p, err := txnFirst[api.ACLPolicy](t, TableACLPolicies, "id", name)
		if err != nil {
			return err
		}
		if p == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL policy %q not found", name))
		}
		if err := t.delete(TableACLPolicies, p); err != nil {
			return err
		}
	}
	for _, p := range w.Policies {
		c := *p
		old, err := txnFirst[api.ACLPolicy](t, TableACLPolicies, "id", p.Name)
		if err != nil {
			return err
		}
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex = old.CreateIndex
		}
		if err := t.insert(TableACLPolicies, &c); err != nil {
			return err
		}
	}
	policyExists := func(name string) error {
		p, err := txnFirst[api.ACLPolicy](t, TableACLPolicies, "id", name)
		if err == nil && p == nil {
			err = api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL policy %q does not exist", name))
		}
		return err
	}
	for _, id := range w.DeleteRoles {
		r, err := txnFirst[api.ACLRole](t, TableACLRoles, "id", id)
		if err != nil {
			return err
		}
		if r == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL role %q not found", id))
		}
		if err := t.delete(TableACLRoles, r); err != nil {
			return err
		}
	}
	for _, r := range w.Roles {
		for _, p := range r.Policies {
			if err := policyExists(p.Name); err != nil {
				return err
			}
		}
		c := *r
		old, err := txnFirst[api.ACLRole](t, TableACLRoles, "id", r.ID)
		if err != nil {
			return err
		}
		if byName, err := txnFirst[api.ACLRole](t, TableACLRoles, "name", r.Name); err != nil {
			return err
		} else if byName != nil && byName.ID != r.ID {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL role %q already exists", r.Name))
		}
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex = old.CreateIndex
		}
		if err := t.insert(TableACLRoles, &c); err != nil {
			return err
		}
	}
	for _, id := range w.DeleteTokens {
		tok, err := txnFirst[api.ACLToken](t, TableACLTokens, "id", id)
		if err != nil {
			return err
		}
		if tok == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL token %q not found", id))
		}
		if err := t.delete(TableACLTokens, tok); err != nil {
			return err
		}
	}
	for _, tok := range w.Tokens {
		for _, p := range tok.Policies {
			if err := policyExists(p); err != nil {
				return err
			}
		}
		for _, l := range tok.Roles {
			r, err := txnFirst[api.ACLRole](t, TableACLRoles, "id", l.ID)
			if err != nil {
				return err
			}
			if r == nil {
				return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL role %q does not exist", l.ID))
			}
		}
		c := *tok
		old, err := txnFirst[api.ACLToken](t, TableACLTokens, "id", tok.AccessorID)
		if err != nil {
			return err
		}
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex, c.SecretID = old.CreateIndex, old.SecretID // the secret never changes
		}
		if err := t.insert(TableACLTokens, &c); err != nil {
			return err
		}
	}
	if err := t.applyAuthMethods(w); err != nil {
		return err
	}
	// Roles must not name a deleted policy.
	if len(w.DeletePolicies) > 0 {
		roles, err := txnList[api.ACLRole](t, TableACLRoles, "id")
		if err != nil {
			return err
		}
		for _, r := range roles {
			for _, p := range r.Policies {
				for _, d := range w.DeletePolicies {
					if p.Name == d {
						return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL policy %q is used by role %q", d, r.Name))
					}
				}
			}
		}
	}
	return nil
}

// applyAuthMethods writes the auth method and binding rule changes of w:
// a binding rule needs its auth method; at most one method is the default.
func (t *Txn) applyAuthMethods(w *ACLWrite) error {
	for _, name := range w.DeleteAuthMethods {
		m, err := txnFirst[api.ACLAuthMethod](t, TableACLAuthMethods, "id", name)
		if err != nil {
			return err
		}
		if m == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL auth method %q not found", name))
		}
		if err := t.delete(TableACLAuthMethods, m); err != nil {
			return err
		}
		rules, err := txnList[api.ACLBindingRule](t, TableACLBindingRules, "auth_method", name)
		if err != nil {
			return err
		}
		for _, r := range rules {
			if err := t.delete(TableACLBindingRules, r); err != nil {
				return err
			}
		}
	}
	for _, m := range w.AuthMethods {
		c := *m
		old, err := txnFirst[api.ACLAuthMethod](t, TableACLAuthMethods, "id", m.Name)
		if err != nil {
			return err
		}
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
		}
		if c.Default {
			all, err := txnList[api.ACLAuthMethod](t, TableACLAuthMethods, "id")
			if err != nil {
				return err
			}
			for _, o := range all {
				if o.Default && o.Name != c.Name {
					return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL auth method %q is already the default", o.Name))
				}
			}
		}
		if err := t.insert(TableACLAuthMethods, &c); err != nil {
			return err
		}
	}
	for _, id := range w.DeleteBindingRules {
		r, err := txnFirst[api.ACLBindingRule](t, TableACLBindingRules, "id", id)
		if err != nil {
			return err
		}
		if r == nil {
			return api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL binding rule %q not found", id))
		}
		if err := t.delete(TableACLBindingRules, r); err != nil {
			return err
		}
	}
	for _, r := range w.BindingRules {
		m, err := txnFirst[api.ACLAuthMethod](t, TableACLAuthMethods, "id", r.AuthMethod)
		if err != nil {
			return err
		}
		if m == nil {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL auth method %q does not exist", r.AuthMethod))
		}
		c := *r
		old, err := txnFirst[api.ACLBindingRule](t, TableACLBindingRules, "id", r.ID)
		if err != nil {
			return err
		}
		c.CreateIndex, c.ModifyIndex = t.index, t.index
		if old != nil {
			c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
		}
		if err := t.insert(TableACLBindingRules, &c); err != nil {
			return err
		}
	}
	return nil
}

// ACLPolicy, ACLToken, ACLRole, ACLAuthMethod and ACLBindingRule restore
// stored objects.
func (r *Restore) ACLPolicy(p *api.ACLPolicy) error { return r.put(TableACLPolicies, p) }
func (r *Restore) ACLToken(t *api.ACLToken) error   { return r.put(TableACLTokens, t) }
func (r *Restore) ACLRole(x *api.ACLRole) error     { return r.put(TableACLRoles, x) }
func (r *Restore) ACLAuthMethod(m *api.ACLAuthMethod) error {
	return r.put(TableACLAuthMethods, m)
}
func (r *Restore) ACLBindingRule(b *api.ACLBindingRule) error {
	return r.put(TableACLBindingRules, b)
}
