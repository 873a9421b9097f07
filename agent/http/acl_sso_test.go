package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/oidctest"
	"github.com/drover/drover/server"
)

// TestOIDCLoginsCappedPerClient: auth-url is public, so one address
// flooding it holds at most its cap of logins in progress (then 429) and a
// login from another address still goes end to end against a real OIDC
// provider. Headers that name another caller (X-Forwarded-For, a
// forwarding server's X-Drover-Peer) do not move a caller that is not a
// server to another address.
func TestOIDCLoginsCappedPerClient(t *testing.T) {
	type callback struct{ code, state string }
	got := make(chan callback, 1)
	cb := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case got <- callback{r.URL.Query().Get("code"), r.URL.Query().Get("state")}:
		default:
		}
		fmt.Fprint(w, "Signed in")
	}))
	t.Cleanup(cb.Close)
	_, port, err := net.SplitHostPort(cb.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	redirect := "http://localhost:" + port + "/oidc/callback"
	op := oidctest.Start(t, []oidctest.User{
		{ID: "u1", Username: "alice", Password: "alice-pw", Email: "alice@example.com"},
	}, redirect)

	a := newTestAPIWith(t, server.Config{ACLEnabled: true})
	ctx := t.Context()
	if _, err := a.srv.ACL().UpsertACLPolicy(ctx, &api.ACLPolicy{Name: "dev", Rules: `namespace "default" { policy = "read" }`}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.srv.SSO().UpsertACLAuthMethod(ctx, &api.ACLAuthMethod{Name: "sso", Type: api.ACLAuthMethodTypeOIDC, MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: op.Issuer, OIDCClientID: op.ClientID, OIDCClientSecret: op.ClientSecret,
			OIDCScopes: []string{"email"}, BoundAudiences: []string{op.ClientID}, AllowedRedirectURIs: []string{redirect},
			ClaimMappings: map[string]string{"email": "email"}}}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := a.srv.SSO().UpsertACLBindingRule(ctx, &api.ACLBindingRule{AuthMethod: "sso", BindType: api.ACLBindTypePolicy,
		BindName: "dev", Selector: `value.email == "alice@example.com"`}); err != nil {
		t.Fatal(err)
	}

	// post serves one request from remote (ip:port) through the agent's
	// handler, as a connection from that address would arrive.
	post := func(remote, path string, body any, hdr map[string]string) *httptest.ResponseRecorder {
		t.Helper()
		b, _ := json.Marshal(body)
		req := httptest.NewRequest("POST", path, bytes.NewReader(b))
		req.RemoteAddr = remote
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		a.ts.Config.Handler.ServeHTTP(w, req)
		return w
	}
	nonce := "0123456789abcdef0123"
	start := &api.ACLOIDCAuthURLRequest{AuthMethodName: "sso", RedirectURI: redirect, ClientNonce: nonce}
	wantStatus := func(w *httptest.ResponseRecorder, status int, code, what string) {
		t.Helper()
		var eb api.ErrorBody
		if w.Code != status || (code != "" && (json.Unmarshal(w.Body.Bytes(), &eb) != nil || eb.Error == nil || eb.Error.Code != code)) {
			t.Fatalf("%s = %d %s, want %d %s", what, w.Code, w.Body, status, code)
		}
	}

	const flood, perIP = 5000, 16
	started := 0
	for i := range flood {
		w := post(fmt.Sprintf("203.0.113.7:%d", 10000+i%50000), "/v1/acl/oidc/auth-url", start, nil)
		switch w.Code {
		case 200:
			started++
		default:
			wantStatus(w, 429, "too_many_requests", "a flooding auth-url")
		}
	}
	if started != perIP {
		t.Fatalf("one address started %d of %d logins, want its cap %d", started, flood, perIP)
	}
	// Headers naming another caller count only from another server.
	spoof := map[string]string{"X-Forwarded-For": "192.0.2.10", "X-Drover-Leader-Forwarded": "1", "X-Drover-Peer": "ip=192.0.2.10"}
	wantStatus(post("203.0.113.7:1", "/v1/acl/oidc/auth-url", start, spoof), 429, "too_many_requests",
		"the flooder's auth-url naming another caller")

	// A login from another address, end to end.
	const alice = "198.51.100.9:52000"
	w := post(alice, "/v1/acl/oidc/auth-url", start, nil)
	wantStatus(w, 200, "", "auth-url from another address")
	var au api.ACLOIDCAuthURLResponse
	if err := json.Unmarshal(w.Body.Bytes(), &au); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(au.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := op.Login(t, au.AuthURL, "alice", "alice-pw"); status != 200 || body != "Signed in" {
		t.Fatalf("provider login ended at %d %q, want the callback", status, body)
	}
	var c callback
	select {
	case c = <-got:
	default:
		t.Fatal("the provider never redirected to the callback")
	}
	if c.state != u.Query().Get("state") || c.code == "" {
		t.Fatalf("callback %+v, want a code and the auth URL's state", c)
	}
	w = post(alice, "/v1/acl/oidc/complete-auth", &api.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso", ClientNonce: nonce,
		State: c.state, Code: c.code, RedirectURI: redirect}, nil)
	wantStatus(w, 200, "", "complete-auth")
	var tok api.ACLToken
	if err := json.Unmarshal(w.Body.Bytes(), &tok); err != nil || tok.SecretID == "" || tok.AuthMethod != "sso" ||
		len(tok.Policies) != 1 || tok.Policies[0] != "dev" {
		t.Fatalf("complete-auth token %s: %v", w.Body, err)
	}
}
