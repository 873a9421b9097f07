package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// ACLState is the optional ACL read side of State.
type ACLState interface {
	ACLPolicies(ws memdb.WatchSet) ([]*api.ACLPolicy, error)
	ACLPolicyByName(ws memdb.WatchSet, name string) (*api.ACLPolicy, error)
	ACLTokens(ws memdb.WatchSet) ([]*api.ACLToken, error)
	ACLTokenByAccessor(ws memdb.WatchSet, id string) (*api.ACLToken, error)
	ACLTokenBySecret(ws memdb.WatchSet, secret string) (*api.ACLToken, error)
	ACLRoles(ws memdb.WatchSet) ([]*api.ACLRole, error)
	ACLRoleByID(ws memdb.WatchSet, id string) (*api.ACLRole, error)
}

// ACLServer is the optional ACL write side of Server.
type ACLServer interface {
	BootstrapACL(ctx context.Context) (*api.ACLToken, error)
	UpsertACLPolicy(ctx context.Context, p *api.ACLPolicy) (uint64, error)
	DeleteACLPolicy(ctx context.Context, name string) (uint64, error)
	UpsertACLToken(ctx context.Context, t *api.ACLToken) (*api.ACLToken, error)
	DeleteACLToken(ctx context.Context, accessor string) (uint64, error)
	UpsertACLRole(ctx context.Context, r *api.ACLRole) (*api.ACLRole, error)
	DeleteACLRole(ctx context.Context, id string) (uint64, error)
}

const tableACLTokens, tableACLPolicies, tableACLRoles = "acl_tokens", "acl_policies", "acl_roles"

// aclRoutes are Nomad's /v1/acl/* routes.
func (s *HTTPServer) aclRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	for _, m := range []string{"PUT", "POST"} {
		h(m+" /v1/acl/bootstrap", s.aclBootstrap)
		h(m+" /v1/acl/policy/{name}", s.aclPolicyUpsert)
		h(m+" /v1/acl/token", s.aclTokenUpsert)
		h(m+" /v1/acl/token/{id}", s.aclTokenUpsert)
		h(m+" /v1/acl/role", s.aclRoleUpsert)
		h(m+" /v1/acl/role/{id}", s.aclRoleUpsert)
	}
	h("GET /v1/acl/policies", s.aclPolicyList)
	h("GET /v1/acl/policy/{name}", s.aclPolicyGet)
	h("DELETE /v1/acl/policy/{name}", s.aclPolicyDelete)
	h("GET /v1/acl/tokens", s.aclTokenList)
	h("GET /v1/acl/token/self", s.aclTokenSelf)
	h("GET /v1/acl/resolve", s.aclResolve)
	h("GET /v1/acl/token/{id}", s.aclTokenGet)
	h("DELETE /v1/acl/token/{id}", s.aclTokenDelete)
	h("GET /v1/acl/roles", s.aclRoleList)
	h("GET /v1/acl/role/{id}", s.aclRoleGet)
	h("DELETE /v1/acl/role/{id}", s.aclRoleDelete)
}

func (s *HTTPServer) aclSides() (ACLState, ACLServer, error) {
	if err := s.needServer(); err != nil {
		return nil, nil, err
	}
	st, ok1 := s.cfg.State.(ACLState)
	srv, ok2 := s.cfg.Server.(ACLServer)
	if !ok1 || !ok2 {
		return nil, nil, api.Errorf(api.ErrUnavailable, "ACLs are not available on this agent")
	}
	if s.cfg.ACL == nil || !s.cfg.ACL.ACLEnabled() {
		return nil, nil, api.Errorf(api.ErrBadRequest, "ACL support disabled (agent acl { enabled = true })")
	}
	return st, srv, nil
}

func (s *HTTPServer) aclBootstrap(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	return srv.BootstrapACL(r.Context())
}

func (s *HTTPServer) aclPolicyList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		ps, err := st.ACLPolicies(ws)
		out := []*api.ACLPolicyListStub{}
		for _, p := range ps {
			out = append(out, &api.ACLPolicyListStub{Name: p.Name, Description: p.Description, CreateIndex: p.CreateIndex, ModifyIndex: p.ModifyIndex})
		}
		return out, s.maxIndex(tableACLPolicies), err
	})
}

// aclPolicyGet answers management tokens, and a token for the policies it
// holds (directly or through a role).
func (s *HTTPServer) aclPolicyGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if a := aclOf(r); a != nil && !a.IsManagement() {
		tok, err := st.ACLTokenBySecret(nil, tokenOf(r))
		if err != nil {
			return nil, err
		}
		if tok == nil || !s.tokenHolds(st, tok, name) {
			return nil, api.Errorf(api.ErrPermissionDenied, "Permission denied: policy "+name+" is not one of the token's")
		}
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		p, err := st.ACLPolicyByName(ws, name)
		if err == nil && p == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL policy %q not found", name))
		}
		return p, s.maxIndex(tableACLPolicies), err
	})
}

func (s *HTTPServer) tokenHolds(st ACLState, tok *api.ACLToken, policy string) bool {
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

func (s *HTTPServer) aclPolicyUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
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
	idx, err := srv.UpsertACLPolicy(r.Context(), &p)
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

func (s *HTTPServer) aclPolicyDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	idx, err := srv.DeleteACLPolicy(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

// redact drops a token's secret for listings.
func redact(t *api.ACLToken) *api.ACLToken {
	c := *t
	c.SecretID = ""
	return &c
}

func (s *HTTPServer) aclTokenList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		ts, err := st.ACLTokens(ws)
		out := []*api.ACLToken{}
		for _, t := range ts {
			out = append(out, redact(t))
		}
		return out, s.maxIndex(tableACLTokens), err
	})
}

func (s *HTTPServer) aclTokenSelf(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	t, err := st.ACLTokenBySecret(nil, tokenOf(r))
	if err == nil && t == nil {
		err = api.Errorf(api.ErrNotFound, "no ACL token in the request")
	}
	return t, err
}

// ACLRulesResolver is the optional side of ACLResolver that answers
// client-only agents (server.ResolveRules).
type ACLRulesResolver interface {
	ResolveRules(secret string) (*api.ACLResolution, error)
}

// aclResolve answers what the request's own secret may do, for client-only
// agents that enforce ACLs on their routes (RemoteACL). As a blocking
// query (?index=) it answers when tokens, policies or roles changed past
// index: a client agent's watch, which drops its cached answers then.
func (s *HTTPServer) aclResolve(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	rr, ok := s.cfg.ACL.(ACLRulesResolver)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "ACL resolution is not available on this agent")
	}
	secret := tokenOf(r)
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
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
		return lazyAnswer(func() (any, error) { return rr.ResolveRules(secret) }),
			s.maxIndex(tableACLTokens, tableACLPolicies, tableACLRoles), nil
	})
}

func (s *HTTPServer) aclTokenGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		t, err := st.ACLTokenByAccessor(ws, r.PathValue("id"))
		if err == nil && t == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL token %q not found", r.PathValue("id")))
		}
		return t, s.maxIndex(tableACLTokens), err
	})
}

func (s *HTTPServer) aclTokenUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	var t api.ACLToken
	if err := decodeBody(r, &t); err != nil {
		return nil, err
	}
	if id := r.PathValue("id"); id != "" {
		t.AccessorID = id
	}
	return srv.UpsertACLToken(r.Context(), &t)
}

func (s *HTTPServer) aclTokenDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	idx, err := srv.DeleteACLToken(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

func (s *HTTPServer) aclRoleList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		rs, err := st.ACLRoles(ws)
		if rs == nil {
			rs = []*api.ACLRole{}
		}
		return rs, s.maxIndex(tableACLRoles), err
	})
}

func (s *HTTPServer) aclRoleGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		role, err := st.ACLRoleByID(ws, r.PathValue("id"))
		if err == nil && role == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL role %q not found", r.PathValue("id")))
		}
		return role, s.maxIndex(tableACLRoles), err
	})
}

func (s *HTTPServer) aclRoleUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	var role api.ACLRole
	if err := decodeBody(r, &role); err != nil {
		return nil, err
	}
	if id := r.PathValue("id"); id != "" {
		role.ID = id
	}
	return srv.UpsertACLRole(r.Context(), &role)
}

func (s *HTTPServer) aclRoleDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.aclSides()
	if err != nil {
		return nil, err
	}
	idx, err := srv.DeleteACLRole(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}
