package server

import (
	"container/list"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/hashicorp/go-bexpr"
	"golang.org/x/oauth2"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// SSO: OIDC auth methods and binding rules turn a login at an outside
// identity provider into a drover ACL token, as Nomad's OIDC login does.
// The flow (authorization code with PKCE and a nonce):
//
//  1. The caller (drover login, the UI) posts its redirect URI and a secret
//     client nonce to /v1/acl/oidc/auth-url and sends the browser to the
//     provider URL it gets back.
//  2. The provider authenticates the user and redirects to the redirect
//     URI with a code and the state.
//  3. The caller posts code, state and its client nonce to
//     /v1/acl/oidc/complete-auth: the leader exchanges the code, verifies
//     the ID token (signature, issuer, audience, expiry, nonce), maps the
//     claims, evaluates the method's binding rules, and mints a token with
//     the matched roles and policies that expires after MaxTokenTTL.
//
// Pending logins live on the leader that started them (both calls are
// writes, forwarded to it) for oidcLoginTTL; a state is good for one try.
// Each client address, and the whole table, holds a bounded number
// (sso_pending.go).

const (
	oidcLoginTTL     = 10 * time.Minute
	oidcMinNonce     = 16
	oidcHTTPTimeout  = 10 * time.Second
	oidcDefaultName  = "${auth_method_type}-${auth_method_name}"
	maxAuthMethodTTL = 30 * 24 * time.Hour
)

// SSO is the component of single sign-on: OIDC auth methods and binding
// rules (their writes through Raft) and the logins that turn a provider's
// ID token into an ACL token. Logins in progress live on this server (the
// leader); it is safe for concurrent use.
type SSO struct {
	serverCore
	flows oidcFlows
}

// oidcFlows keeps the discovered providers (by method, until the method
// changes) and the pending logins (by state).
type oidcFlows struct {
	mu        sync.Mutex
	providers map[string]*oidcProvider
	pending   pendingLogins
}

type oidcProvider struct {
	index  uint64 // the method's ModifyIndex
	p      *oidc.Provider
	client *http.Client
}

type oidcPending struct {
	state, client                    string // client: oidcClientKey
	method, redirectURI, clientNonce string
	nonce, verifier                  string
	expires                          time.Time
	seq                              uint64        // order of creation
	elem                             *list.Element // in pendingLogins.byAge
}

var claimName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateAuthMethod checks an auth method before it is stored.
func validateAuthMethod(m *api.ACLAuthMethod) error {
	bad := func(format string, args ...any) error {
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL auth method %q: ", m.Name)+fmt.Sprintf(format, args...))
	}
	if m.Name == "" || strings.ContainsAny(m.Name, "/ \t\n") || len(m.Name) > 128 {
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL auth method name %q: want 1-128 letters, digits, - and _", m.Name))
	}
	switch m.Type {
	case api.ACLAuthMethodTypeOIDC:
	case api.ACLAuthMethodTypeJWT:
		return bad("type JWT is not supported yet; use OIDC")
	default:
		return bad("type %q: want OIDC", m.Type)
	}
	switch m.TokenLocality {
	case "", "local", "global":
	default:
		return bad("TokenLocality %q: want local or global", m.TokenLocality)
	}
	if m.MaxTokenTTL <= 0 || m.MaxTokenTTL > maxAuthMethodTTL {
		return bad("MaxTokenTTL must be between 1ns and %s", maxAuthMethodTTL)
	}
	c := m.Config
	if c == nil {
		return bad("Config is required")
	}
	if u, err := url.Parse(c.OIDCDiscoveryURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return bad("OIDCDiscoveryURL %q: want an http(s) URL", c.OIDCDiscoveryURL)
	}
	if c.OIDCClientID == "" {
		return bad("OIDCClientID is required")
	}
	if len(c.AllowedRedirectURIs) == 0 {
		return bad("AllowedRedirectURIs is required")
	}
	for _, r := range c.AllowedRedirectURIs {
		if u, err := url.Parse(r); err != nil || u.Scheme == "" || u.Host == "" {
			return bad("AllowedRedirectURIs: %q is not an absolute URL", r)
		}
	}
	if len(c.DiscoveryCaPem) > 0 {
		if _, err := caPool(c.DiscoveryCaPem); err != nil {
			return bad("%v", err)
		}
	}
	seen := map[string]bool{}
	for kind, claims := range map[string]map[string]string{"ClaimMappings": c.ClaimMappings, "ListClaimMappings": c.ListClaimMappings} {
		for claim, name := range claims {
			if claim == "" || !claimName.MatchString(name) {
				return bad("%s: %q -> %q: want a claim and an identifier", kind, claim, name)
			}
			if seen[kind[:1]+name] {
				return bad("%s: %q is mapped twice", kind, name)
			}
			seen[kind[:1]+name] = true
		}
	}
	return nil
}

func caPool(pems []string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	for _, p := range pems {
		if !pool.AppendCertsFromPEM([]byte(p)) {
			return nil, fmt.Errorf("DiscoveryCaPem: no certificate in a PEM block")
		}
	}
	return pool, nil
}

// UpsertACLAuthMethod validates and stores an auth method. update: the
// method must exist (PUT /v1/acl/auth-method/NAME).
func (s *SSO) UpsertACLAuthMethod(ctx context.Context, m *api.ACLAuthMethod, update bool) (*api.ACLAuthMethod, error) {
	c := *m
	if err := validateAuthMethod(&c); err != nil {
		return nil, err
	}
	old, err := s.state().ACLAuthMethodByName(nil, c.Name)
	if err != nil {
		return nil, err
	}
	if update && old == nil {
		return nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL auth method %q not found", c.Name))
	}
	if !update && old != nil {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL auth method %q already exists", c.Name))
	}
	now := s.clock.Now().UTC()
	c.CreateTime, c.ModifyTime = now, now
	idx, err := s.applyACL(ctx, &state.ACLWrite{AuthMethods: []*api.ACLAuthMethod{&c}})
	if err != nil {
		return nil, err
	}
	c.ModifyIndex = idx
	if old != nil {
		c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
	} else {
		c.CreateIndex = idx
	}
	return &c, nil
}

// DeleteACLAuthMethod removes an auth method and its binding rules.
func (s *SSO) DeleteACLAuthMethod(ctx context.Context, name string) (uint64, error) {
	return s.applyACL(ctx, &state.ACLWrite{DeleteAuthMethods: []string{name}})
}

// validateBindingRule checks a binding rule's bind type, name and selector.
func validateBindingRule(r *api.ACLBindingRule) error {
	switch r.BindType {
	case api.ACLBindTypeRole, api.ACLBindTypePolicy:
		if r.BindName == "" {
			return api.Errorf(api.ErrBadRequest, "a binding rule of type "+r.BindType+" needs a BindName")
		}
	case api.ACLBindTypeManagement:
		if r.BindName != "" {
			return api.Errorf(api.ErrBadRequest, "a management binding rule takes no BindName")
		}
	default:
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("binding rule BindType %q: want role, policy or management", r.BindType))
	}
	if r.AuthMethod == "" {
		return api.Errorf(api.ErrBadRequest, "a binding rule needs an AuthMethod")
	}
	if len(r.Selector) > 4096 {
		return api.Errorf(api.ErrBadRequest, "binding rule Selector: longer than 4096 bytes")
	}
	if r.Selector != "" {
		if _, err := bexpr.CreateEvaluator(r.Selector); err != nil {
			return api.Errorf(api.ErrBadRequest, fmt.Sprintf("binding rule Selector: %v", err))
		}
	}
	return nil
}

// UpsertACLBindingRule creates (ID empty) or replaces a binding rule.
func (s *SSO) UpsertACLBindingRule(ctx context.Context, r *api.ACLBindingRule) (*api.ACLBindingRule, error) {
	c := *r
	if err := validateBindingRule(&c); err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	if c.ID == "" {
		c.ID = newID()
	} else if old, err := s.state().ACLBindingRuleByID(nil, c.ID); err != nil {
		return nil, err
	} else if old == nil {
		return nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL binding rule %q not found", c.ID))
	} else {
		c.CreateIndex, c.CreateTime = old.CreateIndex, old.CreateTime
	}
	c.ModifyTime = now
	if c.CreateTime.IsZero() {
		c.CreateTime = now
	}
	idx, err := s.applyACL(ctx, &state.ACLWrite{BindingRules: []*api.ACLBindingRule{&c}})
	if err != nil {
		return nil, err
	}
	c.ModifyIndex = idx
	if c.CreateIndex == 0 {
		c.CreateIndex = idx
	}
	return &c, nil
}

// DeleteACLBindingRule removes a binding rule by ID.
func (s *SSO) DeleteACLBindingRule(ctx context.Context, id string) (uint64, error) {
	return s.applyACL(ctx, &state.ACLWrite{DeleteBindingRules: []string{id}})
}

// oidcMethod returns the named OIDC auth method and its provider,
// discovering it on first use (and again after the method changes).
func (s *SSO) oidcMethod(ctx context.Context, name string) (*api.ACLAuthMethod, *oidcProvider, error) {
	if !s.isLeader() {
		return nil, nil, errNotLeader()
	}
	m, err := s.state().ACLAuthMethodByName(nil, name)
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, nil, api.Errorf(api.ErrNotFound, fmt.Sprintf("ACL auth method %q not found", name))
	}
	if m.Type != api.ACLAuthMethodTypeOIDC || m.Config == nil {
		return nil, nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ACL auth method %q is not an OIDC method", name))
	}
	f := &s.flows
	f.mu.Lock()
	p := f.providers[name]
	f.mu.Unlock()
	if p != nil && p.index == m.ModifyIndex {
		return m, p, nil
	}
	client := &http.Client{Timeout: oidcHTTPTimeout}
	if len(m.Config.DiscoveryCaPem) > 0 {
		pool, err := caPool(m.Config.DiscoveryCaPem)
		if err != nil {
			return nil, nil, api.Errorf(api.ErrBadRequest, err.Error())
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, client), oidcHTTPTimeout)
	defer cancel()
	prov, err := oidc.NewProvider(dctx, m.Config.OIDCDiscoveryURL)
	if err != nil {
		return nil, nil, api.Errorf(api.ErrUnavailable, fmt.Sprintf("OIDC discovery at %s: %v", m.Config.OIDCDiscoveryURL, err))
	}
	p = &oidcProvider{index: m.ModifyIndex, p: prov, client: client}
	f.mu.Lock()
	if f.providers == nil {
		f.providers = map[string]*oidcProvider{}
	}
	f.providers[name] = p
	f.mu.Unlock()
	return m, p, nil
}

func oauthConfig(m *api.ACLAuthMethod, p *oidcProvider, redirect string) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID}
	for _, sc := range m.Config.OIDCScopes {
		if sc != oidc.ScopeOpenID {
			scopes = append(scopes, sc)
		}
	}
	return &oauth2.Config{ClientID: m.Config.OIDCClientID, ClientSecret: m.Config.OIDCClientSecret,
		Endpoint: p.p.Endpoint(), RedirectURL: redirect, Scopes: scopes}
}

// OIDCAuthURL starts an OIDC login: the provider URL the user's browser
// goes to. clientAddr is the caller's IP address, which the logins in
// progress are counted against.
func (s *SSO) OIDCAuthURL(ctx context.Context, req *api.ACLOIDCAuthURLRequest, clientAddr string) (*api.ACLOIDCAuthURLResponse, error) {
	if len(req.ClientNonce) < oidcMinNonce || len(req.ClientNonce) > 256 {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("ClientNonce: want %d to 256 characters", oidcMinNonce))
	}
	m, p, err := s.oidcMethod(ctx, req.AuthMethodName)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(m.Config.AllowedRedirectURIs, req.RedirectURI) {
		return nil, api.Errorf(api.ErrBadRequest, fmt.Sprintf("RedirectURI %q is not one of auth method %q's AllowedRedirectURIs", req.RedirectURI, m.Name))
	}
	now := s.clock.Now()
	pend := &oidcPending{state: newID(), client: oidcClientKey(clientAddr), method: m.Name, redirectURI: req.RedirectURI,
		clientNonce: req.ClientNonce, nonce: newID(), verifier: oauth2.GenerateVerifier(), expires: now.Add(oidcLoginTTL)}
	f := &s.flows
	f.mu.Lock()
	err = f.pending.add(now, pend)
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	u := oauthConfig(m, p, req.RedirectURI).AuthCodeURL(pend.state, oidc.Nonce(pend.nonce), oauth2.S256ChallengeOption(pend.verifier))
	return &api.ACLOIDCAuthURLResponse{AuthURL: u}, nil
}

// OIDCCompleteAuth ends an OIDC login: it exchanges the code, verifies
// the ID token, applies the binding rules and mints a token.
func (s *SSO) OIDCCompleteAuth(ctx context.Context, req *api.ACLOIDCCompleteAuthRequest) (*api.ACLToken, error) {
	f := &s.flows
	f.mu.Lock()
	pend := f.pending.take(req.State) // one try per state
	f.mu.Unlock()
	denied := func(msg string) error { return api.Errorf(api.ErrPermissionDenied, "OIDC login: "+msg) }
	if pend == nil || s.clock.Now().After(pend.expires) {
		return nil, denied("unknown or expired state; start the login again")
	}
	if pend.method != req.AuthMethodName || pend.redirectURI != req.RedirectURI ||
		subtle.ConstantTimeCompare([]byte(pend.clientNonce), []byte(req.ClientNonce)) != 1 {
		return nil, denied("the auth method, redirect URI or client nonce differ from the ones the login started with")
	}
	if req.Code == "" {
		return nil, api.Errorf(api.ErrBadRequest, "OIDC login: no code")
	}
	m, p, err := s.oidcMethod(ctx, req.AuthMethodName)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, p.client), oidcHTTPTimeout)
	defer cancel()
	tok, err := oauthConfig(m, p, req.RedirectURI).Exchange(hctx, req.Code, oauth2.VerifierOption(pend.verifier))
	if err != nil {
		return nil, denied(fmt.Sprintf("code exchange: %v", err))
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, denied("the provider answered no id_token")
	}
	c := m.Config
	vcfg := &oidc.Config{ClientID: c.OIDCClientID, SupportedSigningAlgs: c.SigningAlgs,
		SkipClientIDCheck: len(c.BoundAudiences) > 0, Now: s.clock.Now}
	idt, err := p.p.Verifier(vcfg).Verify(hctx, raw)
	if err != nil {
		return nil, denied(fmt.Sprintf("ID token: %v", err))
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(pend.nonce)) != 1 {
		return nil, denied("ID token nonce does not match")
	}
	if len(c.BoundIssuer) > 0 && !slices.Contains(c.BoundIssuer, idt.Issuer) {
		return nil, denied(fmt.Sprintf("issuer %q is not bound", idt.Issuer))
	}
	if len(c.BoundAudiences) > 0 && !slices.ContainsFunc(idt.Audience, func(a string) bool { return slices.Contains(c.BoundAudiences, a) }) {
		return nil, denied("no audience of the ID token is bound")
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return nil, denied(fmt.Sprintf("ID token claims: %v", err))
	}
	// The userinfo endpoint adds the claims the ID token leaves out.
	if ui, err := p.p.UserInfo(hctx, oauth2.StaticTokenSource(tok)); err == nil && ui.Subject == idt.Subject {
		extra := map[string]any{}
		if ui.Claims(&extra) == nil {
			for k, v := range extra {
				if _, ok := claims[k]; !ok {
					claims[k] = v
				}
			}
		}
	}
	ident := mapClaims(c, claims)
	return s.bindToken(ctx, m, ident)
}

// identity is the mapped claims binding rules see: value.NAME and
// list.NAME.
type identity struct {
	Value map[string]string   `bexpr:"value"`
	List  map[string][]string `bexpr:"list"`
}

// mapClaims applies an auth method's claim mappings. A claim is a
// top-level name or a JSON-pointer-like path ("/groups", "/org/team").
func mapClaims(c *api.ACLAuthMethodConfig, claims map[string]any) *identity {
	id := &identity{Value: map[string]string{}, List: map[string][]string{}}
	for claim, name := range c.ClaimMappings {
		if v, ok := scalar(lookupClaim(claims, claim)); ok {
			id.Value[name] = v
		}
	}
	for claim, name := range c.ListClaimMappings {
		switch v := lookupClaim(claims, claim).(type) {
		case []any:
			for _, e := range v {
				if s, ok := scalar(e); ok {
					id.List[name] = append(id.List[name], s)
				}
			}
		default:
			if s, ok := scalar(v); ok {
				id.List[name] = []string{s}
			}
		}
	}
	return id
}

func lookupClaim(claims map[string]any, path string) any {
	if !strings.HasPrefix(path, "/") {
		return claims[path]
	}
	var cur any = claims
	for _, part := range strings.Split(path[1:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

var interpolation = regexp.MustCompile(`\$\{([a-z_]+(?:\.[A-Za-z0-9_]+)?)\}`)

// interpolate fills ${value.NAME}, ${auth_method_name} and
// ${auth_method_type} in s; ok is false when a name has no value.
func interpolate(s string, m *api.ACLAuthMethod, id *identity) (string, bool) {
	ok := true
	out := interpolation.ReplaceAllStringFunc(s, func(ref string) string {
		key := ref[2 : len(ref)-1]
		switch {
		case key == "auth_method_name":
			return m.Name
		case key == "auth_method_type":
			return m.Type
		case strings.HasPrefix(key, "value."):
			if v, found := id.Value[key[len("value."):]]; found {
				return v
			}
		}
		ok = false
		return ref
	})
	return out, ok
}

// bindToken evaluates an auth method's binding rules against an identity
// and mints the token they grant (api.ErrPermissionDenied when none
// matches). Roles and policies that do not exist are skipped, as Nomad.
func (s *SSO) bindToken(ctx context.Context, m *api.ACLAuthMethod, id *identity) (*api.ACLToken, error) {
	st := s.state()
	rules, err := st.ACLBindingRules(nil, m.Name)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	exp := now.Add(m.MaxTokenTTL)
	tok := &api.ACLToken{AccessorID: newID(), SecretID: newID(), Type: api.ACLTokenClient, CreateTime: now,
		ExpirationTime: &exp, AuthMethod: m.Name, Global: m.TokenLocality == "global"}
	for _, r := range rules {
		if r.Selector != "" {
			ev, err := bexpr.CreateEvaluator(r.Selector)
			if err != nil {
				continue
			}
			if match, err := ev.Evaluate(id); err != nil || !match {
				continue
			}
		}
		name, ok := interpolate(r.BindName, m, id)
		if !ok {
			continue
		}
		switch r.BindType {
		case api.ACLBindTypeManagement:
			tok.Type = api.ACLTokenManagement
		case api.ACLBindTypeRole:
			role, err := st.ACLRoleByName(nil, name)
			if err != nil {
				return nil, err
			}
			if role != nil && !slices.ContainsFunc(tok.Roles, func(l *api.ACLTokenRoleLink) bool { return l.ID == role.ID }) {
				tok.Roles = append(tok.Roles, &api.ACLTokenRoleLink{ID: role.ID, Name: role.Name})
			}
		case api.ACLBindTypePolicy:
			p, err := st.ACLPolicyByName(nil, name)
			if err != nil {
				return nil, err
			}
			if p != nil && !slices.Contains(tok.Policies, name) {
				tok.Policies = append(tok.Policies, name)
			}
		}
	}
	if tok.Type == api.ACLTokenManagement {
		tok.Roles, tok.Policies = nil, nil
	} else if len(tok.Roles) == 0 && len(tok.Policies) == 0 {
		return nil, api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("OIDC login: no binding rule of auth method %q grants this identity anything", m.Name))
	}
	format := m.TokenNameFormat
	if format == "" {
		format = oidcDefaultName
	}
	tok.Name, _ = interpolate(format, m, id)
	idx, err := s.applyACL(ctx, &state.ACLWrite{Tokens: []*api.ACLToken{tok}})
	if err != nil {
		return nil, err
	}
	tok.CreateIndex, tok.ModifyIndex = idx, idx
	return tok, nil
}
