package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// SSOState is the optional auth method and binding rule read side of State.
type SSOState interface {
	ACLAuthMethods(ws memdb.WatchSet) ([]*api.ACLAuthMethod, error)
	ACLAuthMethodByName(ws memdb.WatchSet, name string) (*api.ACLAuthMethod, error)
	ACLBindingRules(ws memdb.WatchSet, method string) ([]*api.ACLBindingRule, error)
	ACLBindingRuleByID(ws memdb.WatchSet, id string) (*api.ACLBindingRule, error)
}

// SSOServer is the optional SSO write side of Server (server/sso.go).
type SSOServer interface {
	UpsertACLAuthMethod(ctx context.Context, m *api.ACLAuthMethod, update bool) (*api.ACLAuthMethod, error)
	DeleteACLAuthMethod(ctx context.Context, name string) (uint64, error)
	UpsertACLBindingRule(ctx context.Context, r *api.ACLBindingRule) (*api.ACLBindingRule, error)
	DeleteACLBindingRule(ctx context.Context, id string) (uint64, error)
	// OIDCAuthURL's clientAddr is the caller's IP (oidcClientAddr), which
	// the server caps logins in progress by.
	OIDCAuthURL(ctx context.Context, req *api.ACLOIDCAuthURLRequest, clientAddr string) (*api.ACLOIDCAuthURLResponse, error)
	OIDCCompleteAuth(ctx context.Context, req *api.ACLOIDCCompleteAuthRequest) (*api.ACLToken, error)
}

const tableACLAuthMethods, tableACLBindingRules = "acl_auth_methods", "acl_binding_rules"

// ssoRoutes are Nomad's auth method, binding rule and OIDC login routes.
func (s *HTTPServer) ssoRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	for _, m := range []string{"PUT", "POST"} {
		h(m+" /v1/acl/auth-method", s.authMethodUpsert)
		h(m+" /v1/acl/auth-method/{name}", s.authMethodUpsert)
		h(m+" /v1/acl/binding-rule", s.bindingRuleUpsert)
		h(m+" /v1/acl/binding-rule/{id}", s.bindingRuleUpsert)
		h(m+" /v1/acl/oidc/auth-url", s.oidcAuthURL)
		h(m+" /v1/acl/oidc/complete-auth", s.oidcCompleteAuth)
	}
	h("GET /v1/acl/auth-methods", s.authMethodList)
	h("GET /v1/acl/auth-method/{name}", s.authMethodGet)
	h("DELETE /v1/acl/auth-method/{name}", s.authMethodDelete)
	h("GET /v1/acl/binding-rules", s.bindingRuleList)
	h("GET /v1/acl/binding-rule/{id}", s.bindingRuleGet)
	h("DELETE /v1/acl/binding-rule/{id}", s.bindingRuleDelete)
}

func (s *HTTPServer) ssoSides() (SSOState, SSOServer, error) {
	if _, _, err := s.aclSides(); err != nil {
		return nil, nil, err
	}
	st, ok1 := s.cfg.State.(SSOState)
	srv, ok2 := s.cfg.Server.(SSOServer)
	if !ok1 || !ok2 {
		return nil, nil, api.Errorf(api.ErrUnavailable, "SSO is not available on this agent")
	}
	return st, srv, nil
}

// authMethodList is public, as in Nomad: a login page lists the methods
// before anyone holds a token. Stubs carry no provider settings.
func (s *HTTPServer) authMethodList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		ms, err := st.ACLAuthMethods(ws)
		out := []*api.ACLAuthMethodListStub{}
		for _, m := range ms {
			out = append(out, &api.ACLAuthMethodListStub{Name: m.Name, Type: m.Type, DisplayName: m.DisplayName,
				Default: m.Default, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex})
		}
		return out, s.maxIndex(tableACLAuthMethods), err
	})
}

func (s *HTTPServer) authMethodGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		m, err := st.ACLAuthMethodByName(ws, name)
		if err == nil && m == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL auth method %q not found", name))
		}
		return m, s.maxIndex(tableACLAuthMethods), err
	})
}

func (s *HTTPServer) authMethodUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	var m api.ACLAuthMethod
	if err := decodeBody(r, &m); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	if name != "" && m.Name == "" {
		m.Name = name
	} else if name != "" && m.Name != name {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("auth method %q in the path, %q in the body", name, m.Name))
	}
	return srv.UpsertACLAuthMethod(r.Context(), &m, name != "")
}

func (s *HTTPServer) authMethodDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	idx, err := srv.DeleteACLAuthMethod(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

func (s *HTTPServer) bindingRuleList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	method := r.URL.Query().Get("auth_method")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		rs, err := st.ACLBindingRules(ws, method)
		if rs == nil {
			rs = []*api.ACLBindingRule{}
		}
		return rs, s.maxIndex(tableACLBindingRules), err
	})
}

func (s *HTTPServer) bindingRuleGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, _, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		b, err := st.ACLBindingRuleByID(ws, id)
		if err == nil && b == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL binding rule %q not found", id))
		}
		return b, s.maxIndex(tableACLBindingRules), err
	})
}

func (s *HTTPServer) bindingRuleUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	var b api.ACLBindingRule
	if err := decodeBody(r, &b); err != nil {
		return nil, err
	}
	if id := r.PathValue("id"); id != "" {
		b.ID = id
	}
	return srv.UpsertACLBindingRule(r.Context(), &b)
}

func (s *HTTPServer) bindingRuleDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	idx, err := srv.DeleteACLBindingRule(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	s.setMeta(w, idx)
	return nil, nil
}

// oidcAuthURL and oidcCompleteAuth are public: they are how a caller
// without a token gets one.
func (s *HTTPServer) oidcAuthURL(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	var req api.ACLOIDCAuthURLRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	return srv.OIDCAuthURL(r.Context(), &req, s.oidcClientAddr(r))
}

// oidcClientAddr is the caller's IP address, which its OIDC logins in
// progress are counted against: the connection's, or, on a request a
// follower forwarded to the leader, the follower's caller as it says in
// headerPeer (peer.go). That header is believed only on a connection
// from another server (its certificate under TLS, else a Raft peer's or
// configured server's address); X-Forwarded-For, which anyone can send,
// is never read. Should a caller still pass as a server, the table's
// global bound holds: the client holding the most loses its oldest login
// first (server/sso_pending.go).
func (s *HTTPServer) oidcClientAddr(r *nethttp.Request) string {
	return s.peerOf(r).ip
}

func (s *HTTPServer) oidcCompleteAuth(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	_, srv, err := s.ssoSides()
	if err != nil {
		return nil, err
	}
	var req api.ACLOIDCCompleteAuthRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	return srv.OIDCCompleteAuth(r.Context(), &req)
}
