package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/drover/drover/api"
)

// IdentityServer is the optional workload identity side of Server.
type IdentityServer interface {
	SignIdentities(ctx context.Context, nodeID, secret string, req *api.TaskIdentityRequest) (*api.TaskIdentityResponse, error)
	JWKS() (*jose.JSONWebKeySet, error)
	RootKeyMetas() ([]*api.RootKeyMeta, error)
	OIDCIssuer() string
}

// identityRoutes: the keyring's public keys (JWKS and OIDC discovery, as
// Nomad serves them), the key list, and the client's signing request.
func (s *HTTPServer) identityRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /.well-known/jwks.json", s.jwks)
	h("GET /.well-known/openid-configuration", s.oidcDiscovery)
	h("GET /v1/operator/keyring/keys", s.keyringKeys)
	h("PUT /v1/node/{id}/identities", s.nodeIdentities)
	h("POST /v1/node/{id}/identities", s.nodeIdentities)
}

func (s *HTTPServer) identityServer() (IdentityServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	is, ok := s.cfg.Server.(IdentityServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server does not sign workload identities")
	}
	return is, nil
}

func (s *HTTPServer) jwks(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	is, err := s.identityServer()
	if err != nil {
		return nil, err
	}
	w.Header().Set("Cache-Control", "max-age=60")
	return is.JWKS()
}

func (s *HTTPServer) oidcDiscovery(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	is, err := s.identityServer()
	if err != nil {
		return nil, err
	}
	iss := is.OIDCIssuer()
	if iss == "" {
		return nil, api.Errorf(api.ErrNotFound, "no OIDC issuer configured (server oidc_issuer)")
	}
	return map[string]any{
		"issuer": iss, "jwks_uri": iss + "/.well-known/jwks.json", "response_types_supported": []string{"code"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
	}, nil
}

func (s *HTTPServer) keyringKeys(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	is, err := s.identityServer()
	if err != nil {
		return nil, err
	}
	return is.RootKeyMetas()
}

func (s *HTTPServer) nodeIdentities(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	is, err := s.identityServer()
	if err != nil {
		return nil, err
	}
	var req api.TaskIdentityRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.AllocID == "" || req.Task == "" {
		return nil, api.Errorf(api.ErrBadRequest, "AllocID and Task are required")
	}
	id := r.PathValue("id")
	out, err := is.SignIdentities(r.Context(), id, r.Header.Get(api.NodeSecretHeader), &req)
	if err != nil {
		return nil, fmt.Errorf("sign identities for node %q: %w", id, err)
	}
	return out, nil
}
