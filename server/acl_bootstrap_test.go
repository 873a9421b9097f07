package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// TestBootstrapACLRefusedBeforeRaft: once bootstrapped, a bootstrap (a
// public route) is refused from the state, before Raft, with the same
// bad_request as the FSM's; the FSM still refuses a second bootstrap
// write that got past that check (two bootstraps racing).
func TestBootstrapACLRefusedBeforeRaft(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.ACLEnabled = true })
	waitLeader(t, s)
	ctx := context.Background()
	boot, err := s.ACL().BootstrapACL(ctx)
	if err != nil || boot.Type != api.ACLTokenManagement {
		t.Fatalf("first bootstrap: %+v, %v", boot, err)
	}
	before := s.rs.raft.LastIndex()
	for i := range 200 {
		_, err := s.ACL().BootstrapACL(ctx)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.ErrBadRequest.Code || e.Status != 400 {
			t.Fatalf("bootstrap %d again: %v, want a 400 bad_request", i+1, err)
		}
		if !strings.Contains(e.Message, "ACL bootstrap already done") {
			t.Fatalf("bootstrap %d again: message %q, want it to say the bootstrap is done", i+1, e.Message)
		}
	}
	if got := s.rs.raft.LastIndex(); got != before {
		t.Fatalf("Raft last index %d after 200 refused bootstraps, want %d (unchanged)", got, before)
	}

	// A bootstrap write that passed the check before the first one
	// committed is refused by the FSM.
	late := &api.ACLToken{AccessorID: newID(), SecretID: newID(), Type: api.ACLTokenManagement}
	_, err = s.core.applyACL(ctx, &state.ACLWrite{Tokens: []*api.ACLToken{late}, Bootstrap: true})
	wantCode(t, err, api.ErrBadRequest.Code)
	if toks, _ := s.State().ACLTokens(nil); len(toks) != 1 || toks[0].AccessorID != boot.AccessorID {
		t.Fatalf("tokens after the racing bootstrap: %v, want only the first bootstrap's", toks)
	}
}
