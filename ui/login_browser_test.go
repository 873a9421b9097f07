package ui_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/oidctest"
	"github.com/drover/drover/internal/testproc"
)

// TestUISSOLogin signs in through the UI's login button in headless
// Chromium against an OIDC provider (oidctest's, in the test process) and a dev
// agent with ACLs on: the jobs page first asks for a token, the login page
// lists the SSO method, the provider's own form takes the password, the
// callback page trades the code for a token the UI keeps, the jobs page
// then loads and the top bar names the token; sign out forgets it.
func TestUISSOLogin(t *testing.T) {
	httpPort := testproc.FreePort(t)
	agent := &devAgent{
		Process: testproc.StartProcess(t, "agent", "-dev", "-acl-enabled", "-http-port", strconv.Itoa(httpPort),
			"-raft-port", strconv.Itoa(testproc.FreePort(t)), "-gossip-port", strconv.Itoa(testproc.FreePort(t)),
			"-node", "ui-sso-node"),
		base: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
	}
	redirect := agent.base + "/ui/oidc/callback"
	op := oidctest.Start(t, []oidctest.User{
		{ID: "u1", Username: "alice", Password: "alice-pw", Email: "alice@example.com"}}, redirect)
	var boot api.ACLToken
	agent.WaitFor(t, "acl bootstrap", 60*time.Second, func() bool {
		return agent.send("POST", "/v1/acl/bootstrap", nil, nil, &boot) == nil
	})
	mgmt := map[string]string{api.HeaderToken: boot.SecretID}
	for _, w := range []struct {
		path string
		body any
	}{
		{"/v1/acl/policy/viewer", api.ACLPolicy{Name: "viewer", Rules: `namespace "default" { policy = "read" }` + "\n" + `node { policy = "read" }`}},
		{"/v1/acl/role", api.ACLRole{Name: "viewers", Policies: []*api.ACLRolePolicyLink{{Name: "viewer"}}}},
		{"/v1/acl/auth-method", api.ACLAuthMethod{Name: "sso", Type: api.ACLAuthMethodTypeOIDC, DisplayName: "Example SSO",
			Default: true, MaxTokenTTL: time.Hour, TokenNameFormat: "sso-${value.username}", Config: &api.ACLAuthMethodConfig{
				OIDCDiscoveryURL: op.Issuer, OIDCClientID: op.ClientID, OIDCClientSecret: op.ClientSecret,
				OIDCScopes: []string{"email", "profile"}, AllowedRedirectURIs: []string{redirect},
				ClaimMappings: map[string]string{"email": "email", "preferred_username": "username"}}}},
		{"/v1/acl/binding-rule", api.ACLBindingRule{AuthMethod: "sso", BindType: api.ACLBindTypeRole, BindName: "viewers",
			Selector: `value.email == "alice@example.com"`}},
	} {
		if err := agent.send("POST", w.path, w.body, mgmt, nil); err != nil {
			t.Fatal(err)
		}
	}

	ctx, problems := browser(t)
	const long = 60 * time.Second
	do(t, ctx, "open the jobs", chromedp.Navigate(agent.base+"/ui/jobs"))
	until(t, ctx, "the jobs page asks for a token", textHas("main .error", "sign in"), long)
	click(t, ctx, "open the login page", "#login")
	until(t, ctx, "the SSO method is offered", textHas("#sso-sso", "Sign in with Example SSO"), long)
	click(t, ctx, "sign in with SSO", "#sso-sso")
	untilAcross(t, ctx, "the provider's login form", fmt.Sprintf(`location.href.startsWith(%s) && !!document.querySelector('input[name=username]')`, jsString(op.Issuer)), long)
	do(t, ctx, "fill in and submit the provider's form", chromedp.Evaluate[chromedp.Void](`
		document.querySelector('input[name=username]').value = 'alice';
		document.querySelector('input[name=password]').value = 'alice-pw';
		document.querySelector('form').submit();`))
	untilAcross(t, ctx, "back on the jobs page, signed in", fmt.Sprintf(`location.href === %s && `, jsString(agent.base+"/ui/jobs"))+
		textHas("#login", "sso-alice"), long)
	until(t, ctx, "the jobs page loads with the token", `!!document.querySelector('#jobs-table') && !document.querySelector('main .error')`, long)
	secret, err := chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem('drover.token') || ''`))
	if err != nil {
		t.Fatal(err)
	}
	var self api.ACLToken
	if err := agent.send("GET", "/v1/acl/token/self", nil, map[string]string{api.HeaderToken: secret}, &self); err != nil {
		t.Fatalf("the UI's stored token: %v", err)
	}
	if self.AuthMethod != "sso" || len(self.Roles) != 1 || self.Roles[0].Name != "viewers" || self.ExpirationTime == nil {
		t.Fatalf("the UI's token: %+v", self)
	}
	click(t, ctx, "open the login page again", "#login")
	until(t, ctx, "it names the identity", textHas("#login-name", "sso-alice"), long)
	click(t, ctx, "sign out", "#logout")
	untilAcross(t, ctx, "signed out", textHas("#login", "Sign in")+` && !localStorage.getItem('drover.token')`, long)
	for _, p := range problems() {
		t.Errorf("browser: %s", p)
	}
}

// untilAcross is until for a wait that spans page loads (the SSO
// redirects): a poll that a navigation interrupts starts again in the new
// document, until the deadline.
func untilAcross(t *testing.T, ctx context.Context, what, predicate string, timeout time.Duration) {
	t.Helper()
	// Each look polls in the page; a navigation aborts it, and the shared
	// helper looks again in the next page.
	var last error
	defer func() {
		if t.Failed() {
			loc, _ := chromedp.Run(ctx, chromedp.Location())
			t.Logf("%s: last %v (at %s)", what, last, loc)
		}
	}()
	testproc.Eventually(t, timeout, what, func() bool {
		_, last = chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(100*time.Millisecond),
			chromedp.WithPollingTimeout(time.Second)))
		return last == nil
	})
}
