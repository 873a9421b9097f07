package oidctest

import (
	"crypto/subtle"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// authorize is the authorization endpoint: it checks the request and
// sends the browser to the login form (/login/username?authRequestID=).
// A client or redirect URI the provider does not know gets a page; any
// other fault goes back to the redirect URI as error and state.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	redirect := q.Get("redirect_uri")
	if !slices.Contains(p.redirectURIs, redirect) {
		http.Error(w, "redirect_uri is not registered for the client", http.StatusBadRequest)
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	fail := func(code, desc string) {
		http.Redirect(w, r, withQuery(redirect, url.Values{"error": {code}, "error_description": {desc}, "state": {q.Get("state")}}), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "want response_type code")
		return
	case !slices.Contains(scopes, "openid"):
		fail("invalid_scope", "the openid scope is required")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with code_challenge_method S256 is required")
		return
	}
	id := randomID()
	p.mu.Lock()
	p.requests[id] = &authRequest{redirectURI: redirect, state: q.Get("state"), nonce: q.Get("nonce"),
		challenge: q.Get("code_challenge"), scopes: scopes, expires: time.Now().Add(loginTTL)}
	p.mu.Unlock()
	http.Redirect(w, r, p.Issuer+"login/username?"+url.Values{"authRequestID": {id}}.Encode(), http.StatusFound)
}

// withQuery adds v to rawURL's query.
func withQuery(rawURL string, v url.Values) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	for k, vs := range v {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

var loginPage = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html>
<head><meta charset="UTF-8"><title>Login</title></head>
<body>
<form method="POST" action="/login/username">
<input type="hidden" name="id" value="{{.ID}}">
<div><label for="username">Username:</label> <input id="username" name="username" autocomplete="username"></div>
<div><label for="password">Password:</label> <input id="password" name="password" type="password" autocomplete="current-password"></div>
<p class="error">{{.Error}}</p>
<button type="submit">Login</button>
</form>
</body>
</html>
`))

// request returns the authorization request id while it waits for a login.
func (p *Provider) request(id string) *authRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	req := p.requests[id]
	if req != nil && time.Now().After(req.expires) {
		delete(p.requests, id)
		return nil
	}
	return req
}

func renderLogin(w http.ResponseWriter, id, errMsg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	loginPage.Execute(w, struct{ ID, Error string }{id, errMsg})
}

func (p *Provider) loginForm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("authRequestID")
	if p.request(id) == nil {
		http.Error(w, "unknown or expired authorization request", http.StatusBadRequest)
		return
	}
	renderLogin(w, id, "")
}

// checkLogin takes the login form: a wrong username or password shows
// the form again; a right one sends the browser to the redirect URI with
// a code and the request's state.
func (p *Provider) checkLogin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.PostForm.Get("id")
	req := p.request(id)
	if req == nil {
		http.Error(w, "unknown or expired authorization request", http.StatusBadRequest)
		return
	}
	u, ok := p.users[r.PostForm.Get("username")]
	if !ok || subtle.ConstantTimeCompare([]byte(u.Password), []byte(r.PostForm.Get("password"))) != 1 {
		renderLogin(w, id, "invalid username or password")
		return
	}
	now := time.Now()
	code := randomID()
	p.mu.Lock()
	delete(p.requests, id)
	g := &grant{authRequest: *req, user: u, authTime: now}
	g.expires = now.Add(loginTTL)
	p.codes[code] = g
	p.mu.Unlock()
	http.Redirect(w, r, withQuery(req.redirectURI, url.Values{"code": {code}, "state": {req.state}}), http.StatusFound)
}

// Login does what a user's browser does with an auth URL: it follows it to
// the provider's login form, signs in as username/password and follows the
// redirects back to the client's redirect URI. It returns the last
// response's status and body (the redirect URI's page, or the form again
// after a wrong password).
func (p *Provider) Login(t testing.TB, authURL, username, password string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatalf("open the auth URL: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	id := res.Request.URL.Query().Get("authRequestID")
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("the auth URL led to %s (%d), not the login form", res.Request.URL, res.StatusCode)
	}
	res, err = c.PostForm(p.Issuer+"login/username", url.Values{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatalf("submit the login form: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(body)
}
