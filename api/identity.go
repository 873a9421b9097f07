package api

import (
	"context"
	"net/http"
	"time"
)

// DefaultIdentityName and DefaultIdentityAudience are Nomad's for a
// task's default workload identity.
const (
	DefaultIdentityName     = "default"
	DefaultIdentityAudience = "nomadproject.io"
)

// WorkloadIdentity is a task's identity block: a JWT signed by the
// servers' keyring, exposed in the task's secrets dir and/or env.
type WorkloadIdentity struct {
	Name     string        `json:"Name"`
	Audience []string      `json:"Audience,omitempty"`
	Env      bool          `json:"Env"`
	File     bool          `json:"File"`
	Filepath string        `json:"Filepath,omitempty"`
	TTL      time.Duration `json:"TTL,omitempty"`
}

// TokenFile is the file (relative to the task dir) the identity's token
// is written to: secrets/nomad_token for the default identity,
// secrets/nomad_<name>.jwt for the others, or Filepath.
func (w *WorkloadIdentity) TokenFile() string {
	switch {
	case w.Filepath != "":
		return w.Filepath
	case w.Name == "" || w.Name == DefaultIdentityName:
		return "secrets/nomad_token"
	}
	return "secrets/nomad_" + w.Name + ".jwt"
}

// EnvVar is the variable the identity's token is set in.
func (w *WorkloadIdentity) EnvVar() string {
	if w.Name == "" || w.Name == DefaultIdentityName {
		return "NOMAD_TOKEN"
	}
	return "NOMAD_TOKEN_" + w.Name
}

// TaskIdentities are the identities a task has: its default one (always)
// and its named ones.
func (t *Task) TaskIdentities() []*WorkloadIdentity {
	def := t.Identity
	if def == nil {
		def = &WorkloadIdentity{Name: DefaultIdentityName}
	}
	return append([]*WorkloadIdentity{def}, t.Identities...)
}

// IdentityClaims are the claims of a workload identity token (Nomad's).
type IdentityClaims struct {
	Subject      string   `json:"sub"`
	Audience     []string `json:"aud,omitempty"`
	IssuedAt     int64    `json:"iat"`
	NotBefore    int64    `json:"nbf"`
	Expiry       int64    `json:"exp,omitempty"`
	ID           string   `json:"jti"`
	Issuer       string   `json:"iss,omitempty"`
	Namespace    string   `json:"nomad_namespace"`
	JobID        string   `json:"nomad_job_id"`
	AllocationID string   `json:"nomad_allocation_id"`
	Task         string   `json:"nomad_task"`
}

// TaskIdentityRequest asks the servers to sign a task's identities
// (client -> server, PUT /v1/node/{id}/identities with NodeSecretHeader).
type TaskIdentityRequest struct {
	AllocID string `json:"AllocID"`
	Task    string `json:"Task"`
}

// SignedIdentity is one signed token.
type SignedIdentity struct {
	Name  string `json:"Name"`
	Token string `json:"Token"`
	// Expiration is zero for a token without a TTL.
	Expiration time.Time `json:"Expiration"`
}

// TaskIdentityResponse carries every identity of the task.
type TaskIdentityResponse struct {
	Identities []*SignedIdentity `json:"Identities"`
}

// RootKeyMeta describes a key of the servers' keyring (no key material).
type RootKeyMeta struct {
	KeyID      string `json:"KeyID"`
	Algorithm  string `json:"Algorithm"`
	State      string `json:"State"` // active, inactive
	CreateTime int64  `json:"CreateTime"`
}

// SignIdentities asks the servers for a task's identity tokens; c.Headers
// must carry NodeSecretHeader.
func (c *Client) SignIdentities(ctx context.Context, nodeID string, req *TaskIdentityRequest) (*TaskIdentityResponse, error) {
	var out TaskIdentityResponse
	return &out, c.Write(ctx, http.MethodPut, "/v1/node/"+esc(nodeID)+"/identities", req, &out, nil)
}
