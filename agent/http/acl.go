package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// ACLState is the ACL read side of Store.
type ACLState interface {
	ACLPolicies(ws memdb.WatchSet) ([]*api.ACLPolicy, error)
	ACLPolicyByName(ws memdb.WatchSet, name string) (*api.ACLPolicy, error)
	ACLTokens(ws memdb.WatchSet) ([]*api.ACLToken, error)
	ACLTokenByAccessor(ws memdb.WatchSet, id string) (*api.ACLToken, error)
	ACLTokenBySecret(ws memdb.WatchSet, secret string) (*api.ACLToken, error)
	ACLRoles(ws memdb.WatchSet) ([]*api.ACLRole, error)
	ACLRoleByID(ws memdb.WatchSet, id string) (*api.ACLRole, error)
}

// ACLBackend is the ACL side of the server role: its writes, and what a
// secret may do for client-only agents (ResolveRules).
type ACLBackend interface {
	BootstrapACL(ctx context.Context) (*api.ACLToken, error)
	UpsertACLPolicy(ctx context.Context, p *api.ACLPolicy) (uint64, error)
	DeleteACLPolicy(ctx context.Context, name string) (uint64, error)
	UpsertACLToken(ctx context.Context, t *api.ACLToken) (*api.ACLToken, error)
	DeleteACLToken(ctx context.Context, accessor string) (uint64, error)
	UpsertACLRole(ctx context.Context, r *api.ACLRole) (*api.ACLRole, error)
	DeleteACLRole(ctx context.Context, id string) (uint64, error)
	ResolveRules(secret string) (*api.ACLResolution, error)
}

const tableACLTokens, tableACLPolicies, tableACLRoles = "acl_tokens", "acl_policies", "acl_roles"

// aclHandlers serve Nomad's /v1/acl/* routes (acl_sso.go: auth methods,
// binding rules and logins).
type aclHandlers struct {
	s *HTTPServer
	b ACLBackend
}

// ready fails unless this agent's server serves ACLs and they are on.
func (h *aclHandlers) ready() error {
	if err := h.s.need(h.b != nil && h.s.role.State != nil, "ACLs are not available on this agent"); err != nil {
		return err
	}
	if h.s.cfg.ACL == nil || !h.s.cfg.ACL.ACLEnabled() {
		return api.Errorf(api.ErrBadRequest, "ACL support disabled (agent acl { enabled = true })")
	}
	return nil
}

func (h *aclHandlers) bootstrap(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.b.BootstrapACL(r.Context())
}

func (h *aclHandlers) policyList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		ps, err := st.ACLPolicies(ws)
		out := []*api.ACLPolicyListStub{}
		for _, p := range ps {
			out = append(out, &api.ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
		}
		return out, maxIndex(st, tableACLPolicies), err
	})
}

// policyGet answers management tokens, and a token for the policies it
// holds (directly or through a role).
func (h *aclHandlers) policyGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if a := aclOf(r); a != nil && !a.IsManagement() {
		st := h.s.state(nil)
		tok, err := st.ACLTokenBySecret(nil, tokenOf(r))
		if err != nil {
			return nil, err
		}
		if tok == nil || !tokenHolds(st, tok, name) {
			return nil, api.Errorf(api.ErrPermissionDenied, "Permission denied: policy "+name+" is not one of the token's")
		}
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		p, err := st.ACLPolicyByName(ws, name)
		if err == nil && p == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL policy %q not found", name))
		}
		return p, maxIndex(st, tableACLPolicies), err
	})
}

func tokenHolds(st ACLState, tok *api.ACLToken, policy string) bool {
	if slices.Contains(tok.Policies, policy) {
		return true
	}
	for _, l := range tok.Roles {
		if role, _ := st.ACLRoleByID(nil, l.ID); role != nil {
			for _, p := range role.Policies {
				if p.Name == policy {
					return true
				}
			}
		}
	}
	return false
}

func (h *aclHandlers) policyUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var p api.ACLPolicy
	if err := decodeBody(r, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		p.Name = r.PathValue("name")
	} else if p.Name != r.PathValue("name") {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("policy %q in the path, %q in the body", r.PathValue("name"), p.Name))
	}
	idx, err := h.b.UpsertACLPolicy(r.Context(), &p)
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

func (h *aclHandlers) policyDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteACLPolicy(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

// redact drops a token's secret for listings.
func redact(t *api.ACLToken) *api.ACLToken {
	c := *t
	c.SecretID = ""
	return &c
}

func (h *aclHandlers) tokenList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		ts, err := st.ACLTokens(ws)
		out := []*api.ACLToken{}
		for _, t := range ts {
			out = append(out, redact(t))
		}
		return out, maxIndex(st, tableACLTokens), err
	})
}

func (h *aclHandlers) tokenSelf(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	t, err := h.s.state(nil).ACLTokenBySecret(nil, tokenOf(r))
	if err == nil && t == nil {
		err = api.Errorf(api.ErrNotFound, "no ACL token in the request")
	}
	return t, err
}

// resolve answers what the request's own secret may do, for client-only
// agents that enforce ACLs on their routes (RemoteACL). As a blocking
// query (?index=) it answers when tokens, policies or roles changed past
// index: a client agent's watch, which drops its cached answers then.
func (h *aclHandlers) resolve(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	secret := tokenOf(r)
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		if ws != nil { // watch the three tables: any change may change the answer
			if _, err := st.ACLTokens(ws); err != nil {
				return nil, 0, err
			}
			if _, err := st.ACLPolicies(ws); err != nil {
				return nil, 0, err
			}
			if _, err := st.ACLRoles(ws); err != nil {
				return nil, 0, err
			}
		}
		return lazyAnswer(func() (any, error) { return h.b.ResolveRules(secret) }),
			maxIndex(st, tableACLTokens, tableACLPolicies, tableACLRoles), nil
	})
}

func (h *aclHandlers) tokenGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		t, err := st.ACLTokenByAccessor(ws, r.PathValue("id"))
		if err == nil && t == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL token %q not found", r.PathValue("id")))
		}
		return t, maxIndex(st, tableACLTokens), err
	})
}

func (h *aclHandlers) tokenUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var t api.ACLToken
	if err := decodeBody(r, &t); err != nil {
		return nil, err
	}
	if id := r.PathValue("id"); id != "" {
		t.AccessorID = id
	}
	return h.b.UpsertACLToken(r.Context(), &t)
}

func (h *aclHandlers) tokenDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteACLToken(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

func (h *aclHandlers) roleList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		rs, err := st.ACLRoles(ws)
		if rs == nil {
			rs = []*api.ACLRole{}
		}
		return rs, maxIndex(st, tableACLRoles), err
	})
}

func (h *aclHandlers) roleGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		role, err := st.ACLRoleByID(ws, r.PathValue("id"))
		if err == nil && role == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL role %q not found", r.PathValue("id")))
		}
		return role, maxIndex(st, tableACLRoles), err
	})
}

func (h *aclHandlers) roleUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var role api.ACLRole
	if err := decodeBody(r, &role); err != nil {
		return nil, err
	}
	if id := r.PathValue("id"); id != "" {
		role.ID = id
	}
	return h.b.UpsertACLRole(r.Context(), &role)
}

func (h *aclHandlers) roleDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteACLRole(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}
