package api

import (
	"bytes"
	"encoding/json"
	"time"
)

// Job types.
const (
	JobTypeService  = "service"
	JobTypeBatch    = "batch"
	JobTypeSystem   = "system"
	JobTypeSysBatch = "sysbatch"
)

// Job statuses.
const (
	JobStatusPending = "pending"
	JobStatusRunning = "running"
	JobStatusDead    = "dead"
)

// Defaults as Nomad documents them.
const (
	DefaultNamespace = "default"
	DefaultRegion    = "global"
	DefaultNodePool  = "default"
	DefaultPriority  = 50
	MinPriority      = 1
	MaxPriority      = 100
)

// Job is the unit users submit: a set of task groups scheduled together.
type Job struct {
	Region    string `json:"Region,omitempty"`
	Namespace string `json:"Namespace,omitempty"`
	ID        string `json:"ID"`
	ParentID  string `json:"ParentID,omitempty"`
	Name      string `json:"Name,omitempty"`
	Type      string `json:"Type,omitempty"`
	Priority  int    `json:"Priority,omitempty"`
	AllAtOnce bool   `json:"AllAtOnce,omitempty"`
	// Gang makes all of the job's groups one gang (see Gang).
	Gang *Gang `json:"Gang,omitempty"`
	// Preemptible false protects the job's allocs from preemption by
	// higher-priority work (nil: preemptible).
	Preemptible *bool `json:"Preemptible,omitempty"`
	// MinRuntime protects an alloc from preemption until it has run this
	// long (fresh work is not evicted at once).
	MinRuntime  time.Duration `json:"MinRuntime,omitempty"`
	Datacenters []string      `json:"Datacenters,omitempty"`
	NodePool    string        `json:"NodePool,omitempty"`
	// Queue is the queue the job's allocs count against ("team-a/train");
	// "" is DefaultQueue.
	Queue            string                  `json:"Queue,omitempty"`
	Constraints      []*Constraint           `json:"Constraints,omitempty"`
	Affinities       []*Affinity             `json:"Affinities,omitempty"`
	Spreads          []*Spread               `json:"Spreads,omitempty"`
	TaskGroups       []*TaskGroup            `json:"TaskGroups"`
	Update           *UpdateStrategy         `json:"Update,omitempty"`
	Periodic         *PeriodicConfig         `json:"Periodic,omitempty"`
	ParameterizedJob *ParameterizedJobConfig `json:"ParameterizedJob,omitempty"`
	Dispatched       bool                    `json:"Dispatched,omitempty"`
	Payload          []byte                  `json:"Payload,omitempty"`
	Meta             map[string]string       `json:"Meta,omitempty"`
	// IdleTimeout is the groups' default idle_timeout
	// (TaskGroup.IdleTimeout).
	IdleTimeout time.Duration `json:"IdleTimeout,omitempty"`
	// MaxDisruption is how many of the job's allocs one defragmentation
	// round may move (a gang counts once); 0 means 1.
	MaxDisruption int `json:"MaxDisruption,omitempty"`
	// Spot is the groups' default spot choice (SpotAllow, SpotNever,
	// SpotPrefer; "" is allow).
	Spot string `json:"Spot,omitempty"`
	// Placement lets pending work move to another region (drover's
	// addition; placement.go).
	Placement *Placement `json:"Placement,omitempty"`
	// Multiregion registers the job in several regions and deploys it
	// region by region (multiregion.go).
	Multiregion *Multiregion `json:"Multiregion,omitempty"`

	// Server-set fields.
	Stop              bool   `json:"Stop,omitempty"`
	Status            string `json:"Status,omitempty"`
	StatusDescription string `json:"StatusDescription,omitempty"`
	Stable            bool   `json:"Stable,omitempty"`
	Version           uint64 `json:"Version"`
	SubmitTime        int64  `json:"SubmitTime,omitempty"`
	CreateIndex       uint64 `json:"CreateIndex,omitempty"`
	ModifyIndex       uint64 `json:"ModifyIndex,omitempty"`
	JobModifyIndex    uint64 `json:"JobModifyIndex,omitempty"`
}

// IsPeriodic reports whether the job is a periodic template.
func (j *Job) IsPeriodic() bool { return j.Periodic != nil && j.Periodic.Enabled }

// IsParameterized reports whether the job is a parameterized template.
func (j *Job) IsParameterized() bool { return j.ParameterizedJob != nil && !j.Dispatched }

// LookupTaskGroup returns the named group or nil.
func (j *Job) LookupTaskGroup(name string) *TaskGroup {
	for _, tg := range j.TaskGroups {
		if tg.Name == name {
			return tg
		}
	}
	return nil
}

// Copy returns a deep copy (via JSON; jobs are small and copied rarely).
func (j *Job) Copy() *Job {
	if j == nil {
		return nil
	}
	return deepCopy(j)
}

// SpecChanged reports whether other differs from j in what a user
// submits: everything but the server-set status, stability, version,
// submit time and indexes. Registering an unchanged spec keeps the
// version (as Nomad).
func (j *Job) SpecChanged(other *Job) bool {
	if j == nil || other == nil {
		return j != other
	}
	strip := func(in *Job) []byte {
		c := *in
		c.Status, c.StatusDescription, c.Stable, c.Version, c.SubmitTime = "", "", false, 0, 0
		c.CreateIndex, c.ModifyIndex, c.JobModifyIndex = 0, 0, 0
		b, _ := json.Marshal(&c)
		return b
	}
	return !bytes.Equal(strip(j), strip(other))
}

// NamespacedID identifies an object within a namespace.
type NamespacedID struct {
	ID        string
	Namespace string
}

func (n NamespacedID) String() string { return n.Namespace + "/" + n.ID }

// NamespacedID returns the job's key.
func (j *Job) NamespacedID() NamespacedID { return NamespacedID{ID: j.ID, Namespace: j.Namespace} }

// PeriodicConfig launches child jobs on a cron schedule.
type PeriodicConfig struct {
	Enabled         bool     `json:"Enabled"`
	Spec            string   `json:"Spec,omitempty"`
	Specs           []string `json:"Specs,omitempty"`
	SpecType        string   `json:"SpecType,omitempty"`
	ProhibitOverlap bool     `json:"ProhibitOverlap,omitempty"`
	TimeZone        string   `json:"TimeZone,omitempty"`
}

// ParameterizedJobConfig makes a job a template launched by dispatch.
type ParameterizedJobConfig struct {
	Payload      string   `json:"Payload,omitempty"` // optional, required, forbidden
	MetaRequired []string `json:"MetaRequired,omitempty"`
	MetaOptional []string `json:"MetaOptional,omitempty"`
}

// UpdateStrategy controls rolling updates of a service job or group.
type UpdateStrategy struct {
	Stagger          time.Duration `json:"Stagger,omitempty"`
	MaxParallel      int           `json:"MaxParallel"`
	HealthCheck      string        `json:"HealthCheck,omitempty"` // checks, task_states, manual
	MinHealthyTime   time.Duration `json:"MinHealthyTime,omitempty"`
	HealthyDeadline  time.Duration `json:"HealthyDeadline,omitempty"`
	ProgressDeadline time.Duration `json:"ProgressDeadline,omitempty"`
	Canary           int           `json:"Canary,omitempty"`
	AutoRevert       bool          `json:"AutoRevert,omitempty"`
	AutoPromote      bool          `json:"AutoPromote,omitempty"`
}

// MigrateStrategy controls how allocs move off a draining node.
type MigrateStrategy struct {
	MaxParallel     int           `json:"MaxParallel"`
	HealthCheck     string        `json:"HealthCheck,omitempty"`
	MinHealthyTime  time.Duration `json:"MinHealthyTime,omitempty"`
	HealthyDeadline time.Duration `json:"HealthyDeadline,omitempty"`
}

// JobListStub is the short form returned by GET /v1/jobs.
type JobListStub struct {
	ID                string            `json:"ID"`
	ParentID          string            `json:"ParentID,omitempty"`
	Name              string            `json:"Name"`
	Namespace         string            `json:"Namespace"`
	Datacenters       []string          `json:"Datacenters"`
	NodePool          string            `json:"NodePool"`
	Queue             string            `json:"Queue,omitempty"` // the job's queue ("" is the default queue)
	Type              string            `json:"Type"`
	Priority          int               `json:"Priority"`
	Periodic          bool              `json:"Periodic"`
	ParameterizedJob  bool              `json:"ParameterizedJob"`
	Stop              bool              `json:"Stop"`
	Status            string            `json:"Status"`
	StatusDescription string            `json:"StatusDescription,omitempty"`
	JobSummary        *JobSummary       `json:"JobSummary,omitempty"`
	Version           uint64            `json:"Version"`
	SubmitTime        int64             `json:"SubmitTime"`
	CreateIndex       uint64            `json:"CreateIndex"`
	ModifyIndex       uint64            `json:"ModifyIndex"`
	JobModifyIndex    uint64            `json:"JobModifyIndex"`
	Meta              map[string]string `json:"Meta,omitempty"`
}

// Stub returns the list form of the job.
func (j *Job) Stub(summary *JobSummary) *JobListStub {
	return &JobListStub{
		ID: j.ID, ParentID: j.ParentID, Name: j.Name, Namespace: j.Namespace,
		Datacenters: j.Datacenters, NodePool: j.NodePool, Queue: j.Queue, Type: j.Type, Priority: j.Priority,
		Periodic: j.IsPeriodic(), ParameterizedJob: j.IsParameterized(), Stop: j.Stop,
		Status: j.Status, StatusDescription: j.StatusDescription, JobSummary: summary,
		Version: j.Version, SubmitTime: j.SubmitTime, CreateIndex: j.CreateIndex,
		ModifyIndex: j.ModifyIndex, JobModifyIndex: j.JobModifyIndex, Meta: j.Meta,
	}
}

// JobSummary counts a job's allocations by client status per group.
type JobSummary struct {
	JobID       string                      `json:"JobID"`
	Namespace   string                      `json:"Namespace"`
	Summary     map[string]TaskGroupSummary `json:"Summary"`
	Children    *JobChildrenSummary         `json:"Children,omitempty"`
	CreateIndex uint64                      `json:"CreateIndex"`
	ModifyIndex uint64                      `json:"ModifyIndex"`
}

// TaskGroupSummary counts one group's allocations.
type TaskGroupSummary struct {
	Queued   int `json:"Queued"`
	Complete int `json:"Complete"`
	Failed   int `json:"Failed"`
	Running  int `json:"Running"`
	Starting int `json:"Starting"`
	Lost     int `json:"Lost"`
	Unknown  int `json:"Unknown"`
}

// JobChildrenSummary counts children of periodic/parameterized jobs.
type JobChildrenSummary struct {
	Pending int64 `json:"Pending"`
	Running int64 `json:"Running"`
	Dead    int64 `json:"Dead"`
}

// JobRegisterRequest is the body of PUT /v1/jobs and POST /v1/job/{id}.
type JobRegisterRequest struct {
	Job            *Job   `json:"Job"`
	EnforceIndex   bool   `json:"EnforceIndex,omitempty"`
	JobModifyIndex uint64 `json:"JobModifyIndex,omitempty"`
	PolicyOverride bool   `json:"PolicyOverride,omitempty"`
	PreserveCounts bool   `json:"PreserveCounts,omitempty"`
	// RegionCopy marks the copy of a multiregion job its origin region
	// registers in another region: registered there only, not sent on.
	RegionCopy bool `json:"RegionCopy,omitempty"`
}

// JobRegisterResponse answers a register.
type JobRegisterResponse struct {
	EvalID          string `json:"EvalID"`
	EvalCreateIndex uint64 `json:"EvalCreateIndex"`
	JobModifyIndex  uint64 `json:"JobModifyIndex"`
	Warnings        string `json:"Warnings"`
	Index           uint64 `json:"Index"`
}

// JobDeregisterResponse answers DELETE /v1/job/{id}.
type JobDeregisterResponse struct {
	EvalID          string `json:"EvalID"`
	EvalCreateIndex uint64 `json:"EvalCreateIndex"`
	JobModifyIndex  uint64 `json:"JobModifyIndex"`
	Index           uint64 `json:"Index"`
}

// JobEvaluateResponse answers POST /v1/job/{id}/evaluate.
type JobEvaluateResponse = JobDeregisterResponse

// JobPlanRequest is the body of POST /v1/job/{id}/plan.
type JobPlanRequest struct {
	Job            *Job `json:"Job"`
	Diff           bool `json:"Diff"`
	PolicyOverride bool `json:"PolicyOverride,omitempty"`
}

// JobPlanResponse answers a dry-run schedule.
type JobPlanResponse struct {
	JobModifyIndex     uint64                  `json:"JobModifyIndex"`
	CreatedEvals       []*Evaluation           `json:"CreatedEvals,omitempty"`
	Diff               *JobDiff                `json:"Diff,omitempty"`
	Annotations        *PlanAnnotations        `json:"Annotations,omitempty"`
	FailedTGAllocs     map[string]*AllocMetric `json:"FailedTGAllocs,omitempty"`
	NextPeriodicLaunch time.Time               `json:"NextPeriodicLaunch"`
	Warnings           string                  `json:"Warnings,omitempty"`
}

// JobDiff describes what changes between the registered job and a new one.
type JobDiff struct {
	Type       string           `json:"Type"` // Added, Deleted, Edited, None
	ID         string           `json:"ID"`
	Fields     []*FieldDiff     `json:"Fields,omitempty"`
	Objects    []*ObjectDiff    `json:"Objects,omitempty"`
	TaskGroups []*TaskGroupDiff `json:"TaskGroups,omitempty"`
}

// TaskGroupDiff is one group's part of a JobDiff.
type TaskGroupDiff struct {
	Type    string            `json:"Type"`
	Name    string            `json:"Name"`
	Fields  []*FieldDiff      `json:"Fields,omitempty"`
	Objects []*ObjectDiff     `json:"Objects,omitempty"`
	Tasks   []*TaskDiff       `json:"Tasks,omitempty"`
	Updates map[string]uint64 `json:"Updates,omitempty"`
}

// TaskDiff is one task's part of a TaskGroupDiff.
type TaskDiff struct {
	Type        string        `json:"Type"`
	Name        string        `json:"Name"`
	Fields      []*FieldDiff  `json:"Fields,omitempty"`
	Objects     []*ObjectDiff `json:"Objects,omitempty"`
	Annotations []string      `json:"Annotations,omitempty"`
}

// FieldDefault annotates a FieldDiff of an added job, group or task
// whose value is the default the job file left it to (`job plan` hides
// those unless -verbose).
const FieldDefault = "default"

// FieldDiff is a changed scalar.
type FieldDiff struct {
	Type        string   `json:"Type"`
	Name        string   `json:"Name"`
	Old         string   `json:"Old"`
	New         string   `json:"New"`
	Annotations []string `json:"Annotations,omitempty"`
}

// ObjectDiff is a changed nested object.
type ObjectDiff struct {
	Type    string        `json:"Type"`
	Name    string        `json:"Name"`
	Fields  []*FieldDiff  `json:"Fields,omitempty"`
	Objects []*ObjectDiff `json:"Objects,omitempty"`
}

// Diff types.
const (
	DiffTypeNone    = "None"
	DiffTypeAdded   = "Added"
	DiffTypeDeleted = "Deleted"
	DiffTypeEdited  = "Edited"
)

// JobVersionsResponse answers GET /v1/job/{id}/versions.
type JobVersionsResponse struct {
	Versions []*Job     `json:"Versions"`
	Diffs    []*JobDiff `json:"Diffs,omitempty"`
}

// JobsParseRequest is the body of POST /v1/jobs/parse.
type JobsParseRequest struct {
	JobHCL       string            `json:"JobHCL"`
	Variables    string            `json:"Variables,omitempty"` // HCL var-file content
	VariableArgs map[string]string `json:"VariableArgs,omitempty"`
	Canonicalize bool              `json:"Canonicalize,omitempty"`
}

// deepCopy copies any JSON-shaped value.
func deepCopy[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic("api: copy: " + err.Error())
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic("api: copy: " + err.Error())
	}
	return out
}
