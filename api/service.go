package api

import (
	"context"
	"net/http"
)

// ServiceProviderNomad is the native service provider (Nomad's
// provider = "nomad"): registrations kept by the servers.
const ServiceProviderNomad = "nomad"

// Health of a service registration, from its checks (drover addition).
const (
	ServiceHealthPassing  = "passing"
	ServiceHealthWarning  = "warning"
	ServiceHealthCritical = "critical"
)

// ServiceRegistration is one instance of a native service, as Nomad's
// /v1/service/{name} lists it. The client of the alloc's node writes it;
// the servers delete it with its alloc when the alloc stops.
type ServiceRegistration struct {
	ID          string   `json:"ID"`
	ServiceName string   `json:"ServiceName"`
	Namespace   string   `json:"Namespace"`
	NodeID      string   `json:"NodeID"`
	Datacenter  string   `json:"Datacenter"`
	JobID       string   `json:"JobID"`
	AllocID     string   `json:"AllocID"`
	Tags        []string `json:"Tags,omitempty"`
	Address     string   `json:"Address"`
	Port        int      `json:"Port"`
	// Health is the worst status of the service's checks; empty when it
	// has none (counted as passing). Drover addition.
	Health string `json:"Health,omitempty"`
	// HealthTime is when Health last changed (Unix nanoseconds; drover
	// addition): deployments count min_healthy_time from it.
	HealthTime  int64  `json:"HealthTime,omitempty"`
	CreateIndex uint64 `json:"CreateIndex"`
	ModifyIndex uint64 `json:"ModifyIndex"`
}

// ServiceRegistrationID is the ID of the registration of service name
// (port label port) of an alloc's task, or of its group when task is ""
// (Nomad's form: _nomad-task-<alloc>-<task or group-NAME>-<service>-<port>).
func ServiceRegistrationID(allocID, group, task, name, port string) string {
	owner := "group-" + group
	if task != "" {
		owner = task
	}
	return "_nomad-task-" + allocID + "-" + owner + "-" + name + "-" + port
}

// ServiceName is the name a service registers under: its own, or
// <job>-<group>[-<task>] when it has none (as Nomad).
func ServiceName(s *Service, jobID, group, task string) string {
	if s.Name != "" {
		return s.Name
	}
	if task == "" {
		return jobID + "-" + group
	}
	return jobID + "-" + group + "-" + task
}

// Passing reports whether the instance should receive traffic.
func (r *ServiceRegistration) Passing() bool {
	return r.Health == "" || r.Health == ServiceHealthPassing
}

// ServiceRegistrationListStub is one service of GET /v1/services.
type ServiceRegistrationListStub struct {
	ServiceName string   `json:"ServiceName"`
	Tags        []string `json:"Tags"`
}

// ServiceRegistrationListStubs groups the services of a namespace.
type ServiceRegistrationListStubs struct {
	Namespace string                         `json:"Namespace"`
	Services  []*ServiceRegistrationListStub `json:"Services"`
}

// NodeServicesRequest is the body of PUT /v1/node/{id}/services (client ->
// server, with NodeSecretHeader): registrations to write and IDs to delete,
// all of allocs on that node.
type NodeServicesRequest struct {
	Upserts []*ServiceRegistration `json:"Upserts,omitempty"`
	Deletes []string               `json:"Deletes,omitempty"`
}

// NodeServicesResponse answers a NodeServicesRequest.
type NodeServicesResponse struct {
	Index uint64 `json:"Index"`
}

// Services lists the native services (GET /v1/services).
func (c *Client) Services(ctx context.Context, o *QueryOptions) ([]*ServiceRegistrationListStubs, *QueryMeta, error) {
	var out []*ServiceRegistrationListStubs
	qm, err := c.Query(ctx, "/v1/services", &out, o)
	return out, qm, err
}

// Service lists the instances of one service (GET /v1/service/{name}).
func (c *Client) Service(ctx context.Context, name string, o *QueryOptions) ([]*ServiceRegistration, *QueryMeta, error) {
	var out []*ServiceRegistration
	qm, err := c.Query(ctx, "/v1/service/"+esc(name), &out, o)
	return out, qm, err
}

// DeleteServiceRegistration removes one instance (DELETE /v1/service/{name}/{id}).
func (c *Client) DeleteServiceRegistration(ctx context.Context, name, id string, o *WriteOptions) error {
	return c.Write(ctx, http.MethodDelete, "/v1/service/"+esc(name)+"/"+esc(id), nil, nil, o)
}

// UpdateNodeServices writes and deletes the registrations of a node's
// allocs; c.Headers must carry NodeSecretHeader.
func (c *Client) UpdateNodeServices(ctx context.Context, nodeID string, req *NodeServicesRequest) (*NodeServicesResponse, error) {
	var out NodeServicesResponse
	return &out, c.Write(ctx, http.MethodPut, "/v1/node/"+esc(nodeID)+"/services", req, &out, nil)
}

// Check result statuses, as Nomad's /v1/client/allocation/{id}/checks.
const (
	CheckPending = "pending"
	CheckSuccess = "success"
	CheckFailure = "failure"
)

// CheckResult is the latest result of one check of an alloc's service
// (Nomad's CheckQueryResult, plus Health: passing, warning or critical).
type CheckResult struct {
	ID         string `json:"ID"`
	Mode       string `json:"Mode"` // healthiness
	Status     string `json:"Status"`
	Health     string `json:"Health"`
	StatusCode int    `json:"StatusCode,omitempty"`
	Output     string `json:"Output"`
	Timestamp  int64  `json:"Timestamp"` // Unix seconds
	Group      string `json:"Group"`
	Task       string `json:"Task,omitempty"`
	Service    string `json:"Service"`
	Check      string `json:"Check"`
}

// AllocChecks returns the latest check results of an alloc, by check ID,
// from its node (GET /v1/client/allocation/{id}/checks).
func (c *Client) AllocChecks(ctx context.Context, allocID string, o *QueryOptions) (map[string]*CheckResult, error) {
	out := map[string]*CheckResult{}
	_, err := c.Query(ctx, "/v1/client/allocation/"+esc(allocID)+"/checks", &out, o)
	return out, err
}

// AllocServices lists the service registrations of an alloc
// (GET /v1/allocation/{id}/services).
func (c *Client) AllocServices(ctx context.Context, allocID string, o *QueryOptions) ([]*ServiceRegistration, error) {
	var out []*ServiceRegistration
	_, err := c.Query(ctx, "/v1/allocation/"+esc(allocID)+"/services", &out, o)
	return out, err
}
