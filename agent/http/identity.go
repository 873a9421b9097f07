package http

import (
	"context"
	"fmt"
	nethttp "net/http"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/drover/drover/api"
)

// IdentityBackend is the workload identity side of the server role.
type IdentityBackend interface {
	SignIdentities(ctx context.Context, nodeID, secret string, req *api.TaskIdentityRequest) (*api.TaskIdentityResponse, error)
	JWKS() (*jose.JSONWebKeySet, error)
	RootKeyMetas() ([]*api.RootKeyMeta, error)
	OIDCIssuer() string
}

// identityHandlers serve the keyring's public keys (JWKS and OIDC
// discovery, as Nomad serves them), the key list, and the client's
// signing request.
type identityHandlers struct {
	s *HTTPServer
	b IdentityBackend
}

func (h *identityHandlers) ready() error {
	return h.s.need(h.b != nil, "this server does not sign workload identities")
}

func (h *identityHandlers) jwks(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	w.Header().Set("Cache-Control", "max-age=60")
	return h.b.JWKS()
}

func (h *identityHandlers) oidcDiscovery(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	iss := h.b.OIDCIssuer()
	if iss == "" {
		return nil, api.Errorf(api.ErrNotFound, "no OIDC issuer configured (server oidc_issuer)")
	}
	return map[string]any{
		"issuer": iss, "jwks_uri": iss + "/.well-known/jwks.json", "response_types_supported": []string{"code"},
		"subject_types_supported": []string{"public"}, "id_token_signing_alg_values_supported": []string{"RS256"},
	}, nil
}

func (h *identityHandlers) keys(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
		return nil, err
	}
	return h.b.RootKeyMetas()
}

func (h *identityHandlers) sign(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.ready(); err != nil {
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
	out, err := h.b.SignIdentities(r.Context(), id, r.Header.Get(api.NodeSecretHeader), &req)
	if err != nil {
		return nil, fmt.Errorf("sign identities for node %q: %w", id, err)
	}
	return out, nil
}
