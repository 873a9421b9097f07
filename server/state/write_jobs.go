package state

import (
	"fmt"
	"maps"

	"github.com/drover/drover/api"
)

// MaxJobVersions is how many versions of a job are kept.
const MaxJobVersions = 6

// UpsertJob registers a job or a new version of it.
func (s *StateStore) UpsertJob(index uint64, job *api.Job) error {
	return s.Write(index, func(t *Txn) error { return t.UpsertJob(job) })
}

// DeleteJob purges a job with its versions and summary.
func (s *StateStore) DeleteJob(index uint64, namespace, id string) error {
	return s.Write(index, func(t *Txn) error { return t.DeleteJob(namespace, id) })
}

// UpsertJob stores job (taking ownership): a new job gets Version 0 and
// CreateIndex; an existing one keeps CreateIndex and gets Version+1 —
// unless its spec did not change (api.Job.SpecChanged), when it keeps its
// version, JobModifyIndex and stability. ModifyIndex is set to the txn
// index, JobModifyIndex too for a new version, Status is computed, Stable
// is cleared for a new version; SubmitTime is the caller's. The last
// MaxJobVersions versions are kept and the job summary gains any new group.
func (t *Txn) UpsertJob(job *api.Job) error {
	if job == nil || job.ID == "" {
		return fmt.Errorf("upsert job: missing job ID: %w", api.ErrInvalidJob)
	}
	for i, tg := range job.TaskGroups {
		if tg == nil {
			return fmt.Errorf("upsert job %q: task group %d is null: %w", job.ID, i, api.ErrInvalidJob)
		}
	}
	job.Namespace = normNS(job.Namespace)
	existing, err := txnFirst[api.Job](t, TableJobs, "id", job.Namespace, job.ID)
	if err != nil {
		return err
	}
	unchanged := existing != nil && !existing.SpecChanged(job)
	switch {
	case unchanged:
		// The same spec again (as Nomad): no new version, same
		// JobModifyIndex and stability; only the submit time moves.
		job.CreateIndex = existing.CreateIndex
		job.Version = existing.Version
		job.JobModifyIndex = existing.JobModifyIndex
		job.Stable = existing.Stable
	case existing != nil:
		job.CreateIndex = existing.CreateIndex
		job.Version = max(existing.Version+1, multiregionVersion(job))
		job.JobModifyIndex = t.index
		job.Stable = false
	default:
		job.CreateIndex = t.index
		job.Version = multiregionVersion(job)
		job.JobModifyIndex = t.index
		job.Stable = false
	}
	job.ModifyIndex = t.index
	status, err := t.jobStatus(job, nil)
	if err != nil {
		return err
	}
	job.Status = status
	oldStatus := ""
	if existing != nil {
		oldStatus = existing.Status
	}
	if err := t.childStatus(job, oldStatus, status); err != nil {
		return err
	}
	if err := t.insert(TableJobs, job); err != nil {
		return err
	}
	if unchanged {
		// Keep the stored version's record (its diff base) as it is.
		t.emit(api.Event{Topic: api.TopicJob, Type: "JobRegistered", Key: job.ID, Namespace: job.Namespace,
			Payload: map[string]any{"Job": job}})
		return nil
	}
	if err := t.insert(TableJobVersions, job); err != nil {
		return err
	}
	if err := t.pruneVersions(job.Namespace, job.ID); err != nil {
		return err
	}
	if err := t.ensureSummary(job); err != nil {
		return err
	}
	t.emit(api.Event{Topic: api.TopicJob, Type: "JobRegistered", Key: job.ID, Namespace: job.Namespace,
		Payload: map[string]any{"Job": job}})
	return nil
}

func (t *Txn) pruneVersions(ns, id string) error {
	versions, err := txnList[api.Job](t, TableJobVersions, "job", ns, id)
	if err != nil || len(versions) <= MaxJobVersions {
		return err
	}
	// Drop the oldest: the list holds at most MaxJobVersions+1 entries.
	oldest := versions[0]
	for _, v := range versions[1:] {
		if v.Version < oldest.Version {
			oldest = v
		}
	}
	return t.delete(TableJobVersions, oldest)
}

func (t *Txn) ensureSummary(job *api.Job) error {
	sum, err := t.summary(job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if sum == nil {
		sum = &api.JobSummary{JobID: job.ID, Namespace: job.Namespace, CreateIndex: t.index,
			Summary: map[string]api.TaskGroupSummary{}}
		if t.summaries == nil {
			t.summaries = map[api.NamespacedID]*api.JobSummary{}
		}
		t.summaries[job.NamespacedID()] = sum
	}
	for _, tg := range job.TaskGroups {
		if tg == nil {
			continue
		}
		if _, ok := sum.Summary[tg.Name]; !ok {
			sum.Summary[tg.Name] = api.TaskGroupSummary{}
		}
	}
	return nil
}

// summary returns the txn's working copy of a job summary (nil if none).
func (t *Txn) summary(ns, jobID string) (*api.JobSummary, error) {
	k := api.NamespacedID{Namespace: ns, ID: jobID}
	if s, ok := t.summaries[k]; ok {
		return s, nil
	}
	cur, err := txnFirst[api.JobSummary](t, TableJobSummary, "id", ns, jobID)
	if err != nil || cur == nil {
		return nil, err
	}
	c := *cur
	c.Summary = maps.Clone(cur.Summary)
	if c.Summary == nil {
		c.Summary = map[string]api.TaskGroupSummary{}
	}
	if t.summaries == nil {
		t.summaries = map[api.NamespacedID]*api.JobSummary{}
	}
	t.summaries[k] = &c
	return &c, nil
}

// DeleteJob purges a job, its versions and its summary; allocations and
// evaluations stay until garbage collected. A missing job is
// api.ErrJobNotFound.
func (t *Txn) DeleteJob(namespace, id string) error {
	namespace = normNS(namespace)
	job, err := txnFirst[api.Job](t, TableJobs, "id", namespace, id)
	if err != nil {
		return err
	}
	if job == nil {
		return fmt.Errorf("delete job %q: %w", id, api.ErrJobNotFound)
	}
	if err := t.delete(TableJobs, job); err != nil {
		return err
	}
	versions, err := txnList[api.Job](t, TableJobVersions, "job", namespace, id)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := t.delete(TableJobVersions, v); err != nil {
			return err
		}
	}
	delete(t.summaries, job.NamespacedID())
	if sum, err := txnFirst[api.JobSummary](t, TableJobSummary, "id", namespace, id); err != nil {
		return err
	} else if sum != nil {
		if err := t.delete(TableJobSummary, sum); err != nil {
			return err
		}
	}
	delete(t.jobs, job.NamespacedID())
	if err := t.childStatus(job, job.Status, ""); err != nil {
		return err
	}
	t.emit(api.Event{Topic: api.TopicJob, Type: "JobDeregistered", Key: id, Namespace: namespace,
		Payload: map[string]any{"Job": job}})
	return nil
}

// StopJob stores a stopped copy of the job (a new version with Stop set and
// the given SubmitTime): a deregister without purge. A missing job is
// api.ErrJobNotFound.
func (t *Txn) StopJob(namespace, id string, submitTime int64) error {
	job, err := txnFirst[api.Job](t, TableJobs, "id", normNS(namespace), id)
	if err != nil {
		return err
	}
	if job == nil {
		return fmt.Errorf("stop job %q: %w", id, api.ErrJobNotFound)
	}
	c := job.Copy()
	c.Stop = true
	if submitTime != 0 {
		c.SubmitTime = submitTime
	}
	return t.UpsertJob(c)
}

// SetJobStable marks one version of a job stable (deployment success).
func (t *Txn) SetJobStable(namespace, id string, version uint64, stable bool) error {
	namespace = normNS(namespace)
	v, err := txnFirst[api.Job](t, TableJobVersions, "id", namespace, id, version)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("job %q version %d: %w", id, version, api.ErrJobNotFound)
	}
	c := *v
	c.Stable = stable
	c.ModifyIndex = t.index
	if err := t.insert(TableJobVersions, &c); err != nil {
		return err
	}
	if cur, err := txnFirst[api.Job](t, TableJobs, "id", namespace, id); err != nil {
		return err
	} else if cur != nil && cur.Version == version {
		cc := *cur
		cc.Stable = stable
		cc.ModifyIndex = t.index
		return t.insert(TableJobs, &cc)
	}
	return nil
}

// childStatus moves a child job (periodic launch or dispatch) between the
// status counts of its parent's summary ("" = not counted).
func (t *Txn) childStatus(child *api.Job, from, to string) error {
	if child.ParentID == "" || from == to {
		return nil
	}
	sum, err := t.summary(child.Namespace, child.ParentID)
	if err != nil || sum == nil {
		return err
	}
	c := api.JobChildrenSummary{}
	if sum.Children != nil {
		c = *sum.Children
	}
	for _, m := range []struct {
		status string
		d      int64
	}{{from, -1}, {to, 1}} {
		var p *int64
		switch m.status {
		case api.JobStatusPending:
			p = &c.Pending
		case api.JobStatusRunning:
			p = &c.Running
		case api.JobStatusDead:
			p = &c.Dead
		default:
			continue
		}
		if *p += m.d; *p < 0 {
			*p = 0
		}
	}
	sum.Children = &c
	return nil
}

// multiregionVersion is the version a multiregion job asks for: its
// origin region gives every region's copy the same one (server/
// multiregion.go), so the regions' deployments of it find each other.
// Other jobs ask for none (0).
func multiregionVersion(job *api.Job) uint64 {
	if job.Multiregion == nil {
		return 0
	}
	return job.Version
}
