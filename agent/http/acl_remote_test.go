package http_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server"
	"github.com/drover/drover/server/acl"
)

// TestRemoteACL: a client-only agent's resolver learns from a real server
// (GET /v1/acl/resolve) what each secret may do: management, a client
// token's policies, a node secret, anonymous; an unknown secret is
// denied; an answer is kept for the TTL and no longer (a fake clock), and
// an unreachable server is unavailable, not an empty ACL.
func TestRemoteACL(t *testing.T) {
	a := newTestAPIWith(t, server.Config{ACLEnabled: true})
	var boot api.ACLToken
	if code, b := a.doAs("POST", "/v1/acl/bootstrap", nil, nil); code != 200 || json.Unmarshal(b, &boot) != nil {
		t.Fatalf("bootstrap = %d %s", code, b)
	}
	mgmt := map[string]string{api.HeaderToken: boot.SecretID}
	if code, b := a.doAs("PUT", "/v1/acl/policy/dev", api.ACLPolicy{Name: "dev",
		Rules: `namespace "default" { capabilities = ["read-logs"] }`}, mgmt); code != 200 {
		t.Fatalf("policy = %d %s", code, b)
	}
	var tok api.ACLToken
	if code, b := a.doAs("POST", "/v1/acl/token", api.ACLToken{Policies: []string{"dev"}}, mgmt); code != 200 || json.Unmarshal(b, &tok) != nil {
		t.Fatalf("token = %d %s", code, b)
	}
	n := testNode(nodeID)
	if code, b := a.doAs("PUT", "/v1/node/register", &api.NodeRegisterRequest{Node: n}, mgmt); code != 200 {
		t.Fatalf("register node = %d %s", code, b)
	}

	clk := clock.NewFake(time.Now())
	r := &agenthttp.RemoteACL{Servers: []string{a.ts.URL}, HTTP: a.ts.Client(), TTL: time.Minute, Clock: clk}
	resolve := func(secret string) *acl.ACL {
		t.Helper()
		got, _, err := r.ResolveToken(secret)
		if err != nil {
			t.Fatalf("ResolveToken(%.8s): %v", secret, err)
		}
		return got
	}
	if !resolve(boot.SecretID).IsManagement() {
		t.Error("the bootstrap token is not management")
	}
	dev := resolve(tok.SecretID)
	if !dev.AllowNamespace("default", acl.CapReadLogs) || dev.AllowNamespace("default", acl.CapAllocExec) ||
		dev.AllowNamespace("ml", acl.CapReadLogs) || dev.AllowNode(false) {
		t.Error("the dev token's ACL is not its policy's")
	}
	if node := resolve(n.SecretID); node.NodeID() != n.ID || node.AllowNode(false) || node.AllowAnyNamespace(acl.CapReadJob) {
		t.Error("the node secret's ACL is not its node's alone")
	}
	if anon := resolve(""); anon.AllowNode(false) || anon.AllowNamespace("default", acl.CapReadLogs) {
		t.Error("anonymous without an anonymous policy may do something")
	}
	if _, _, err := r.ResolveToken("not-a-token"); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("unknown secret: %v, want permission denied", err)
	}

	// Revoked on the server: kept until the TTL passes, then denied.
	if code, b := a.doAs("DELETE", "/v1/acl/token/"+tok.AccessorID, nil, mgmt); code != 200 {
		t.Fatalf("delete token = %d %s", code, b)
	}
	if !resolve(tok.SecretID).AllowNamespace("default", acl.CapReadLogs) {
		t.Error("the cached answer was not used within the TTL")
	}
	clk.Advance(time.Minute + time.Second)
	if _, _, err := r.ResolveToken(tok.SecretID); !errors.Is(err, api.ErrPermissionDenied) {
		t.Errorf("revoked token after the TTL: %v, want permission denied", err)
	}

	down := &agenthttp.RemoteACL{Servers: []string{"127.0.0.1:1"}}
	if _, _, err := down.ResolveToken(boot.SecretID); !errors.Is(err, api.ErrUnavailable) {
		t.Errorf("unreachable server: %v, want unavailable", err)
	}
}
