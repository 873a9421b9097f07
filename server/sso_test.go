package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

func oidcMethod(name string) *api.ACLAuthMethod {
	return &api.ACLAuthMethod{Name: name, Type: api.ACLAuthMethodTypeOIDC, MaxTokenTTL: time.Hour,
		Config: &api.ACLAuthMethodConfig{OIDCDiscoveryURL: "https://idp.example/", OIDCClientID: "drover",
			AllowedRedirectURIs: []string{"http://localhost:4649/oidc/callback"},
			ClaimMappings:       map[string]string{"email": "email", "/org/team": "team"},
			ListClaimMappings:   map[string]string{"groups": "groups"}}}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want an api error %s", err, code)
	}
}

func TestAuthMethodValidation(t *testing.T) {
	for name, mut := range map[string]func(m *api.ACLAuthMethod){
		"no name":            func(m *api.ACLAuthMethod) { m.Name = "" },
		"slash in name":      func(m *api.ACLAuthMethod) { m.Name = "a/b" },
		"JWT":                func(m *api.ACLAuthMethod) { m.Type = api.ACLAuthMethodTypeJWT },
		"no TTL":             func(m *api.ACLAuthMethod) { m.MaxTokenTTL = 0 },
		"no config":          func(m *api.ACLAuthMethod) { m.Config = nil },
		"bad discovery URL":  func(m *api.ACLAuthMethod) { m.Config.OIDCDiscoveryURL = "ftp://x" },
		"no client ID":       func(m *api.ACLAuthMethod) { m.Config.OIDCClientID = "" },
		"no redirect URIs":   func(m *api.ACLAuthMethod) { m.Config.AllowedRedirectURIs = nil },
		"relative redirect":  func(m *api.ACLAuthMethod) { m.Config.AllowedRedirectURIs = []string{"/cb"} },
		"bad CA":             func(m *api.ACLAuthMethod) { m.Config.DiscoveryCaPem = []string{"not a pem"} },
		"bad claim mapping":  func(m *api.ACLAuthMethod) { m.Config.ClaimMappings["x"] = "not an identifier" },
		"bad token locality": func(m *api.ACLAuthMethod) { m.TokenLocality = "region" },
	} {
		m := oidcMethod("sso")
		mut(m)
		if err := validateAuthMethod(m); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			wantCode(t, err, "bad_request")
		}
	}
	if err := validateAuthMethod(oidcMethod("sso")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*api.ACLBindingRule{
		{AuthMethod: "sso", BindType: "group", BindName: "x"},
		{AuthMethod: "sso", BindType: api.ACLBindTypeRole},
		{AuthMethod: "sso", BindType: api.ACLBindTypeManagement, BindName: "x"},
		{BindType: api.ACLBindTypeRole, BindName: "x"},
		{AuthMethod: "sso", BindType: api.ACLBindTypeRole, BindName: "x", Selector: `list.groups contains`},
	} {
		if err := validateBindingRule(r); err == nil {
			t.Errorf("binding rule %+v accepted", r)
		}
	}
}

// TestAuthMethodsInState: binding rules need their method, deleting a
// method deletes its rules, and only one method is the default.
func TestAuthMethodsInState(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.ACLEnabled = true })
	waitLeader(t, s)
	ctx := context.Background()
	m := oidcMethod("sso")
	m.Default = true
	if _, err := s.SSO().UpsertACLAuthMethod(ctx, m, false); err != nil {
		t.Fatal(err)
	}
	_, err := s.SSO().UpsertACLAuthMethod(ctx, m, false)
	wantCode(t, err, "bad_request") // exists
	_, err = s.SSO().UpsertACLAuthMethod(ctx, oidcMethod("missing"), true)
	wantCode(t, err, "not_found")
	other := oidcMethod("other")
	other.Default = true
	_, err = s.SSO().UpsertACLAuthMethod(ctx, other, false)
	wantCode(t, err, "bad_request") // a second default
	_, err = s.SSO().UpsertACLBindingRule(ctx, &api.ACLBindingRule{AuthMethod: "nope", BindType: api.ACLBindTypeManagement})
	wantCode(t, err, "bad_request")
	r, err := s.SSO().UpsertACLBindingRule(ctx, &api.ACLBindingRule{AuthMethod: "sso", BindType: api.ACLBindTypeManagement})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.State().ACLBindingRules(nil, "sso"); len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("rules of sso = %v", got)
	}
	if _, err := s.SSO().DeleteACLAuthMethod(ctx, "sso"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.State().ACLBindingRules(nil, ""); len(got) != 0 {
		t.Fatalf("rules left after their method was deleted: %v", got)
	}
}

// TestBindToken: the token an identity gets is the union of the rules
// whose selectors match it; roles and policies that don't exist are
// skipped; no match is permission denied; management wins.
func TestBindToken(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.ACLEnabled = true })
	waitLeader(t, s)
	ctx := context.Background()
	for _, p := range []string{"eng", "ml", "infra"} {
		if _, err := s.ACL().UpsertACLPolicy(ctx, &api.ACLPolicy{Name: p, Rules: `namespace "` + p + `" { policy = "read" }`}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ACL().UpsertACLRole(ctx, &api.ACLRole{Name: "team-infra", Policies: []*api.ACLRolePolicyLink{{Name: "infra"}}}); err != nil {
		t.Fatal(err)
	}
	m := oidcMethod("sso")
	m.TokenNameFormat = "${auth_method_name}-${value.email}"
	if _, err := s.SSO().UpsertACLAuthMethod(ctx, m, false); err != nil {
		t.Fatal(err)
	}
	stored, _ := s.State().ACLAuthMethodByName(nil, "sso")
	for _, r := range []*api.ACLBindingRule{
		{Selector: `"eng" in list.groups`, BindType: api.ACLBindTypePolicy, BindName: "eng"},
		{Selector: `"ml" in list.groups`, BindType: api.ACLBindTypePolicy, BindName: "ml"},
		{Selector: `value.team != ""`, BindType: api.ACLBindTypeRole, BindName: "team-${value.team}"},
		{Selector: `"ghost" in list.groups`, BindType: api.ACLBindTypePolicy, BindName: "no-such-policy"},
		{Selector: `value.email == "root@example.com"`, BindType: api.ACLBindTypeManagement},
	} {
		r.AuthMethod = "sso"
		if _, err := s.SSO().UpsertACLBindingRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		claims   map[string]any
		policies []string
		roles    []string
		mgmt     bool
		denied   bool
	}{
		{name: "eng", claims: map[string]any{"email": "a@example.com", "groups": []any{"eng"}}, policies: []string{"eng"}},
		{name: "eng+ml", claims: map[string]any{"email": "b@example.com", "groups": []any{"ml", "eng", "x"}}, policies: []string{"eng", "ml"}},
		{name: "team role", claims: map[string]any{"email": "c@example.com", "org": map[string]any{"team": "infra"}}, roles: []string{"team-infra"}},
		{name: "unknown team role skipped", claims: map[string]any{"email": "d@example.com", "groups": []any{"eng"}, "org": map[string]any{"team": "sales"}}, policies: []string{"eng"}},
		{name: "only a missing policy", claims: map[string]any{"email": "e@example.com", "groups": []any{"ghost"}}, denied: true},
		{name: "nothing", claims: map[string]any{"email": "f@example.com"}, denied: true},
		{name: "management", claims: map[string]any{"email": "root@example.com", "groups": []any{"eng"}}, mgmt: true},
		{name: "a scalar groups claim", claims: map[string]any{"email": "g@example.com", "groups": "ml"}, policies: []string{"ml"}},
	} {
		tok, err := s.sso.bindToken(ctx, stored, mapClaims(stored.Config, tc.claims))
		if tc.denied {
			wantCode(t, err, "permission_denied")
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var roles []string
		for _, l := range tok.Roles {
			roles = append(roles, l.Name)
		}
		slices.Sort(tok.Policies)
		if (tok.Type == api.ACLTokenManagement) != tc.mgmt || !slices.Equal(tok.Policies, tc.policies) || !slices.Equal(roles, tc.roles) {
			t.Errorf("%s: token type %s policies %v roles %v; want management=%v %v %v", tc.name, tok.Type, tok.Policies, roles, tc.mgmt, tc.policies, tc.roles)
		}
		if tok.ExpirationTime == nil || tok.AuthMethod != "sso" || tok.Name != "sso-"+tc.claims["email"].(string) {
			t.Errorf("%s: token %+v: want an expiry, AuthMethod sso and the formatted name", tc.name, tok)
		}
		a, _, err := s.ACL().ResolveToken(tok.SecretID)
		if err != nil || a == nil {
			t.Fatalf("%s: the minted token does not resolve: %v", tc.name, err)
		}
	}
}

// TestOIDCPendingLoginsBounded: one address holds at most
// oidcMaxPendingPerClient logins in progress (then 429) while others
// start theirs; a full table evicts the oldest login of the client
// holding the most, never refusing a new client; logins expire after
// oidcLoginTTL; a state is taken once.
func TestOIDCPendingLoginsBounded(t *testing.T) {
	var tab pendingLogins
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	n := 0
	add := func(now time.Time, addr string) (*oidcPending, error) {
		n++
		p := &oidcPending{state: fmt.Sprintf("state-%d", n), client: oidcClientKey(addr), expires: now.Add(oidcLoginTTL)}
		return p, tab.add(now, p)
	}
	const flooder = "203.0.113.7"
	refused := 0
	for range 5000 {
		if _, err := add(t0, flooder); err != nil {
			wantCode(t, err, "too_many_requests")
			if api.AsError(err).Status != 429 {
				t.Fatalf("refusal status %d, want 429", api.AsError(err).Status)
			}
			refused++
		}
	}
	if got := len(tab.byClient[flooder]); got != oidcMaxPendingPerClient || refused != 5000-oidcMaxPendingPerClient {
		t.Fatalf("after 5000 logins from one address: it holds %d (%d refused), want %d", got, refused, oidcMaxPendingPerClient)
	}
	honest, err := add(t0, "198.51.100.9")
	if err != nil {
		t.Fatalf("a login from another address during the flood: %v", err)
	}
	if tab.take(honest.state) != honest || tab.take(honest.state) != nil {
		t.Fatal("a state is not taken exactly once")
	}

	// Fill the table from many addresses: the flooder (the oldest of
	// those holding the most) loses its oldest login to a new client.
	oldest := tab.byClient[flooder][0]
	for i := 0; tab.len() < oidcMaxPending; i++ {
		if _, err := add(t0, fmt.Sprintf("10.0.%d.%d", i/16/256, i/16%256)); err != nil {
			t.Fatal(err)
		}
	}
	newcomer, err := add(t0, "192.0.2.1")
	if err != nil {
		t.Fatalf("a new client on a full table: %v", err)
	}
	if got := tab.len(); got != oidcMaxPending {
		t.Fatalf("table holds %d, want %d", got, oidcMaxPending)
	}
	if tab.byState[oldest.state] != nil || len(tab.byClient[flooder]) != oidcMaxPendingPerClient-1 {
		t.Fatalf("the flooder's oldest login was not the one evicted (it holds %d)", len(tab.byClient[flooder]))
	}
	if tab.byState[newcomer.state] != newcomer {
		t.Fatal("the new client's login is not in the table")
	}

	// A login lives oidcLoginTTL: at its end it is still there, just past
	// it every login of t0 is gone.
	if _, err := add(t0.Add(oidcLoginTTL), flooder); err != nil {
		t.Fatalf("a login from the flooder, below its cap, on a full table: %v", err)
	}
	if got := tab.len(); got != oidcMaxPending {
		t.Fatalf("table holds %d at the TTL, want %d", got, oidcMaxPending)
	}
	if _, err := add(t0.Add(oidcLoginTTL+time.Nanosecond), flooder); err != nil {
		t.Fatalf("a login from the flooder after its logins expired: %v", err)
	}
	if got, want := tab.len(), 2; got != want || len(tab.byClient[flooder]) != 2 {
		t.Fatalf("after the TTL the table holds %d (the flooder %d), want %d", got, len(tab.byClient[flooder]), want)
	}
}

func TestOIDCClientKey(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:bbbb::9", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"", "?"},
		{"not an address", "?"},
	} {
		if got := oidcClientKey(tc.addr); got != tc.want {
			t.Errorf("oidcClientKey(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func (t *pendingLogins) len() int { return len(t.byState) }
