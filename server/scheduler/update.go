package scheduler

import (
	"reflect"

	"github.com/drover/drover/api"
)

// sameVersion reports whether an alloc runs the current job version.
func sameVersion(a *api.Allocation, job *api.Job) bool {
	return a.Job == job || (a.Job != nil && a.Job.Version == job.Version && a.Job.JobModifyIndex == job.JobModifyIndex)
}

// specChanged reports whether a's job version differs from job in what
// its tasks run (a destructive change of its group).
func specChanged(a *api.Allocation, job *api.Job, tg *api.TaskGroup) bool {
	if sameVersion(a, job) || a.Job == nil {
		return false
	}
	return destructiveChange(a.Job, a.Job.LookupTaskGroup(tg.Name), job, tg)
}

// destructiveChange decides whether moving an alloc from its job version
// to the new one needs a replacement (true) or can be done in place.
//
// Destructive, because the running tasks would differ: tasks added or
// removed; a task's driver, user, config, env, meta, resources (cpu,
// memory, devices, networks), artifacts, templates, lifecycle or log
// config; the group's networks, ephemeral disk or meta; the job's meta
// (all meta reaches tasks as environment); any constraint, affinity or
// spread (the placement itself may no longer be right); the queue (its
// limit admits the replacements).
//
// In place: everything else — count, update/migrate/restart/reschedule
// policies, services and checks, kill timeout and signal, shutdown delay,
// priority, datacenters that still include the node.
func destructiveChange(oldJob *api.Job, oldTG *api.TaskGroup, job *api.Job, tg *api.TaskGroup) bool {
	if oldJob == nil || oldTG == nil {
		return true
	}
	if api.JobQueue(oldJob) != api.JobQueue(job) { // the allocs count against another queue's limit
		return true
	}
	if !reflect.DeepEqual(oldJob.Meta, job.Meta) ||
		!reflect.DeepEqual(oldJob.Constraints, job.Constraints) ||
		!reflect.DeepEqual(oldJob.Affinities, job.Affinities) ||
		!reflect.DeepEqual(oldJob.Spreads, job.Spreads) {
		return true
	}
	if !reflect.DeepEqual(oldTG.Meta, tg.Meta) || !reflect.DeepEqual(oldTG.Networks, tg.Networks) ||
		!reflect.DeepEqual(oldTG.EphemeralDisk, tg.EphemeralDisk) ||
		!reflect.DeepEqual(oldTG.Constraints, tg.Constraints) ||
		!reflect.DeepEqual(oldTG.Affinities, tg.Affinities) || !reflect.DeepEqual(oldTG.Spreads, tg.Spreads) {
		return true
	}
	if len(oldTG.Tasks) != len(tg.Tasks) {
		return true
	}
	for _, t := range tg.Tasks {
		o := oldTG.LookupTask(t.Name)
		if o == nil {
			return true
		}
		if o.Driver != t.Driver || o.User != t.User ||
			!reflect.DeepEqual(o.Config, t.Config) || !reflect.DeepEqual(o.Env, t.Env) ||
			!reflect.DeepEqual(o.Meta, t.Meta) || !reflect.DeepEqual(o.Resources, t.Resources) ||
			!reflect.DeepEqual(o.Artifacts, t.Artifacts) || !reflect.DeepEqual(o.Templates, t.Templates) ||
			!reflect.DeepEqual(o.Lifecycle, t.Lifecycle) || !reflect.DeepEqual(o.LogConfig, t.LogConfig) ||
			!reflect.DeepEqual(o.Constraints, t.Constraints) || !reflect.DeepEqual(o.Affinities, t.Affinities) {
			return true
		}
	}
	return false
}

// updateStrategy returns the group's rolling update strategy or nil.
func updateStrategy(job *api.Job, tg *api.TaskGroup) *api.UpdateStrategy {
	u := tg.Update
	if u == nil {
		u = job.Update
	}
	if u == nil || u.MaxParallel <= 0 {
		return nil
	}
	return u
}
