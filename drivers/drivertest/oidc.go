package drivertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// OIDCProvider is a real OpenID Connect provider for SSO tests: zitadel's
// oidc example server (github.com/zitadel/oidc/v3/example/server, a tool
// of go.mod, so it comes from the module proxy), built once per test
// process and started on a free port. Its confidential client is
// ClientID/ClientSecret; Users can sign in on its login form.
type OIDCProvider struct {
	Issuer       string // also the discovery URL
	ClientID     string
	ClientSecret string
	Proc         *Process
}

// OIDCUser is one user of the provider's login form; Email is the email
// claim its userinfo endpoint answers.
type OIDCUser struct {
	ID, Username, Password, Email string
}

var oidcBinary struct {
	once sync.Once
	path string
	err  error
}

// StartOIDCProvider builds (once) and starts the provider, whose client
// accepts redirectURIs, with users; it returns once discovery answers.
func StartOIDCProvider(t testing.TB, users []OIDCUser, redirectURIs ...string) *OIDCProvider {
	t.Helper()
	oidcBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "drover-oidc-")
		if err != nil {
			oidcBinary.err = err
			return
		}
		oidcBinary.path = filepath.Join(dir, "oidc-provider")
		cmd := exec.Command("go", "build", "-o", oidcBinary.path, "github.com/zitadel/oidc/v3/example/server")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			oidcBinary.err = fmt.Errorf("build the OIDC provider: %v: %s", err, out)
		}
	})
	if oidcBinary.err != nil {
		t.Fatal(oidcBinary.err)
	}
	type user struct {
		ID, Username, Password, FirstName, LastName, Email string
		EmailVerified                                      bool
		PreferredLanguage                                  string
	}
	file := map[string]user{}
	for _, u := range users {
		file[u.ID] = user{ID: u.ID, Username: u.Username, Password: u.Password, FirstName: u.Username, LastName: "Test",
			Email: u.Email, EmailVerified: true, PreferredLanguage: "en"}
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(usersFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(FreePort(t))
	p := startBinary(t, &Process{bin: oidcBinary.path, name: "oidc provider", out: &syncBuf{},
		Env: []string{"PORT=" + port, "USERS_FILE=" + usersFile, "REDIRECT_URI=" + strings.Join(redirectURIs, ",")}})
	op := &OIDCProvider{Issuer: "http://localhost:" + port + "/", ClientID: "web", ClientSecret: "secret", Proc: p}
	p.WaitFor(t, "OIDC discovery answers", 30*time.Second, func() bool {
		res, err := http.Get(op.Issuer + ".well-known/openid-configuration")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return op
}

// Login does what a user's browser does with an auth URL: it follows it to
// the provider's login form, signs in as username/password and follows the
// redirects back to the client's redirect URI. It returns the last
// response's status and body (the redirect URI's page).
func (op *OIDCProvider) Login(t testing.TB, authURL, username, password string) (int, string) {
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
	res, err = c.PostForm(op.Issuer+"login/username", url.Values{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatalf("submit the login form: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(body)
}
