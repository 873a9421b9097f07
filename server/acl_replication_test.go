package server

import (
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/api"
)

// TestDiffPolicies: policies missing or changed here are written, ones
// the authoritative region no longer has are deleted, equal ones left.
func TestDiffPolicies(t *testing.T) {
	local := []*api.ACLPolicy{
		{Name: "same", Rules: `node { policy = "read" }`, ModifyIndex: 5},
		{Name: "changed", Rules: `node { policy = "read" }`},
		{Name: "gone", Rules: `node { policy = "read" }`},
	}
	remote := []*api.ACLPolicy{
		{Name: "same", Rules: `node { policy = "read" }`, ModifyIndex: 90},
		{Name: "changed", Rules: `node { policy = "write" }`},
		{Name: "new", Rules: `agent { policy = "read" }`, CreateIndex: 7, ModifyIndex: 9},
	}
	w := diffPolicies(local, remote)
	var got []string
	for _, p := range w.Policies {
		got = append(got, p.Name)
		if p.CreateIndex != 0 || p.ModifyIndex != 0 {
			t.Errorf("policy %s keeps the remote indexes %d/%d, want this region's", p.Name, p.CreateIndex, p.ModifyIndex)
		}
	}
	if want := []string{"changed", "new"}; !slices.Equal(got, want) {
		t.Errorf("upserted %v, want %v", got, want)
	}
	if want := []string{"gone"}; !slices.Equal(w.DeletePolicies, want) {
		t.Errorf("deleted %v, want %v", w.DeletePolicies, want)
	}
}

// TestDiffTokens: global tokens follow the authoritative region (new,
// changed, deleted); local tokens are never touched, and a remote token
// without its secret (a redacted listing) is not written.
func TestDiffTokens(t *testing.T) {
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	local := []*api.ACLToken{
		{AccessorID: "same", SecretID: "s1", Type: api.ACLTokenClient, Policies: []string{"p"}, Global: true},
		{AccessorID: "renamed", SecretID: "s2", Name: "old", Type: api.ACLTokenClient, Policies: []string{"p"}, Global: true},
		{AccessorID: "deleted", SecretID: "s3", Type: api.ACLTokenManagement, Global: true},
		{AccessorID: "local", SecretID: "s4", Type: api.ACLTokenClient, Policies: []string{"p"}},
	}
	remote := []*api.ACLToken{
		{AccessorID: "same", SecretID: "s1", Type: api.ACLTokenClient, Policies: []string{"p"}, Global: true, ModifyIndex: 99},
		{AccessorID: "renamed", SecretID: "s2", Name: "new", Type: api.ACLTokenClient, Policies: []string{"p"}, Global: true},
		{AccessorID: "new", SecretID: "s5", Type: api.ACLTokenClient, Policies: []string{"p"}, Global: true, ExpirationTime: &exp},
		{AccessorID: "redacted", Type: api.ACLTokenClient, Policies: []string{"p"}, Global: true},
		{AccessorID: "remote-local", SecretID: "s6", Type: api.ACLTokenClient, Policies: []string{"p"}},
	}
	w := diffTokens(local, remote)
	var got []string
	for _, tok := range w.Tokens {
		got = append(got, tok.AccessorID)
	}
	if want := []string{"renamed", "new"}; !slices.Equal(got, want) {
		t.Errorf("upserted %v, want %v", got, want)
	}
	if want := []string{"deleted"}; !slices.Equal(w.DeleteTokens, want) {
		t.Errorf("deleted %v, want %v (the local token stays)", w.DeleteTokens, want)
	}
}
