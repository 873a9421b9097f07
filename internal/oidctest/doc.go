// Package oidctest is an OpenID Connect provider for SSO tests, served in
// the test process on httptest: Start gives a Provider with one
// confidential client (ClientID/ClientSecret, the redirect URIs the test
// names) and users who sign in on its login form. It answers what drover's
// server asks of a provider through coreos/go-oidc and x/oauth2:
// discovery, the JWKS, the authorization endpoint (code flow; PKCE with
// S256 is required), the login form (username, password, one submit
// button, as a browser test fills it), the token endpoint (client secret
// by Basic auth or form, code once, redirect URI and code_verifier
// checked; an RS256 ID token with iss, aud, exp, nonce and at_hash, the
// key's kid in the JWKS) and userinfo (the email and profile claims of
// the granted scopes). Provider.Login plays the user's browser.
//
// Imports: the standard library only. Only _test.go files import it
// (layout_test.go).
//
// Concurrency: a Provider is safe for concurrent use; its handlers run on
// httptest's goroutines, and the test's cleanup closes the server.
package oidctest
