package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/oidctest"
	"github.com/drover/drover/internal/testproc"
)

// TestCLILoginOIDC signs in end to end against an OIDC provider
// (oidctest's, in the test process): acl auth-method
// create and binding-rule create set SSO up; drover login prints the
// provider URL, the user signs in on the provider's form, the provider
// redirects to login's callback listener, and login prints a token that
// holds the bound role and expires after the method's MaxTokenTTL. A user
// no binding rule matches gets no token; a state is good for one try; a
// redirect URI the method does not allow is refused.
func TestCLILoginOIDC(t *testing.T) {
	callback := fmt.Sprintf("localhost:%d", testproc.FreePort(t))
	redirect := "http://" + callback + "/oidc/callback"
	op := oidctest.Start(t, []oidctest.User{
		{ID: "u1", Username: "alice", Password: "alice-pw", Email: "alice@example.com"},
		{ID: "u2", Username: "bob", Password: "bob-pw", Email: "bob@example.com"},
	}, redirect)
	addr := startAgent(t, false, func(c *config.Config) { c.ACLEnabled = true })
	dir := t.TempDir()
	cli := func(token string, args ...string) (int, string, string) {
		t.Helper()
		args = append(args, "-address", addr)
		if token != "" {
			args = append(args, "-token", token)
		}
		return runCLI(t, args...)
	}
	code, out, stderr := cli("", "acl", "bootstrap", "-json")
	var boot api.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &boot) != nil {
		t.Fatalf("acl bootstrap: %d %q %q", code, out, stderr)
	}
	mgmt := boot.SecretID
	rules := writeFile(t, dir, "dev.hcl", `namespace "default" { policy = "write" }`)
	if code, _, stderr := cli(mgmt, "acl", "policy", "apply", "dev", rules); code != 0 {
		t.Fatalf("policy apply: %d %q", code, stderr)
	}
	if code, _, stderr := cli(mgmt, "acl", "role", "create", "-name", "engineers", "-policy", "dev"); code != 0 {
		t.Fatalf("role create: %d %q", code, stderr)
	}
	cfg, _ := json.Marshal(api.ACLAuthMethodConfig{OIDCDiscoveryURL: op.Issuer, OIDCClientID: op.ClientID,
		OIDCClientSecret: op.ClientSecret, OIDCScopes: []string{"email", "profile"}, BoundAudiences: []string{op.ClientID},
		AllowedRedirectURIs: []string{redirect}, ClaimMappings: map[string]string{"email": "email", "preferred_username": "username"}})
	cfgFile := writeFile(t, dir, "sso.json", string(cfg))
	if code, out, stderr := cli(mgmt, "acl", "auth-method", "create", "-name", "sso", "-default", "-max-token-ttl", "2h",
		"-token-name-format", "sso-${value.username}", "-config", cfgFile); code != 0 || !strings.Contains(out, op.Issuer) {
		t.Fatalf("auth-method create: %d %q %q", code, out, stderr)
	}
	if code, _, stderr := cli(mgmt, "acl", "binding-rule", "create", "-auth-method", "sso", "-bind-type", "role",
		"-bind-name", "engineers", "-selector", `value.email == "alice@example.com"`); code != 0 {
		t.Fatalf("binding-rule create: %d %q", code, stderr)
	}
	// The method list is public (a login page needs it before any token).
	if code, out, _ := cli("", "acl", "auth-method", "list"); code != 0 || !strings.Contains(out, "sso") {
		t.Fatalf("auth-method list without a token: %d %q", code, out)
	}

	// login: the default method, no -method.
	login := func(user, pw string) (int, string, string) {
		t.Helper()
		pr, pw2 := io.Pipe()
		var stdout strings.Builder
		codec := make(chan int, 1)
		go func() {
			codec <- run(context.Background(), []string{"login", "-address", addr, "-oidc-callback-addr", callback,
				"-no-browser", "-json", "-timeout", "60s"}, &stdout, pw2)
			pw2.Close()
		}()
		var errOut strings.Builder
		urlc := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				line := sc.Text()
				errOut.WriteString(line + "\n")
				if u := strings.TrimSpace(line); strings.HasPrefix(u, op.Issuer) {
					urlc <- u
				}
			}
			close(urlc)
		}()
		var status int
		var body string
		if u, ok := <-urlc; ok {
			status, body = op.Login(t, u, user, pw)
		}
		for range urlc {
		}
		code := <-codec
		resetFlags(rootCmd)
		if !strings.Contains(body, "Signed in") && !strings.Contains(body, "Login failed") {
			t.Fatalf("the redirect URI answered %d %q", status, body)
		}
		return code, stdout.String(), errOut.String()
	}
	code, out, stderr = login("alice", "alice-pw")
	var tok api.ACLToken
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.SecretID == "" {
		t.Fatalf("login as alice: %d %q %q", code, out, stderr)
	}
	if tok.AuthMethod != "sso" || tok.Name != "sso-alice" || len(tok.Roles) != 1 || tok.Roles[0].Name != "engineers" ||
		tok.ExpirationTime == nil || time.Until(*tok.ExpirationTime) > 2*time.Hour || time.Until(*tok.ExpirationTime) < time.Hour {
		t.Fatalf("alice's token: %+v", tok)
	}
	if code, out, _ := cli(tok.SecretID, "acl", "token", "self"); code != 0 || !strings.Contains(out, tok.AccessorID) {
		t.Errorf("token self with the SSO token: %d %q", code, out)
	}
	if code, _, stderr := cli(tok.SecretID, "job", "status"); code != 0 {
		t.Errorf("job status with the SSO token: %d %q", code, stderr)
	}
	if code, _, stderr := cli(tok.SecretID, "namespace", "apply", "other"); code != ExitError || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("namespace apply with the SSO token: %d %q", code, stderr)
	}

	// bob signs in at the provider, but no binding rule grants him anything.
	code, out, stderr = login("bob", "bob-pw")
	if code != ExitError || !strings.Contains(stderr+out, "no binding rule") {
		t.Fatalf("login as bob: %d %q %q", code, out, stderr)
	}

	// The API refuses a redirect URI the method does not allow, and a
	// state a second time.
	c := api.NewClient(addr)
	var bad *api.Error
	err := c.Write(t.Context(), "POST", "/v1/acl/oidc/auth-url", &api.ACLOIDCAuthURLRequest{AuthMethodName: "sso",
		RedirectURI: "http://evil.example/cb", ClientNonce: "0123456789abcdef0123"}, nil, nil)
	if !errors.As(err, &bad) || bad.Status != 400 {
		t.Errorf("auth-url with a foreign redirect URI: %v", err)
	}
	var start api.ACLOIDCAuthURLResponse
	if err := c.Write(t.Context(), "POST", "/v1/acl/oidc/auth-url", &api.ACLOIDCAuthURLRequest{AuthMethodName: "sso",
		RedirectURI: redirect, ClientNonce: "0123456789abcdef0123"}, &start, nil); err != nil {
		t.Fatal(err)
	}
	state := strings.SplitN(strings.SplitN(start.AuthURL, "state=", 2)[1], "&", 2)[0]
	for i, want := range []string{"code exchange", "unknown or expired state"} {
		err := c.Write(t.Context(), "POST", "/v1/acl/oidc/complete-auth", &api.ACLOIDCCompleteAuthRequest{AuthMethodName: "sso",
			ClientNonce: "0123456789abcdef0123", State: state, Code: "forged", RedirectURI: redirect}, nil, nil)
		if !errors.As(err, &bad) || bad.Status != 403 || !strings.Contains(bad.Message, want) {
			t.Errorf("complete-auth try %d with a forged code: %v, want 403 %q", i+1, err, want)
		}
	}
	// Deleting the method deletes its binding rules.
	if code, _, stderr := cli(mgmt, "acl", "auth-method", "delete", "sso"); code != 0 {
		t.Fatalf("auth-method delete: %d %q", code, stderr)
	}
	if code, out, _ := cli(mgmt, "acl", "binding-rule", "list", "-json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("binding rules after the method's deletion: %d %q", code, out)
	}
}
