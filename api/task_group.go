package api

import (
	"encoding/json"
	"time"
)

// TaskGroup is a set of tasks placed together on one node. Count copies
// of the group are scheduled.
type TaskGroup struct {
	Name             string             `json:"Name"`
	Count            int                `json:"Count"`
	Constraints      []*Constraint      `json:"Constraints,omitempty"`
	Affinities       []*Affinity        `json:"Affinities,omitempty"`
	Spreads          []*Spread          `json:"Spreads,omitempty"`
	Tasks            []*Task            `json:"Tasks"`
	RestartPolicy    *RestartPolicy     `json:"RestartPolicy,omitempty"`
	ReschedulePolicy *ReschedulePolicy  `json:"ReschedulePolicy,omitempty"`
	EphemeralDisk    *EphemeralDisk     `json:"EphemeralDisk,omitempty"`
	Update           *UpdateStrategy    `json:"Update,omitempty"`
	Migrate          *MigrateStrategy   `json:"Migrate,omitempty"`
	Networks         []*NetworkResource `json:"Networks,omitempty"`
	Services         []*Service         `json:"Services,omitempty"`
	Meta             map[string]string  `json:"Meta,omitempty"`
	ShutdownDelay    time.Duration      `json:"ShutdownDelay,omitempty"`
	// StopAfterClientDisconnect / MaxClientDisconnect as in Nomad.
	StopAfterClientDisconnect time.Duration `json:"StopAfterClientDisconnect,omitempty"`
	MaxClientDisconnect       time.Duration `json:"MaxClientDisconnect,omitempty"`
	// Gang makes the group's allocs one gang (see Gang).
	Gang *Gang `json:"Gang,omitempty"`
	// Scaling is the group's scaling block (bounds for job scale and an
	// autoscaler's policy).
	Scaling *ScalingPolicy `json:"Scaling,omitempty"`
	// Volumes are the group's volume blocks by name.
	Volumes map[string]*VolumeRequest `json:"Volumes,omitempty"`
	// MinRuntime overrides the job's min_runtime for the group's allocs
	// (protection from preemption and defragmentation moves); 0: the
	// job's.
	MinRuntime time.Duration `json:"MinRuntime,omitempty"`
	// IdleTimeout is how long the group's allocs may hold GPUs at ~0%
	// utilization before they count as idle (job status, the UI) and the
	// queue's idle_action applies; 0: the job's, else the queue's.
	IdleTimeout time.Duration `json:"IdleTimeout,omitempty"`
	// Spot overrides the job's spot choice for the group (api/spot.go).
	Spot string `json:"Spot,omitempty"`
}

// UnmarshalJSON pre-fills Count with its default (1) so that a group that
// omits Count gets one instance while an explicit 0 stays 0, as in Nomad.
func (tg *TaskGroup) UnmarshalJSON(b []byte) error {
	type plain TaskGroup
	p := plain{Count: 1}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*tg = TaskGroup(p)
	return nil
}

// LookupTask returns the named task or nil.
func (tg *TaskGroup) LookupTask(name string) *Task {
	for _, t := range tg.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Restart modes.
const (
	RestartModeFail  = "fail"
	RestartModeDelay = "delay"
)

// RestartPolicy says how the client restarts a failed task in place.
type RestartPolicy struct {
	Attempts        int           `json:"Attempts"`
	Interval        time.Duration `json:"Interval"`
	Delay           time.Duration `json:"Delay"`
	Mode            string        `json:"Mode"`
	RenderTemplates bool          `json:"RenderTemplates,omitempty"`
}

// ReschedulePolicy says how the server replaces failed allocations.
type ReschedulePolicy struct {
	Attempts      int           `json:"Attempts"`
	Interval      time.Duration `json:"Interval"`
	Delay         time.Duration `json:"Delay"`
	DelayFunction string        `json:"DelayFunction"` // constant, exponential, fibonacci
	MaxDelay      time.Duration `json:"MaxDelay"`
	Unlimited     bool          `json:"Unlimited"`
}

// EphemeralDisk describes the alloc dir's disk.
type EphemeralDisk struct {
	Sticky  bool `json:"Sticky"`
	Migrate bool `json:"Migrate"`
	SizeMB  int  `json:"SizeMB"`
}

// Default restart and reschedule policies per job type, as Nomad documents.
func DefaultRestartPolicy(jobType string) *RestartPolicy {
	switch jobType {
	case JobTypeBatch, JobTypeSysBatch:
		return &RestartPolicy{Attempts: 3, Interval: 24 * time.Hour, Delay: 15 * time.Second, Mode: RestartModeFail}
	default:
		return &RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: RestartModeFail}
	}
}

// DefaultReschedulePolicy returns Nomad's documented defaults; system jobs
// are never rescheduled (nil).
func DefaultReschedulePolicy(jobType string) *ReschedulePolicy {
	switch jobType {
	case JobTypeService:
		return &ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
	case JobTypeBatch:
		return &ReschedulePolicy{Attempts: 1, Interval: 24 * time.Hour, Delay: 5 * time.Second, DelayFunction: "constant"}
	default:
		return nil
	}
}

// DefaultUpdateStrategy is used for service jobs with an update block.
func DefaultUpdateStrategy() *UpdateStrategy {
	return &UpdateStrategy{
		Stagger: 30 * time.Second, MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute,
		ProgressDeadline: 10 * time.Minute,
	}
}

// DefaultMigrateStrategy per Nomad.
func DefaultMigrateStrategy() *MigrateStrategy {
	return &MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
}
