package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// SSOState is the auth method and binding rule read side of Store.
type SSOState interface {
	ACLAuthMethods(ws memdb.WatchSet) ([]*api.ACLAuthMethod, error)
	ACLAuthMethodByName(ws memdb.WatchSet, name string) (*api.ACLAuthMethod, error)
	ACLBindingRules(ws memdb.WatchSet, method string) ([]*api.ACLBindingRule, error)
	ACLBindingRuleByID(ws memdb.WatchSet, id string) (*api.ACLBindingRule, error)
}

// SSOBackend is the SSO side of the server role (server/sso.go).
type SSOBackend interface {
	UpsertACLAuthMethod(ctx context.Context, m *api.ACLAuthMethod, update bool) (*api.ACLAuthMethod, error)
	DeleteACLAuthMethod(ctx context.Context, name string) (uint64, error)
	UpsertACLBindingRule(ctx context.Context, r *api.ACLBindingRule) (*api.ACLBindingRule, error)
	DeleteACLBindingRule(ctx context.Context, id string) (uint64, error)
	// OIDCAuthURL's clientAddr is the caller's IP (peerOf), which
	// the server caps logins in progress by.
	OIDCAuthURL(ctx context.Context, req *api.ACLOIDCAuthURLRequest, clientAddr string) (*api.ACLOIDCAuthURLResponse, error)
	OIDCCompleteAuth(ctx context.Context, req *api.ACLOIDCCompleteAuthRequest) (*api.ACLToken, error)
}

const tableACLAuthMethods, tableACLBindingRules = "acl_auth_methods", "acl_binding_rules"

// ssoHandlers serve Nomad's auth method, binding rule and OIDC login
// routes.
type ssoHandlers struct {
	s   *HTTPServer
	b   SSOBackend
	acl *aclHandlers
}

// ready fails unless ACLs are served and on (aclHandlers.ready), and SSO
// is wired.
func (h *ssoHandlers) ready() error {
	if err := h.acl.ready(); err != nil {
		return err
	}
	if h.b == nil {
		return api.Errorf(api.ErrUnavailable, "SSO is not available on this agent")
	}
	return nil
}

// methodList is public, as in Nomad: a login page lists the methods
// before anyone holds a token. Stubs carry no provider settings.
func (h *ssoHandlers) methodList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		ms, err := st.ACLAuthMethods(ws)
		out := []*api.ACLAuthMethodListStub{}
		for _, m := range ms {
			out = append(out, &api.ACLAuthMethodListStub{Name: m.Name, Type: m.Type, DisplayName: m.DisplayName,
				Default: m.Default, CreateIndex: m.CreateIndex, ModifyIndex: m.ModifyIndex})
		}
		return out, maxIndex(st, tableACLAuthMethods), err
	})
}

func (h *ssoHandlers) methodGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		m, err := st.ACLAuthMethodByName(ws, name)
		if err == nil && m == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL auth method %q not found", name))
		}
		return m, maxIndex(st, tableACLAuthMethods), err
	})
}

func (h *ssoHandlers) methodUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	return h.b.UpsertACLAuthMethod(r.Context(), &m, name != "")
}

func (h *ssoHandlers) methodDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteACLAuthMethod(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

func (h *ssoHandlers) ruleList(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	method := r.URL.Query().Get("auth_method")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		rs, err := st.ACLBindingRules(ws, method)
		if rs == nil {
			rs = []*api.ACLBindingRule{}
		}
		return rs, maxIndex(st, tableACLBindingRules), err
	})
}

func (h *ssoHandlers) ruleGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	id := r.PathValue("id")
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		b, err := st.ACLBindingRuleByID(ws, id)
		if err == nil && b == nil {
			err = api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL binding rule %q not found", id))
		}
		return b, maxIndex(st, tableACLBindingRules), err
	})
}

func (h *ssoHandlers) ruleUpsert(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var b api.ACLBindingRule
	if err := decodeBody(r, &b); err != nil {
		return nil, err
	}
	if id := r.PathValue("id"); id != "" {
		b.ID = id
	}
	return h.b.UpsertACLBindingRule(r.Context(), &b)
}

func (h *ssoHandlers) ruleDelete(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	idx, err := h.b.DeleteACLBindingRule(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	h.s.setMeta(w, idx)
	return nil, nil
}

// oidcAuthURL and oidcCompleteAuth are public: they are how a caller
// without a token gets one.
//
// The server caps logins in progress by the caller's IP address: the
// connection's, or, on a request a follower forwarded to the leader, the
// follower's caller as it says in headerPeer (peerOf). That header is
// believed only on a connection from another server (its certificate
// under TLS, else a Raft peer's or configured server's address);
// X-Forwarded-For, which anyone can send, is never read. Should a caller
// still pass as a server, the table's global bound holds: the client
// holding the most loses its oldest login first (server/sso_pending.go).
func (h *ssoHandlers) oidcAuthURL(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.ACLOIDCAuthURLRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	return h.b.OIDCAuthURL(r.Context(), &req, h.s.peerOf(r).ip)
}

func (h *ssoHandlers) oidcCompleteAuth(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	var req api.ACLOIDCCompleteAuthRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	return h.b.OIDCCompleteAuth(r.Context(), &req)
}
