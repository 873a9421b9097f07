package api

import (
	"context"
	"net/http"
)

// Deployment statuses.
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
	DeploymentStatusBlocked    = "blocked"
)

// Deployment tracks a rolling update of a service job version.
type Deployment struct {
	ID                 string                      `json:"ID"`
	Namespace          string                      `json:"Namespace"`
	JobID              string                      `json:"JobID"`
	JobVersion         uint64                      `json:"JobVersion"`
	JobModifyIndex     uint64                      `json:"JobModifyIndex"`
	JobSpecModifyIndex uint64                      `json:"JobSpecModifyIndex"`
	JobCreateIndex     uint64                      `json:"JobCreateIndex"`
	TaskGroups         map[string]*DeploymentState `json:"TaskGroups"`
	Status             string                      `json:"Status"`
	StatusDescription  string                      `json:"StatusDescription"`
	CreateIndex        uint64                      `json:"CreateIndex"`
	ModifyIndex        uint64                      `json:"ModifyIndex"`
}

// Active reports whether the deployment is still in progress.
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusBlocked, DeploymentStatusPending:
		return true
	}
	return false
}

// DeploymentState is one group's progress.
type DeploymentState struct {
	AutoRevert        bool     `json:"AutoRevert"`
	AutoPromote       bool     `json:"AutoPromote"`
	ProgressDeadline  int64    `json:"ProgressDeadline"`
	RequireProgressBy int64    `json:"RequireProgressBy"`
	Promoted          bool     `json:"Promoted"`
	PlacedCanaries    []string `json:"PlacedCanaries,omitempty"`
	DesiredCanaries   int      `json:"DesiredCanaries"`
	DesiredTotal      int      `json:"DesiredTotal"`
	PlacedAllocs      int      `json:"PlacedAllocs"`
	HealthyAllocs     int      `json:"HealthyAllocs"`
	UnhealthyAllocs   int      `json:"UnhealthyAllocs"`
}

// DeploymentStatusUpdate changes a deployment's status in a plan.
type DeploymentStatusUpdate struct {
	DeploymentID      string `json:"DeploymentID"`
	Status            string `json:"Status"`
	StatusDescription string `json:"StatusDescription"`
}

// DeploymentPromoteRequest is the body of POST /v1/deployment/promote/{id}:
// All promotes every group with canaries, else the named Groups.
type DeploymentPromoteRequest struct {
	DeploymentID string   `json:"DeploymentID,omitempty"`
	All          bool     `json:"All,omitempty"`
	Groups       []string `json:"Groups,omitempty"`
}

// DeploymentPauseRequest is the body of POST /v1/deployment/pause/{id}.
type DeploymentPauseRequest struct {
	DeploymentID string `json:"DeploymentID,omitempty"`
	Pause        bool   `json:"Pause"`
}

// DeploymentUpdateResponse answers the deployment write endpoints.
type DeploymentUpdateResponse struct {
	EvalID                string `json:"EvalID,omitempty"`
	EvalCreateIndex       uint64 `json:"EvalCreateIndex,omitempty"`
	DeploymentModifyIndex uint64 `json:"DeploymentModifyIndex"`
	// RevertedJobVersion is the stable version registered again by an
	// auto-revert, if any.
	RevertedJobVersion *uint64 `json:"RevertedJobVersion,omitempty"`
	Index              uint64  `json:"Index"`
}

// Deployments lists deployments (GET /v1/deployments).
func (c *Client) Deployments(ctx context.Context, o *QueryOptions) ([]*Deployment, *QueryMeta, error) {
	var out []*Deployment
	m, err := c.Query(ctx, "/v1/deployments", &out, o)
	return out, m, err
}

// Deployment reads one deployment (GET /v1/deployment/{id}).
func (c *Client) Deployment(ctx context.Context, id string, o *QueryOptions) (*Deployment, *QueryMeta, error) {
	var out Deployment
	m, err := c.Query(ctx, "/v1/deployment/"+esc(id), &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, m, nil
}

// JobDeployments lists a job's deployments, newest first.
func (c *Client) JobDeployments(ctx context.Context, jobID string, o *QueryOptions) ([]*Deployment, *QueryMeta, error) {
	var out []*Deployment
	m, err := c.Query(ctx, "/v1/job/"+esc(jobID)+"/deployments", &out, o)
	return out, m, err
}

// JobLatestDeployment reads a job's newest deployment (nil when the job
// has none).
func (c *Client) JobLatestDeployment(ctx context.Context, jobID string, o *QueryOptions) (*Deployment, *QueryMeta, error) {
	var out *Deployment
	m, err := c.Query(ctx, "/v1/job/"+esc(jobID)+"/deployment", &out, o)
	return out, m, err
}

// PromoteDeployment promotes canaries: every group when groups is empty.
func (c *Client) PromoteDeployment(ctx context.Context, id string, groups []string) (*DeploymentUpdateResponse, error) {
	var out DeploymentUpdateResponse
	req := &DeploymentPromoteRequest{DeploymentID: id, All: len(groups) == 0, Groups: groups}
	return &out, c.Write(ctx, http.MethodPost, "/v1/deployment/promote/"+esc(id), req, &out, nil)
}

// FailDeployment marks an active deployment failed.
func (c *Client) FailDeployment(ctx context.Context, id string) (*DeploymentUpdateResponse, error) {
	var out DeploymentUpdateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/deployment/fail/"+esc(id), nil, &out, nil)
}

// PauseDeployment pauses (true) or resumes (false) an active deployment.
func (c *Client) PauseDeployment(ctx context.Context, id string, pause bool) (*DeploymentUpdateResponse, error) {
	var out DeploymentUpdateResponse
	req := &DeploymentPauseRequest{DeploymentID: id, Pause: pause}
	return &out, c.Write(ctx, http.MethodPost, "/v1/deployment/pause/"+esc(id), req, &out, nil)
}
