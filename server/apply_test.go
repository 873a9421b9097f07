package server

import (
	"context"
	"errors"
	"testing"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/state"
)

// TestApplyRejectionIsTheStatesReason: a command the state refuses
// answers with the state's own error, not framed by the Raft command's
// name and index (issue 47: "ACLWrite: apply ACLWrite at 6: ...").
func TestApplyRejectionIsTheStatesReason(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.ACLEnabled = true })
	waitLeader(t, s)
	ctx := context.Background()
	if _, err := s.ACL().BootstrapACL(ctx); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	late := &api.ACLToken{AccessorID: newID(), SecretID: newID(), Type: api.ACLTokenManagement}
	for _, tc := range []struct {
		name    string
		apply   func() error
		want    string
		wantErr error
	}{
		{"acl bootstrap again", func() error {
			_, err := s.core.applyACL(ctx, &state.ACLWrite{Tokens: []*api.ACLToken{late}, Bootstrap: true})
			return err
		}, "ACL bootstrap already done", api.ErrBadRequest},
		{"deregister a missing job", func() error {
			_, err := s.core.applyJobDeregister(ctx, api.DefaultNamespace, "nope", false, 0, nil)
			return err
		}, `stop job "nope": job not found`, api.ErrJobNotFound},
	} {
		err := tc.apply()
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: message = %v, want %q", tc.name, err, tc.want)
		}
		if got := api.AsError(err).Message; got != tc.want {
			t.Errorf("%s: API message = %q, want %q", tc.name, got, tc.want)
		}
	}
}
