package oidctest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// setup starts a provider with alice and a redirect URI that records the
// code and state it is sent, and discovers the provider as drover's
// server does (go-oidc checks that the discovered issuer is the URL's).
func setup(t *testing.T) (*Provider, *oidc.Provider, *oauth2.Config, <-chan url.Values) {
	t.Helper()
	got := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query()
		w.Write([]byte("Signed in"))
	}))
	t.Cleanup(cb.Close)
	redirect := cb.URL + "/oidc/callback"
	p := Start(t, []User{{ID: "u1", Username: "alice", Password: "alice-pw", Email: "alice@example.com"}}, redirect)
	prov, err := oidc.NewProvider(t.Context(), p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	return p, prov, &oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, Endpoint: prov.Endpoint(),
		RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID, "email", "profile"}}, got
}

// login signs alice in with PKCE and a nonce and returns the redirect
// URI's query.
func login(t *testing.T, p *Provider, cfg *oauth2.Config, got <-chan url.Values, verifier string) url.Values {
	t.Helper()
	authURL := cfg.AuthCodeURL("state-1", oidc.Nonce("nonce-1"), oauth2.S256ChallengeOption(verifier))
	if status, body := p.Login(t, authURL, "alice", "alice-pw"); status != 200 || body != "Signed in" {
		t.Fatalf("login ended at %d %q, want the redirect URI's page", status, body)
	}
	select {
	case q := <-got:
		return q
	default:
		t.Fatal("the provider never redirected to the redirect URI")
		return nil
	}
}

// TestProviderSignsIn goes through the code flow as drover's server does
// (x/oauth2 for the exchange, go-oidc for discovery, the ID token and
// userinfo): the redirect carries the state and a code; the code, with
// the PKCE verifier and the client secret, gives an ID token that
// verifies (signature by the JWKS's key, issuer, audience, expiry) and
// carries the nonce and the access token's at_hash; userinfo answers the
// claims of the scopes; a code is good once.
func TestProviderSignsIn(t *testing.T) {
	p, prov, cfg, got := setup(t)
	verifier := oauth2.GenerateVerifier()
	q := login(t, p, cfg, got, verifier)
	if q.Get("state") != "state-1" || q.Get("code") == "" {
		t.Fatalf("redirect query %v, want the state and a code", q)
	}
	ctx := t.Context()
	tok, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := prov.Verifier(&oidc.Config{ClientID: p.ClientID}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	if idt.Issuer != p.Issuer || idt.Subject != "u1" || idt.Nonce != "nonce-1" {
		t.Errorf("ID token iss %q sub %q nonce %q, want %q u1 nonce-1", idt.Issuer, idt.Subject, idt.Nonce, p.Issuer)
	}
	if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Errorf("at_hash: %v", err)
	}
	ui, err := prov.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	var claims struct {
		Email             string `json:"email"`
		PreferredUsername string `json:"preferred_username"`
	}
	if ui.Subject != "u1" || ui.Claims(&claims) != nil || claims.Email != "alice@example.com" || claims.PreferredUsername != "alice" {
		t.Errorf("userinfo sub %q claims %+v, want u1 alice@example.com alice", ui.Subject, claims)
	}
	if _, err := cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier)); oauthError(err) != "invalid_grant" {
		t.Errorf("the code a second time: %v, want invalid_grant", err)
	}
}

func oauthError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// TestProviderRefuses: what a real provider refuses, the test provider
// refuses too, so a client that skips a step fails against it.
func TestProviderRefuses(t *testing.T) {
	t.Run("exchange", func(t *testing.T) {
		for name, tc := range map[string]struct {
			mutate func(cfg *oauth2.Config, verifier *string)
			want   string
		}{
			"wrong code_verifier":   {func(_ *oauth2.Config, v *string) { *v = oauth2.GenerateVerifier() }, "invalid_grant"},
			"no code_verifier":      {func(_ *oauth2.Config, v *string) { *v = "" }, "invalid_grant"},
			"wrong client secret":   {func(c *oauth2.Config, _ *string) { c.ClientSecret = "not-the-secret" }, "invalid_client"},
			"another redirect_uri":  {func(c *oauth2.Config, _ *string) { c.RedirectURL += "/other" }, "invalid_grant"},
			"the right exchange ok": {func(*oauth2.Config, *string) {}, ""},
		} {
			t.Run(name, func(t *testing.T) {
				p, _, cfg, got := setup(t)
				verifier := oauth2.GenerateVerifier()
				code := login(t, p, cfg, got, verifier).Get("code")
				tc.mutate(cfg, &verifier)
				var opts []oauth2.AuthCodeOption
				if verifier != "" {
					opts = append(opts, oauth2.VerifierOption(verifier))
				}
				_, err := cfg.Exchange(t.Context(), code, opts...)
				if (tc.want == "" && err != nil) || oauthError(err) != tc.want {
					t.Fatalf("exchange: %v, want %q", err, tc.want)
				}
			})
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		p, _, cfg, got := setup(t)
		authURL := cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))
		status, body := p.Login(t, authURL, "alice", "bob-pw")
		if status != 200 || !strings.Contains(body, "invalid username or password") || !strings.Contains(body, `name="username"`) {
			t.Fatalf("wrong password: %d %q, want the form again", status, body)
		}
		select {
		case q := <-got:
			t.Fatalf("the provider redirected after a wrong password: %v", q)
		default:
		}
	})

	t.Run("authorization request", func(t *testing.T) {
		_, _, cfg, got := setup(t)
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		open := func(authURL string) *http.Response {
			t.Helper()
			res, err := noRedirect.Get(authURL)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		other := *cfg
		other.RedirectURL = "http://127.0.0.1:1/elsewhere"
		if res := open(other.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))); res.StatusCode != http.StatusBadRequest {
			t.Errorf("an unregistered redirect URI: %d %s, want 400 and no redirect", res.StatusCode, res.Header.Get("Location"))
		}
		other = *cfg
		other.ClientID = "stranger"
		if res := open(other.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))); res.StatusCode != http.StatusBadRequest {
			t.Errorf("an unknown client: %d, want 400", res.StatusCode)
		}
		for name, authURL := range map[string]string{
			"no PKCE":       cfg.AuthCodeURL("s"),
			"plain PKCE":    cfg.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", oauth2.GenerateVerifier())),
			"no openid":     (&oauth2.Config{ClientID: cfg.ClientID, Endpoint: cfg.Endpoint, RedirectURL: cfg.RedirectURL, Scopes: []string{"email"}}).AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())),
			"response_type": strings.Replace(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "response_type=code", "response_type=token", 1),
		} {
			res := open(authURL)
			loc, err := url.Parse(res.Header.Get("Location"))
			if res.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), cfg.RedirectURL) ||
				loc.Query().Get("error") == "" || loc.Query().Get("state") != "s" || loc.Query().Get("code") != "" {
				t.Errorf("%s: %d to %s, want a redirect with an error and the state", name, res.StatusCode, loc)
			}
		}
		select {
		case q := <-got:
			t.Fatalf("the redirect URI was called: %v", q)
		default:
		}
	})

	t.Run("userinfo without a token", func(t *testing.T) {
		p, prov, _, _ := setup(t)
		_, err := prov.UserInfo(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "forged", TokenType: "Bearer"}))
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("userinfo with a forged token at %s: %v, want 401", p.Issuer, err)
		}
	})
}
