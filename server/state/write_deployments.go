package state

import (
	"fmt"
	"time"

	"github.com/drover/drover/api"
)

// DeploymentUpdateRequest is one deployment watcher or operator step,
// committed atomically (the FSM's DeploymentUpdate body): alloc health
// verdicts, a status change, group promotions, a job version marked
// stable, a job re-registered (auto-revert) and evals.
type DeploymentUpdateRequest struct {
	DeploymentID string `json:"DeploymentID"`
	// Status and StatusDescription replace the deployment's when Status
	// is set.
	Status            string `json:"Status,omitempty"`
	StatusDescription string `json:"StatusDescription,omitempty"`
	// HealthyAllocs and UnhealthyAllocs get DeploymentStatus.Healthy set
	// (Timestamp = Time), unless they already have a verdict.
	HealthyAllocs   []string  `json:"HealthyAllocs,omitempty"`
	UnhealthyAllocs []string  `json:"UnhealthyAllocs,omitempty"`
	Time            time.Time `json:"Time"`
	// PromoteGroups get Promoted set ("*" alone: every group with canaries).
	PromoteGroups []string `json:"PromoteGroups,omitempty"`
	// RequireProgressBy sets the groups' RequireProgressBy (UnixNano)
	// when non-zero.
	RequireProgressBy int64 `json:"RequireProgressBy,omitempty"`
	// StableVersion, when set, marks that version of the deployment's job
	// stable.
	StableVersion *uint64 `json:"StableVersion,omitempty"`
	// Job is registered as a new version (auto-revert to a stable one).
	Job *api.Job `json:"Job,omitempty"`
	// Evals are created with the update.
	Evals []*api.Evaluation `json:"Evals,omitempty"`
}

// UpdateDeployment applies a DeploymentUpdateRequest. A missing deployment
// is api.ErrDeploymentNotFound. The deployment's counters (PlacedAllocs,
// HealthyAllocs, UnhealthyAllocs) are recomputed from its allocs.
func (t *Txn) UpdateDeployment(req *DeploymentUpdateRequest) error {
	if req == nil || req.DeploymentID == "" {
		return fmt.Errorf("update deployment: missing ID: %w", api.ErrBadRequest)
	}
	d, err := txnFirst[api.Deployment](t, TableDeployments, "id", req.DeploymentID)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("deployment %q: %w", req.DeploymentID, api.ErrDeploymentNotFound)
	}
	verdict := func(ids []string, healthy bool) error {
		for _, id := range ids {
			old, err := t.allocByID(id)
			if err != nil {
				return err
			}
			if old == nil || old.DeploymentID != d.ID {
				continue
			}
			if old.DeploymentStatus != nil && old.DeploymentStatus.Healthy != nil {
				continue // a verdict is final
			}
			c := *old
			ds := api.AllocDeploymentStatus{}
			if old.DeploymentStatus != nil {
				ds = *old.DeploymentStatus
			}
			h := healthy
			ds.Healthy, ds.Timestamp, ds.ModifyIndex = &h, req.Time, t.index
			c.DeploymentStatus = &ds
			c.ModifyIndex = t.index
			if err := t.putAlloc(old, &c, "AllocationUpdated"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := verdict(req.HealthyAllocs, true); err != nil {
		return err
	}
	if err := verdict(req.UnhealthyAllocs, false); err != nil {
		return err
	}
	c := copyDeployment(d)
	if req.Status != "" {
		c.Status, c.StatusDescription = req.Status, req.StatusDescription
	}
	for _, g := range req.PromoteGroups {
		for name, st := range c.TaskGroups {
			if (g == "*" && st.DesiredCanaries > 0) || g == name {
				st.Promoted = true
			}
		}
	}
	if req.RequireProgressBy != 0 {
		for _, st := range c.TaskGroups {
			st.RequireProgressBy = req.RequireProgressBy
		}
	}
	if err := t.countDeployment(c); err != nil {
		return err
	}
	c.ModifyIndex = t.index
	if err := t.putDeployment(c); err != nil {
		return err
	}
	if req.StableVersion != nil {
		if err := t.SetJobStable(d.Namespace, d.JobID, *req.StableVersion, true); err != nil {
			return err
		}
	}
	if req.Job != nil {
		if err := t.UpsertJob(req.Job); err != nil {
			return err
		}
	}
	return t.UpsertEvals(req.Evals)
}

func copyDeployment(d *api.Deployment) *api.Deployment {
	c := *d
	c.TaskGroups = make(map[string]*api.DeploymentState, len(d.TaskGroups))
	for k, v := range d.TaskGroups {
		if v == nil {
			continue
		}
		vc := *v
		vc.PlacedCanaries = append([]string(nil), v.PlacedCanaries...)
		c.TaskGroups[k] = &vc
	}
	return &c
}

// countDeployment recomputes each group's PlacedAllocs, HealthyAllocs and
// UnhealthyAllocs from the deployment's allocs.
func (t *Txn) countDeployment(d *api.Deployment) error {
	allocs, err := txnList[api.Allocation](t, TableAllocs, "deployment", d.ID)
	if err != nil {
		return err
	}
	for _, st := range d.TaskGroups {
		st.PlacedAllocs, st.HealthyAllocs, st.UnhealthyAllocs = 0, 0, 0
	}
	for _, a := range allocs {
		st := d.TaskGroups[a.TaskGroup]
		if st == nil {
			continue
		}
		st.PlacedAllocs++
		if ds := a.DeploymentStatus; ds != nil && ds.Healthy != nil {
			if *ds.Healthy {
				st.HealthyAllocs++
			} else {
				st.UnhealthyAllocs++
			}
		}
	}
	return nil
}

// mergePlanDeployment prepares a plan's copy of a deployment for storage:
// what the leader changed since the scheduler's snapshot wins (a terminal
// status, promotions, progress deadlines) and the counters are recomputed
// from the allocs (call it after the plan's allocs are stored).
func (t *Txn) mergePlanDeployment(id string) error {
	d, err := txnFirst[api.Deployment](t, TableDeployments, "id", id)
	if err != nil || d == nil {
		return err
	}
	c := copyDeployment(d)
	if err := t.countDeployment(c); err != nil {
		return err
	}
	same := true
	for k, st := range c.TaskGroups {
		o := d.TaskGroups[k]
		if o.PlacedAllocs != st.PlacedAllocs || o.HealthyAllocs != st.HealthyAllocs || o.UnhealthyAllocs != st.UnhealthyAllocs {
			same = false
		}
	}
	if same {
		return nil
	}
	c.ModifyIndex = t.index
	return t.putDeployment(c)
}

// keepLeaderDeploymentFields copies onto a plan's deployment d what the
// stored one (old) decided after the scheduler's snapshot was taken.
func keepLeaderDeploymentFields(old, d *api.Deployment) {
	if old == nil {
		return
	}
	// The scheduler creates deployments as running; status changes of a
	// stored one come through DeploymentUpdates or the leader.
	d.Status, d.StatusDescription = old.Status, old.StatusDescription
	for k, st := range d.TaskGroups {
		o := old.TaskGroups[k]
		if o == nil || st == nil {
			continue
		}
		st.Promoted = st.Promoted || o.Promoted
		if o.RequireProgressBy > st.RequireProgressBy {
			st.RequireProgressBy = o.RequireProgressBy
		}
	}
}
