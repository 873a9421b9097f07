package api

import (
	"context"
	"net/http"
)

// DispatchPayloadSizeLimit bounds a dispatched job's payload (as Nomad).
const DispatchPayloadSizeLimit = 16 * 1024

// JobDispatchRequest is the body of POST /v1/job/{id}/dispatch: it runs a
// parameterized job once with a payload and meta.
type JobDispatchRequest struct {
	JobID   string            `json:"JobID,omitempty"`
	Payload []byte            `json:"Payload,omitempty"`
	Meta    map[string]string `json:"Meta,omitempty"`
	// IdPrefixTemplate, when set, goes into the child's ID after
	// "dispatch-" (Nomad's -id-prefix-template).
	IdPrefixTemplate string `json:"IdPrefixTemplate,omitempty"`
}

// JobDispatchResponse answers a dispatch.
type JobDispatchResponse struct {
	DispatchedJobID string `json:"DispatchedJobID"`
	EvalID          string `json:"EvalID"`
	EvalCreateIndex uint64 `json:"EvalCreateIndex"`
	JobCreateIndex  uint64 `json:"JobCreateIndex"`
	Index           uint64 `json:"Index"`
}

// PeriodicForceResponse answers POST /v1/job/{id}/periodic/force.
type PeriodicForceResponse struct {
	EvalID          string `json:"EvalID"`
	EvalCreateIndex uint64 `json:"EvalCreateIndex"`
	Index           uint64 `json:"Index"`
	// DispatchedJobID is the launched child (drover addition).
	DispatchedJobID string `json:"DispatchedJobID,omitempty"`
}

// JobRevertRequest is the body of POST /v1/job/{id}/revert.
type JobRevertRequest struct {
	JobID      string `json:"JobID,omitempty"`
	JobVersion uint64 `json:"JobVersion"`
	// EnforcePriorVersion, when set, reverts only while the job's
	// current version is this one.
	EnforcePriorVersion *uint64 `json:"EnforcePriorVersion,omitempty"`
}

// ScalingTarget names what a scale request changes.
type ScalingTarget = map[string]string

// JobScaleRequest is the body of POST /v1/job/{id}/scale.
type JobScaleRequest struct {
	// Target holds "Group" (and optionally "Namespace", "Job").
	Target         ScalingTarget  `json:"Target"`
	Count          *int64         `json:"Count,omitempty"`
	Message        string         `json:"Message,omitempty"`
	Error          bool           `json:"Error,omitempty"`
	Meta           map[string]any `json:"Meta,omitempty"`
	PolicyOverride bool           `json:"PolicyOverride,omitempty"`
}

// JobScaleStatus answers GET /v1/job/{id}/scale.
type JobScaleStatus struct {
	JobID          string                          `json:"JobID"`
	Namespace      string                          `json:"Namespace"`
	JobCreateIndex uint64                          `json:"JobCreateIndex"`
	JobModifyIndex uint64                          `json:"JobModifyIndex"`
	JobStopped     bool                            `json:"JobStopped"`
	TaskGroups     map[string]TaskGroupScaleStatus `json:"TaskGroups"`
}

// TaskGroupScaleStatus is one group's desired and actual counts.
type TaskGroupScaleStatus struct {
	Desired   int `json:"Desired"`
	Placed    int `json:"Placed"`
	Running   int `json:"Running"`
	Healthy   int `json:"Healthy"`
	Unhealthy int `json:"Unhealthy"`
}

// DispatchJob runs a parameterized job once.
func (c *Client) DispatchJob(ctx context.Context, id string, req *JobDispatchRequest, o *WriteOptions) (*JobDispatchResponse, error) {
	var out JobDispatchResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/job/"+esc(id)+"/dispatch", req, &out, o)
}

// ForcePeriodic launches a periodic job's child now.
func (c *Client) ForcePeriodic(ctx context.Context, id string, o *WriteOptions) (*PeriodicForceResponse, error) {
	var out PeriodicForceResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/job/"+esc(id)+"/periodic/force", struct{}{}, &out, o)
}

// RevertJob registers an earlier version of a job again.
func (c *Client) RevertJob(ctx context.Context, id string, req *JobRevertRequest, o *WriteOptions) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/job/"+esc(id)+"/revert", req, &out, o)
}

// ScaleJob sets a group's count.
func (c *Client) ScaleJob(ctx context.Context, id string, req *JobScaleRequest, o *WriteOptions) (*JobRegisterResponse, error) {
	var out JobRegisterResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/job/"+esc(id)+"/scale", req, &out, o)
}

// JobScaleStatus reads a job's per-group counts.
func (c *Client) JobScaleStatus(ctx context.Context, id string, o *QueryOptions) (*JobScaleStatus, *QueryMeta, error) {
	var out JobScaleStatus
	m, err := c.Query(ctx, "/v1/job/"+esc(id)+"/scale", &out, o)
	return &out, m, err
}
