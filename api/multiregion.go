package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
)

// Multiregion on_failure values (MultiregionStrategy.OnFailure).
const (
	// MultiregionFailAll fails every region's deployment when one fails.
	MultiregionFailAll = "fail_all"
	// MultiregionFailLocal fails only the region whose deployment failed;
	// the others go on and wait, blocked, for an operator's unblock.
	MultiregionFailLocal = "fail_local"
	// MultiregionFailDefault ("") fails the failed region and every
	// region after it in order; those before it stay blocked.
	MultiregionFailDefault = ""
)

// DeploymentStatusPending is a multiregion deployment waiting for its
// region's turn (nothing of its version is placed meanwhile). Its
// sibling DeploymentStatusBlocked is one whose region has finished and
// waits for the last region to finish.
const DeploymentStatusPending = "pending"

// Multiregion is a job's multiregion block, as Nomad's: the job is
// registered in every region of Regions (each copy with the region's
// count, datacenters, node pool and meta) and deployed region by region
// as Strategy says.
type Multiregion struct {
	Strategy *MultiregionStrategy `json:"Strategy,omitempty"`
	// Regions in rollout order.
	Regions []*MultiregionRegion `json:"Regions"`
}

// MultiregionStrategy is the rollout across regions.
type MultiregionStrategy struct {
	// MaxParallel is how many regions deploy at a time (0: all).
	MaxParallel int `json:"MaxParallel,omitempty"`
	// OnFailure is MultiregionFailAll, MultiregionFailLocal or "".
	OnFailure string `json:"OnFailure,omitempty"`
}

// MultiregionRegion is one region's parameters: Count replaces the count
// of every group that asks for 0; Datacenters, NodePool (when set)
// replace the job's; Meta is merged over the job's.
type MultiregionRegion struct {
	Name        string            `json:"Name"`
	Count       int               `json:"Count,omitempty"`
	Datacenters []string          `json:"Datacenters,omitempty"`
	NodePool    string            `json:"NodePool,omitempty"`
	Meta        map[string]string `json:"Meta,omitempty"`
}

// Validate checks a multiregion block (nil is valid: one region).
func (m *Multiregion) Validate() error {
	if m == nil {
		return nil
	}
	var errs []error
	if len(m.Regions) == 0 {
		errs = append(errs, errors.New("regions: name at least one region"))
	}
	seen := map[string]bool{}
	for i, r := range m.Regions {
		switch {
		case r == nil || r.Name == "":
			errs = append(errs, fmt.Errorf("region %d has no name", i))
			continue
		case seen[r.Name]:
			errs = append(errs, fmt.Errorf("region %q is listed twice", r.Name))
		case r.Count < 0:
			errs = append(errs, fmt.Errorf("region %q: count %d must not be negative", r.Name, r.Count))
		}
		seen[r.Name] = true
		if slices.Contains(r.Datacenters, "") {
			errs = append(errs, fmt.Errorf("region %q: empty datacenter name", r.Name))
		}
	}
	if s := m.Strategy; s != nil {
		if s.MaxParallel < 0 {
			errs = append(errs, fmt.Errorf("strategy: max_parallel %d must not be negative", s.MaxParallel))
		}
		switch s.OnFailure {
		case MultiregionFailAll, MultiregionFailLocal, MultiregionFailDefault:
		default:
			errs = append(errs, fmt.Errorf("strategy: on_failure %q: want %q, %q or \"\"", s.OnFailure, MultiregionFailAll, MultiregionFailLocal))
		}
	}
	return errors.Join(errs...)
}

// Region returns the named region's parameters, or nil.
func (m *Multiregion) Region(name string) *MultiregionRegion {
	if m == nil {
		return nil
	}
	for _, r := range m.Regions {
		if r != nil && r.Name == name {
			return r
		}
	}
	return nil
}

// Names are the regions in rollout order.
func (m *Multiregion) Names() []string {
	if m == nil {
		return nil
	}
	out := make([]string, 0, len(m.Regions))
	for _, r := range m.Regions {
		if r != nil {
			out = append(out, r.Name)
		}
	}
	return out
}

// ForRegion is the copy of a multiregion job that region runs: Region
// set, the region block's datacenters and node pool (when set) in place
// of the job's, its meta merged over the job's, and its count for every
// group that asks for 0 (Nomad's rules). The multiregion block stays.
func (j *Job) ForRegion(region string) *Job {
	c := j.Copy()
	c.Region = region
	r := c.Multiregion.Region(region)
	if r == nil {
		return c
	}
	if len(r.Datacenters) > 0 {
		c.Datacenters = slices.Clone(r.Datacenters)
	}
	if r.NodePool != "" {
		c.NodePool = r.NodePool
	}
	if len(r.Meta) > 0 {
		if c.Meta == nil {
			c.Meta = map[string]string{}
		}
		maps.Copy(c.Meta, r.Meta)
	}
	for _, tg := range c.TaskGroups {
		if tg != nil && tg.Count == 0 {
			tg.Count = r.Count
		}
	}
	return c
}

// UnblockDeployment marks a blocked deployment of a multiregion job
// successful (POST /v1/deployment/unblock/{id}, as Nomad's): what the
// last region to finish does for the others, or an operator after a
// failure elsewhere.
func (c *Client) UnblockDeployment(ctx context.Context, id string) (*DeploymentUpdateResponse, error) {
	var out DeploymentUpdateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/deployment/unblock/"+esc(id), nil, &out, nil)
}

// RunDeployment starts a pending deployment of a multiregion job (POST
// /v1/deployment/run/{id}): its region's turn has come.
func (c *Client) RunDeployment(ctx context.Context, id string) (*DeploymentUpdateResponse, error) {
	var out DeploymentUpdateResponse
	return &out, c.Write(ctx, http.MethodPost, "/v1/deployment/run/"+esc(id), nil, &out, nil)
}
