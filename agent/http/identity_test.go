package http_test

import (
	"context"
	"errors"
	nethttp "net/http"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover/drover/api"
)

// Workload identities over HTTP: the alloc's node gets every identity of
// a task signed with the keyring's key (made on first use), verifiable
// with /.well-known/jwks.json; a wrong secret, another node and an
// unknown task are refused; the keyring lists the key without material.
func TestWorkloadIdentitiesHTTP(t *testing.T) {
	a := newTestAPI(t)
	n := testNode(nodeID)
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, nil)
	other := testNode("f0e1d2c3-0000-4000-8000-000000000002")
	a.ok("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: other}, nil)
	var keys []*api.RootKeyMeta
	a.ok("GET", "/v1/operator/keyring/keys", nil, &keys)
	if len(keys) != 0 {
		t.Fatalf("keys before any identity: %+v", keys)
	}
	job := webJob(1)
	task := job["Job"].(map[string]any)["TaskGroups"].([]any)[0].(map[string]any)["Tasks"].([]any)[0].(map[string]any)
	task["Identities"] = []any{map[string]any{"Name": "vault", "Audience": []string{"vault.io"}, "TTL": int64(time.Hour), "File": true}}
	job["Job"].(map[string]any)["Constraints"] = []any{map[string]any{"LTarget": "${node.unique.id}", "Operand": "=", "RTarget": nodeID}}
	a.waitEval(a.register(job).EvalID)
	var allocs []*api.AllocListStub
	a.ok("GET", "/v1/job/web/allocations", nil, &allocs)
	if len(allocs) != 1 {
		t.Fatalf("%d allocs", len(allocs))
	}
	c := api.NewClient(a.ts.URL)
	c.Headers = nethttp.Header{api.NodeSecretHeader: {n.SecretID}}
	ctx := context.Background()
	resp, err := c.SignIdentities(ctx, n.ID, &api.TaskIdentityRequest{AllocID: allocs[0].ID, Task: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Identities) != 2 || resp.Identities[0].Name != "default" || resp.Identities[1].Name != "vault" || resp.Identities[1].Expiration.IsZero() {
		t.Fatalf("identities %+v", resp.Identities)
	}
	var set jose.JSONWebKeySet
	a.ok("GET", "/.well-known/jwks.json", nil, &set)
	if len(set.Keys) != 1 || set.Keys[0].Algorithm != "RS256" || !set.Keys[0].IsPublic() {
		t.Fatalf("JWKS %+v", set)
	}
	tok, err := jwt.ParseSigned(resp.Identities[1].Token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Headers[0].KeyID != set.Keys[0].KeyID {
		t.Errorf("kid %q, JWKS key %q", tok.Headers[0].KeyID, set.Keys[0].KeyID)
	}
	var claims api.IdentityClaims
	if err := tok.Claims(set.Keys[0].Key, &claims); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if claims.Subject != "global:default:web:web:srv:vault" || claims.Audience[0] != "vault.io" || claims.Expiry-claims.IssuedAt != 3600 {
		t.Errorf("claims %+v", claims)
	}
	a.ok("GET", "/v1/operator/keyring/keys", nil, &keys)
	if len(keys) != 1 || keys[0].State != "active" || keys[0].KeyID != set.Keys[0].KeyID {
		t.Errorf("keyring %+v", keys)
	}
	a.fails("GET", "/.well-known/openid-configuration", nil, 404, api.ErrNotFound.Code)

	bad := api.NewClient(a.ts.URL)
	bad.Headers = nethttp.Header{api.NodeSecretHeader: {"wrong"}}
	if _, err := bad.SignIdentities(ctx, n.ID, &api.TaskIdentityRequest{AllocID: allocs[0].ID, Task: "srv"}); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("wrong secret: %v", err)
	}
	oc := api.NewClient(a.ts.URL)
	oc.Headers = nethttp.Header{api.NodeSecretHeader: {other.SecretID}}
	if _, err := oc.SignIdentities(ctx, other.ID, &api.TaskIdentityRequest{AllocID: allocs[0].ID, Task: "srv"}); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("another node's alloc: %v", err)
	}
	if _, err := c.SignIdentities(ctx, n.ID, &api.TaskIdentityRequest{AllocID: allocs[0].ID, Task: "nope"}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("unknown task: %v", err)
	}
}
