package oidctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	loginTTL = 10 * time.Minute // an authorization request, then its code
	tokenTTL = time.Hour        // the ID token and the access token
)

// Provider is an OpenID Connect provider on a loopback port, ended by the
// test's cleanup.
type Provider struct {
	Issuer       string // also the discovery URL; ends in "/"
	ClientID     string
	ClientSecret string

	key          *rsa.PrivateKey
	kid          string
	users        map[string]User // by Username
	redirectURIs []string

	mu       sync.Mutex
	requests map[string]*authRequest // by ID, until the user signs in
	codes    map[string]*grant       // by code, until exchanged
	tokens   map[string]*grant       // by access token
}

// User is one user of the provider's login form; Email is the email claim
// its userinfo endpoint answers (scope email), Username its
// preferred_username (scope profile) and ID the subject.
type User struct {
	ID, Username, Password, Email string
}

// authRequest is an authorization request waiting for the user to sign in.
type authRequest struct {
	redirectURI, state, nonce, challenge string
	scopes                               []string
	expires                              time.Time
}

// grant is a signed-in request: a code until exchanged, then an access
// token until it expires.
type grant struct {
	authRequest
	user     User
	authTime time.Time
}

// Start starts a provider whose client accepts redirectURIs, with users.
// It answers as soon as it returns.
func Start(t testing.TB, users []User, redirectURIs ...string) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: "web", ClientSecret: randomID(), key: key, kid: randomID()[:16],
		users: map[string]User{}, redirectURIs: slices.Clone(redirectURIs),
		requests: map[string]*authRequest{}, codes: map[string]*grant{}, tokens: map[string]*grant{}}
	for _, u := range users {
		p.users[u.Username] = u
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("GET /auth", p.authorize)
	mux.HandleFunc("GET /login/username", p.loginForm)
	mux.HandleFunc("POST /login/username", p.checkLogin)
	mux.HandleFunc("POST /oauth/token", p.token)
	mux.HandleFunc("GET /userinfo", p.userinfo)
	mux.HandleFunc("POST /userinfo", p.userinfo)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.Issuer = srv.URL + "/"
	return p
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "auth",
		"token_endpoint":                        p.Issuer + "oauth/token",
		"userinfo_endpoint":                     p.Issuer + "userinfo",
		"jwks_uri":                              p.Issuer + "keys",
		"scopes_supported":                      []string{"openid", "email", "profile"},
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"code_challenge_methods_supported":      []string{"S256"},
		"claims_supported": []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "azp",
			"email", "email_verified", "preferred_username", "name", "given_name", "family_name", "locale"},
	})
}

func (p *Provider) keys(w http.ResponseWriter, r *http.Request) {
	enc := base64.RawURLEncoding
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": p.kid,
		"n": enc.EncodeToString(p.key.N.Bytes()), "e": enc.EncodeToString(big.NewInt(int64(p.key.E)).Bytes()),
	}}})
}

// tokenError answers an OAuth 2.0 error (RFC 6749 section 5.2).
func tokenError(w http.ResponseWriter, status int, code, desc string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="oidctest"`)
	}
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// token is the token endpoint: the authorization code grant of the
// confidential client.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic { // x/oauth2 form-encodes both before Basic auth (RFC 6749 section 2.3.1)
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.ClientSecret)) != 1 {
		tokenError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "authorization_code" {
		tokenError(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %q: want authorization_code", gt))
		return
	}
	now := time.Now()
	p.mu.Lock()
	code := r.PostForm.Get("code")
	g := p.codes[code]
	delete(p.codes, code) // a code is good for one try
	p.mu.Unlock()
	switch {
	case g == nil || now.After(g.expires):
		tokenError(w, http.StatusBadRequest, "invalid_grant", "unknown, used or expired code")
		return
	case r.PostForm.Get("redirect_uri") != g.redirectURI:
		tokenError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	case !pkceMatches(r.PostForm.Get("code_verifier"), g.challenge):
		tokenError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	}
	access := randomID()
	claims := map[string]any{"iss": p.Issuer, "sub": g.user.ID, "aud": p.ClientID, "azp": p.ClientID,
		"iat": now.Unix(), "exp": now.Add(tokenTTL).Unix(), "auth_time": g.authTime.Unix(), "at_hash": atHash(access)}
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	idToken, err := p.sign(claims)
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	held := *g
	held.expires = now.Add(tokenTTL)
	p.mu.Lock()
	p.tokens[access] = &held
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(tokenTTL.Seconds()), "id_token": idToken, "scope": strings.Join(g.scopes, " ")})
}

// pkceMatches checks a code_verifier against an S256 code_challenge
// (RFC 7636 section 4.6).
func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge)) == 1
}

// atHash is the ID token's at_hash of an access token under RS256: the
// left half of its SHA-256 (OpenID Connect Core section 3.1.3.6).
func atHash(access string) string {
	sum := sha256.Sum256([]byte(access))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// sign makes a JWS in compact form: RS256 under the key the JWKS lists.
func (p *Provider) sign(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": p.kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(nil, p.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign the ID token: %w", err)
	}
	return input + "." + enc.EncodeToString(sig), nil
}

// userinfo answers the claims of the access token's scopes.
func (p *Provider) userinfo(w http.ResponseWriter, r *http.Request) {
	access, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	g := p.tokens[access]
	p.mu.Unlock()
	if access == "" || g == nil || time.Now().After(g.expires) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "invalid or expired access token", http.StatusUnauthorized)
		return
	}
	u := g.user
	claims := map[string]any{"sub": u.ID}
	if slices.Contains(g.scopes, "email") {
		claims["email"], claims["email_verified"] = u.Email, true
	}
	if slices.Contains(g.scopes, "profile") {
		claims["preferred_username"], claims["given_name"], claims["family_name"] = u.Username, u.Username, "Test"
		claims["name"], claims["locale"] = u.Username+" Test", "en"
	}
	writeJSON(w, http.StatusOK, claims)
}
