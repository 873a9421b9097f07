package state

import (
	"fmt"

	"github.com/drover/drover/api"
)

// UpsertEvals stores evaluations.
func (s *StateStore) UpsertEvals(index uint64, evals []*api.Evaluation) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertEvals(evals) })
}

// DeleteEvals garbage-collects evaluations and allocations.
func (s *StateStore) DeleteEvals(index uint64, evalIDs, allocIDs []string) error {
	return s.Write(index, func(t *Txn) error { return t.DeleteEvals(evalIDs, allocIDs) })
}

// UpsertDeployment stores a deployment.
func (s *StateStore) UpsertDeployment(index uint64, d *api.Deployment) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertDeployment(d) })
}

func mergeTransition(dst, src *api.DesiredTransition) {
	if src.Migrate != nil {
		dst.Migrate = src.Migrate
	}
	if src.Reschedule != nil {
		dst.Reschedule = src.Reschedule
	}
	if src.ForceReschedule != nil {
		dst.ForceReschedule = src.ForceReschedule
	}
}

// UpsertEvals stores evals (taking ownership): CreateIndex is kept for an
// existing eval, ModifyIndex set. A terminal or blocked eval carrying
// QueuedAllocations sets the job summary's Queued counts.
func (t *Txn) UpsertEvals(evals []*api.Evaluation) error {
	for _, e := range evals {
		if e == nil || e.ID == "" {
			return fmt.Errorf("upsert eval: missing ID: %w", api.ErrBadRequest)
		}
		e.Namespace = normNS(e.Namespace)
		existing, err := txnFirst[api.Evaluation](t, TableEvals, "id", e.ID)
		if err != nil {
			return err
		}
		if existing != nil {
			e.CreateIndex = existing.CreateIndex
			if e.CreateTime == 0 {
				e.CreateTime = existing.CreateTime
			}
		} else {
			e.CreateIndex = t.index
		}
		e.ModifyIndex = t.index
		if err := t.insert(TableEvals, e); err != nil {
			return err
		}
		if e.JobID != "" {
			t.touchJob(e.Namespace, e.JobID)
			if e.QueuedAllocations != nil && (e.TerminalStatus() || e.Status == api.EvalStatusBlocked) {
				if err := t.setQueued(e); err != nil {
					return err
				}
			}
		}
		t.emit(api.Event{Topic: api.TopicEvaluation, Type: "EvaluationUpdated", Key: e.ID, Namespace: e.Namespace,
			FilterKeys: filterKeys(e.JobID, e.DeploymentID), Payload: map[string]any{"Evaluation": e}})
	}
	return nil
}

func (t *Txn) setQueued(e *api.Evaluation) error {
	sum, err := t.summary(e.Namespace, e.JobID)
	if err != nil || sum == nil {
		return err
	}
	for tg, n := range e.QueuedAllocations {
		s := sum.Summary[tg]
		s.Queued = n
		sum.Summary[tg] = s
	}
	return nil
}

// DeleteEvals removes evals and allocs by ID (garbage collection); missing
// IDs are ignored. Job summaries keep their counts.
func (t *Txn) DeleteEvals(evalIDs, allocIDs []string) error {
	for _, id := range evalIDs {
		e, err := txnFirst[api.Evaluation](t, TableEvals, "id", id)
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		if err := t.delete(TableEvals, e); err != nil {
			return err
		}
		if e.JobID != "" {
			t.touchJob(e.Namespace, e.JobID).evalDelete = true
		}
		t.emit(api.Event{Topic: api.TopicEvaluation, Type: "EvaluationDeleted", Key: e.ID, Namespace: e.Namespace,
			FilterKeys: filterKeys(e.JobID, e.DeploymentID), Payload: map[string]any{"Evaluation": e}})
	}
	for _, id := range allocIDs {
		a, err := t.allocByID(id)
		if err != nil {
			return err
		}
		if a == nil {
			continue
		}
		if err := t.deleteAllocServices(a.ID); err != nil {
			return err
		}
		if err := t.delete(TableAllocs, a); err != nil {
			return err
		}
		t.allocsDeleted = true
		t.countQueue(a, -1)
		if err := t.untrackUsage(a); err != nil {
			return err
		}
		t.touchJob(a.Namespace, a.JobID)
		t.emit(allocEvent("AllocationDeleted", a))
	}
	return nil
}

// UpsertDeployment stores d (taking ownership); CreateIndex is kept for an
// existing deployment.
func (t *Txn) UpsertDeployment(d *api.Deployment) error {
	if d == nil || d.ID == "" || d.JobID == "" {
		return fmt.Errorf("upsert deployment: missing ID or job ID: %w", api.ErrBadRequest)
	}
	d.Namespace = normNS(d.Namespace)
	existing, err := txnFirst[api.Deployment](t, TableDeployments, "id", d.ID)
	if err != nil {
		return err
	}
	if existing != nil {
		d.CreateIndex = existing.CreateIndex
	} else {
		d.CreateIndex = t.index
	}
	d.ModifyIndex = t.index
	return t.putDeployment(d)
}

func (t *Txn) putDeployment(d *api.Deployment) error {
	if err := t.insert(TableDeployments, d); err != nil {
		return err
	}
	t.emit(api.Event{Topic: api.TopicDeployment, Type: "DeploymentStatusUpdate", Key: d.ID, Namespace: d.Namespace,
		FilterKeys: []string{d.JobID}, Payload: map[string]any{"Deployment": d}})
	return nil
}

// UpdateDeploymentStatus applies a status update to a stored deployment.
// A terminal deployment keeps its status (a plan computed before the
// deployment watcher failed it must not overwrite that).
func (t *Txn) UpdateDeploymentStatus(u *api.DeploymentStatusUpdate) error {
	d, err := txnFirst[api.Deployment](t, TableDeployments, "id", u.DeploymentID)
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("deployment %q: %w", u.DeploymentID, api.ErrDeploymentNotFound)
	}
	if !d.Active() {
		return nil
	}
	c := *d
	c.Status, c.StatusDescription = u.Status, u.StatusDescription
	c.ModifyIndex = t.index
	return t.putDeployment(&c)
}
