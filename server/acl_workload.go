package server

import (
	"fmt"
	"slices"
	"strings"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// maxWorkloadTokenBytes bounds a secret tried as a workload identity.
const maxWorkloadTokenBytes = 16 << 10

// workloadClaims are the claims a workload identity is checked on.
type workloadClaims struct {
	jwt.Claims
	Namespace    string `json:"nomad_namespace"`
	JobID        string `json:"nomad_job_id"`
	AllocationID string `json:"nomad_allocation_id"`
	Task         string `json:"nomad_task"`
}

// workloadIdentity resolves a secret that is a task's default workload
// identity (a JWT signed by the keyring, for Nomad's audience, unexpired,
// of a live alloc) to the task it stands for. ok is false when the
// secret is not a JWT at all (the caller answers "token not found"); a
// JWT that fails a check is an error.
func (a *ACL) workloadIdentity(secret string) (*acl.Workload, bool, error) {
	if a.keys == nil || strings.Count(secret, ".") != 2 || len(secret) > maxWorkloadTokenBytes {
		return nil, false, nil
	}
	deny := func(why string) (*acl.Workload, bool, error) {
		return nil, true, api.Errorf(api.ErrPermissionDenied, "workload identity "+why)
	}
	tok, err := jwt.ParseSigned(secret, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(tok.Headers) != 1 {
		return nil, false, nil
	}
	key, err := a.keys.publicKey(tok.Headers[0].KeyID)
	if err != nil {
		return nil, true, err
	}
	if key == nil {
		return deny("signed by an unknown key")
	}
	var c workloadClaims
	if err := tok.Claims(key, &c); err != nil {
		return deny("signature invalid")
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Time: a.clock.Now()}, 0); err != nil {
		return deny(fmt.Sprintf("not valid: %v", err))
	}
	if !slices.Contains([]string(c.Audience), api.DefaultIdentityAudience) {
		return deny(fmt.Sprintf("is not for %q (only the default identity reads variables)", api.DefaultIdentityAudience))
	}
	alloc, err := a.state().AllocByID(nil, c.AllocationID)
	if err != nil {
		return nil, true, err
	}
	if alloc == nil || alloc.TerminalStatus() {
		return deny(fmt.Sprintf("of alloc %s, which is gone or stopped", c.AllocationID))
	}
	if alloc.Namespace != c.Namespace || alloc.JobID != c.JobID {
		return deny("does not match its alloc")
	}
	return &acl.Workload{Namespace: alloc.Namespace, JobID: alloc.JobID, Group: alloc.TaskGroup, Task: c.Task}, true, nil
}
