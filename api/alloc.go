package api

import "time"

// Desired statuses (set by the server).
const (
	AllocDesiredStatusRun   = "run"
	AllocDesiredStatusStop  = "stop"
	AllocDesiredStatusEvict = "evict"
)

// Client statuses (set by the client, except lost/unknown).
const (
	AllocClientStatusPending  = "pending"
	AllocClientStatusRunning  = "running"
	AllocClientStatusComplete = "complete"
	AllocClientStatusFailed   = "failed"
	AllocClientStatusLost     = "lost"
	AllocClientStatusUnknown  = "unknown"
)

// Allocation is one placed instance of a task group on a node.
type Allocation struct {
	ID                    string                 `json:"ID"`
	Namespace             string                 `json:"Namespace"`
	EvalID                string                 `json:"EvalID"`
	Name                  string                 `json:"Name"` // job.group[index]
	NodeID                string                 `json:"NodeID"`
	NodeName              string                 `json:"NodeName"`
	JobID                 string                 `json:"JobID"`
	Job                   *Job                   `json:"Job,omitempty"`
	TaskGroup             string                 `json:"TaskGroup"`
	AllocatedResources    *AllocatedResources    `json:"AllocatedResources,omitempty"`
	Metrics               *AllocMetric           `json:"Metrics,omitempty"`
	DesiredStatus         string                 `json:"DesiredStatus"`
	DesiredDescription    string                 `json:"DesiredDescription,omitempty"`
	DesiredTransition     DesiredTransition      `json:"DesiredTransition"`
	ClientStatus          string                 `json:"ClientStatus"`
	ClientDescription     string                 `json:"ClientDescription,omitempty"`
	TaskStates            map[string]*TaskState  `json:"TaskStates,omitempty"`
	DeploymentID          string                 `json:"DeploymentID,omitempty"`
	DeploymentStatus      *AllocDeploymentStatus `json:"DeploymentStatus,omitempty"`
	FollowupEvalID        string                 `json:"FollowupEvalID,omitempty"`
	PreviousAllocation    string                 `json:"PreviousAllocation,omitempty"`
	NextAllocation        string                 `json:"NextAllocation,omitempty"`
	RescheduleTracker     *RescheduleTracker     `json:"RescheduleTracker,omitempty"`
	PreemptedAllocations  []string               `json:"PreemptedAllocations,omitempty"`
	PreemptedByAllocation string                 `json:"PreemptedByAllocation,omitempty"`
	// Gang is the alloc's place in its gang (nil outside gangs).
	Gang             *AllocGang `json:"Gang,omitempty"`
	CreateIndex      uint64     `json:"CreateIndex"`
	ModifyIndex      uint64     `json:"ModifyIndex"`
	AllocModifyIndex uint64     `json:"AllocModifyIndex"`
	CreateTime       int64      `json:"CreateTime"`
	ModifyTime       int64      `json:"ModifyTime"`
	// GPUUsage is what the alloc's GPUs do (client-owned; nil: no GPUs
	// or not measured yet).
	GPUUsage *GPUUsage `json:"GPUUsage,omitempty"`
}

// TerminalStatus reports whether the alloc is stopped or finished, by
// desired or client status.
func (a *Allocation) TerminalStatus() bool {
	switch a.DesiredStatus {
	case AllocDesiredStatusStop, AllocDesiredStatusEvict:
		return true
	}
	return a.ClientTerminalStatus()
}

// ClientTerminalStatus reports whether the client finished the alloc.
func (a *Allocation) ClientTerminalStatus() bool {
	switch a.ClientStatus {
	case AllocClientStatusComplete, AllocClientStatusFailed, AllocClientStatusLost:
		return true
	}
	return false
}

// Index returns the instance index parsed from Name ("job.group[3]" -> 3).
func (a *Allocation) Index() int {
	n := a.Name
	l := len(n)
	if l < 3 || n[l-1] != ']' {
		return 0
	}
	i := l - 2
	for i >= 0 && n[i] >= '0' && n[i] <= '9' {
		i--
	}
	if i < 0 || n[i] != '[' {
		return 0
	}
	v := 0
	for _, c := range n[i+1 : l-1] {
		v = v*10 + int(c-'0')
	}
	return v
}

// Copy returns a copy sharing the Job pointer (jobs are immutable once
// stored) with copied maps and nested structs.
func (a *Allocation) Copy() *Allocation {
	if a == nil {
		return nil
	}
	// Copy through a shallow copy: the original is shared and read
	// concurrently, so it must never be modified, even briefly.
	shallow := *a
	shallow.Job = nil
	c := deepCopy(&shallow)
	c.Job = a.Job
	return c
}

// AllocName builds "job.group[index]".
func AllocName(job, group string, index int) string {
	return job + "." + group + "[" + itoa(index) + "]"
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	p := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}

// DesiredTransition asks the scheduler to move an alloc.
type DesiredTransition struct {
	Migrate         *bool `json:"Migrate,omitempty"`
	Reschedule      *bool `json:"Reschedule,omitempty"`
	ForceReschedule *bool `json:"ForceReschedule,omitempty"`
}

// ShouldMigrate reports whether a drain asked for migration.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// AllocatedResources is what the scheduler assigned.
type AllocatedResources struct {
	Tasks          map[string]*AllocatedTaskResources `json:"Tasks"`
	TaskLifecycles map[string]*TaskLifecycle          `json:"TaskLifecycles,omitempty"`
	Shared         AllocatedSharedResources           `json:"Shared"`
}

// AllocatedTaskResources per task.
type AllocatedTaskResources struct {
	Cpu      AllocatedCpuResources      `json:"Cpu"`
	Memory   AllocatedMemoryResources   `json:"Memory"`
	Networks []*NetworkResource         `json:"Networks,omitempty"`
	Devices  []*AllocatedDeviceResource `json:"Devices,omitempty"`
}

// AllocatedCpuResources: CpuShares in MHz; ReservedCores are core ids.
type AllocatedCpuResources struct {
	CpuShares     int64    `json:"CpuShares"`
	ReservedCores []uint16 `json:"ReservedCores,omitempty"`
}

// AllocatedMemoryResources in MB.
type AllocatedMemoryResources struct {
	MemoryMB    int64 `json:"MemoryMB"`
	MemoryMaxMB int64 `json:"MemoryMaxMB,omitempty"`
}

// AllocatedSharedResources are the group's network and disk.
type AllocatedSharedResources struct {
	Networks []*NetworkResource `json:"Networks,omitempty"`
	DiskMB   int64              `json:"DiskMB"`
	Ports    []AllocatedPort    `json:"Ports,omitempty"`
}

// AllocatedDeviceResource names the device instances given to a task.
type AllocatedDeviceResource struct {
	Vendor    string   `json:"Vendor"`
	Type      string   `json:"Type"`
	Name      string   `json:"Name"`
	DeviceIDs []string `json:"DeviceIDs"`
	// Share, when set, is the part of each of DeviceIDs the alloc holds;
	// nil: the instances are the alloc's alone.
	Share *AllocatedShare `json:"Share,omitempty"`
}

// Milli is what the alloc holds of each of its instances, in
// thousandths (a whole instance is MilliPerDevice).
func (d *AllocatedDeviceResource) Milli() int {
	if d.Share != nil {
		return d.Share.Milli
	}
	return MilliPerDevice
}

// Comparable sums an alloc's resources for fit checks.
func (r *AllocatedResources) Comparable() (cpu, memMB, diskMB int64) {
	if r == nil {
		return 0, 0, 0
	}
	for _, t := range r.Tasks {
		cpu += t.Cpu.CpuShares
		memMB += t.Memory.MemoryMB
	}
	return cpu, memMB, r.Shared.DiskMB
}

// AllocMetric explains a placement: how many nodes were considered and
// why the others were rejected.
type AllocMetric struct {
	NodesEvaluated     int              `json:"NodesEvaluated"`
	NodesFiltered      int              `json:"NodesFiltered"`
	NodesInPool        int              `json:"NodesInPool"`
	NodesAvailable     map[string]int   `json:"NodesAvailable,omitempty"`
	ClassFiltered      map[string]int   `json:"ClassFiltered,omitempty"`
	ConstraintFiltered map[string]int   `json:"ConstraintFiltered,omitempty"`
	NodesExhausted     int              `json:"NodesExhausted"`
	ClassExhausted     map[string]int   `json:"ClassExhausted,omitempty"`
	DimensionExhausted map[string]int   `json:"DimensionExhausted,omitempty"`
	QuotaExhausted     []string         `json:"QuotaExhausted,omitempty"`
	ScoreMetaData      []*NodeScoreMeta `json:"ScoreMetaData,omitempty"`
	AllocationTime     time.Duration    `json:"AllocationTime"`
	CoalescedFailures  int              `json:"CoalescedFailures"`
	// DeviceShortfalls explains device asks that fit nowhere, one line
	// per ask naming the node with the most free matching devices: "needs
	// 4 nvidia/gpu with memory >= 80 GiB; node gpu-3 has 2 free" (drover
	// addition).
	DeviceShortfalls []string `json:"DeviceShortfalls,omitempty"`
	// GangFailure says why a gang was not placed: "gang train needs 8
	// members, 7 fit" (nothing of it is held), or that it timed out
	// (drover addition).
	GangFailure string `json:"GangFailure,omitempty"`
	// Reasons are why the group waits, structured (api/pending.go);
	// every failed group has at least one (drover addition).
	Reasons []PendingReason `json:"Reasons,omitempty"`
	// Counterfactuals say what would let it run: a preemption the
	// scheduler did not make, or a running job whose end frees room
	// (drover addition).
	Counterfactuals []Counterfactual `json:"Counterfactuals,omitempty"`
}

// NodeScoreMeta is a top-scoring node's score breakdown.
type NodeScoreMeta struct {
	NodeID    string  `json:"NodeID"`
	Scores    Scores  `json:"Scores"`
	NormScore float64 `json:"NormScore"`
}

// AllocDeploymentStatus is an alloc's health within a deployment.
type AllocDeploymentStatus struct {
	Healthy     *bool     `json:"Healthy,omitempty"`
	Timestamp   time.Time `json:"Timestamp"`
	Canary      bool      `json:"Canary"`
	ModifyIndex uint64    `json:"ModifyIndex"`
}

// RescheduleTracker records reschedule attempts of an alloc's lineage.
type RescheduleTracker struct {
	Events []*RescheduleEvent `json:"Events"`
}

// RescheduleEvent is one reschedule.
type RescheduleEvent struct {
	RescheduleTime int64         `json:"RescheduleTime"` // unix nanos
	PrevAllocID    string        `json:"PrevAllocID"`
	PrevNodeID     string        `json:"PrevNodeID"`
	Delay          time.Duration `json:"Delay"`
}

// AllocListStub is the short form returned by alloc lists.
type AllocListStub struct {
	ID                    string                 `json:"ID"`
	EvalID                string                 `json:"EvalID"`
	Name                  string                 `json:"Name"`
	Namespace             string                 `json:"Namespace"`
	NodeID                string                 `json:"NodeID"`
	NodeName              string                 `json:"NodeName"`
	JobID                 string                 `json:"JobID"`
	JobType               string                 `json:"JobType"`
	JobVersion            uint64                 `json:"JobVersion"`
	TaskGroup             string                 `json:"TaskGroup"`
	AllocatedResources    *AllocatedResources    `json:"AllocatedResources,omitempty"`
	DesiredStatus         string                 `json:"DesiredStatus"`
	DesiredDescription    string                 `json:"DesiredDescription,omitempty"`
	ClientStatus          string                 `json:"ClientStatus"`
	ClientDescription     string                 `json:"ClientDescription,omitempty"`
	TaskStates            map[string]*TaskState  `json:"TaskStates,omitempty"`
	DeploymentStatus      *AllocDeploymentStatus `json:"DeploymentStatus,omitempty"`
	FollowupEvalID        string                 `json:"FollowupEvalID,omitempty"`
	NextAllocation        string                 `json:"NextAllocation,omitempty"`
	RescheduleTracker     *RescheduleTracker     `json:"RescheduleTracker,omitempty"`
	PreemptedAllocations  []string               `json:"PreemptedAllocations,omitempty"`
	PreemptedByAllocation string                 `json:"PreemptedByAllocation,omitempty"`
	// Gang is the alloc's place in its gang without the member list (each
	// member's own stub carries its rank).
	Gang        *AllocGang `json:"Gang,omitempty"`
	CreateIndex uint64     `json:"CreateIndex"`
	ModifyIndex uint64     `json:"ModifyIndex"`
	CreateTime  int64      `json:"CreateTime"`
	ModifyTime  int64      `json:"ModifyTime"`
	// GPUUsage is the alloc's GPU usage (Allocation.GPUUsage).
	GPUUsage *GPUUsage `json:"GPUUsage,omitempty"`
}

// Stub returns the list form.
func (a *Allocation) Stub() *AllocListStub {
	s := &AllocListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace, NodeID: a.NodeID,
		NodeName: a.NodeName, JobID: a.JobID, TaskGroup: a.TaskGroup,
		AllocatedResources: a.AllocatedResources, DesiredStatus: a.DesiredStatus,
		DesiredDescription: a.DesiredDescription, ClientStatus: a.ClientStatus,
		ClientDescription: a.ClientDescription, TaskStates: a.TaskStates,
		DeploymentStatus: a.DeploymentStatus, FollowupEvalID: a.FollowupEvalID,
		NextAllocation: a.NextAllocation, RescheduleTracker: a.RescheduleTracker,
		PreemptedAllocations: a.PreemptedAllocations, PreemptedByAllocation: a.PreemptedByAllocation,
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
		GPUUsage: a.GPUUsage,
	}
	if a.Job != nil {
		s.JobType, s.JobVersion = a.Job.Type, a.Job.Version
	}
	if a.Gang != nil {
		g := *a.Gang
		g.Members = nil
		s.Gang = &g
	}
	return s
}

// AllocStopResponse answers POST /v1/allocation/{id}/stop.
type AllocStopResponse struct {
	EvalID string `json:"EvalID"`
	Index  uint64 `json:"Index"`
}

// Task states.
const (
	TaskStatePending = "pending"
	TaskStateRunning = "running"
	TaskStateDead    = "dead"
)

// TaskState is a task's state on the client.
type TaskState struct {
	State       string       `json:"State"`
	Failed      bool         `json:"Failed"`
	Restarts    uint64       `json:"Restarts"`
	LastRestart time.Time    `json:"LastRestart"`
	StartedAt   time.Time    `json:"StartedAt"`
	FinishedAt  time.Time    `json:"FinishedAt"`
	Events      []*TaskEvent `json:"Events"`
}

// Task event types.
const (
	TaskReceived             = "Received"
	TaskSetup                = "Task Setup"
	TaskDriverMessage        = "Driver"
	TaskStarted              = "Started"
	TaskTerminated           = "Terminated"
	TaskRestarting           = "Restarting"
	TaskNotRestarting        = "Not Restarting"
	TaskKilling              = "Killing"
	TaskMaxRunDuration       = "Max Run Duration Exceeded"
	TaskKilled               = "Killed"
	TaskDriverFailure        = "Driver Failure"
	TaskSetupFailure         = "Setup Failure"
	TaskFailedValidation     = "Failed Validation"
	TaskSignaling            = "Signaling"
	TaskRestartSignal        = "Restart Signaled"
	TaskLeaderDead           = "Leader Task Dead"
	TaskSiblingFailed        = "Sibling Task Failed"
	TaskMainDead             = "Main Tasks Dead"
	TaskDownloadingArtifacts = "Downloading Artifacts"
	TaskReattached           = "Reattached"
	TaskOOMKilled            = "OOM Killed"
)

// TaskEvent is one entry of a task's timeline.
type TaskEvent struct {
	Type           string            `json:"Type"`
	Time           int64             `json:"Time"` // unix nanos
	DisplayMessage string            `json:"DisplayMessage"`
	Details        map[string]string `json:"Details,omitempty"`
	Message        string            `json:"Message,omitempty"`
	ExitCode       int               `json:"ExitCode,omitempty"`
	Signal         int               `json:"Signal,omitempty"`
	OOMKilled      bool              `json:"OOMKilled,omitempty"`
	KillTimeout    time.Duration     `json:"KillTimeout,omitempty"`
	DriverError    string            `json:"DriverError,omitempty"`
	FailsTask      bool              `json:"FailsTask,omitempty"`
	RestartReason  string            `json:"RestartReason,omitempty"`
	StartDelay     int64             `json:"StartDelay,omitempty"`
}

// AllocResourceUsage answers GET /v1/client/allocation/{id}/stats.
type AllocResourceUsage struct {
	ResourceUsage *ResourceUsage                `json:"ResourceUsage"`
	Tasks         map[string]*TaskResourceUsage `json:"Tasks"`
	Timestamp     int64                         `json:"Timestamp"`
}

// TaskResourceUsage is one task's usage.
type TaskResourceUsage struct {
	ResourceUsage *ResourceUsage            `json:"ResourceUsage"`
	Timestamp     int64                     `json:"Timestamp"`
	Pids          map[string]*ResourceUsage `json:"Pids,omitempty"`
}

// ResourceUsage holds memory and cpu stats.
type ResourceUsage struct {
	MemoryStats *MemoryStats `json:"MemoryStats"`
	CpuStats    *CpuStats    `json:"CpuStats"`
}

// MemoryStats in bytes.
type MemoryStats struct {
	RSS      uint64   `json:"RSS"`
	Cache    uint64   `json:"Cache"`
	Swap     uint64   `json:"Swap"`
	Usage    uint64   `json:"Usage"`
	MaxUsage uint64   `json:"MaxUsage"`
	Measured []string `json:"Measured"`
}

// CpuStats: Percent of one core, TotalTicks in MHz-equivalents.
type CpuStats struct {
	SystemMode       float64  `json:"SystemMode"`
	UserMode         float64  `json:"UserMode"`
	TotalTicks       float64  `json:"TotalTicks"`
	ThrottledPeriods uint64   `json:"ThrottledPeriods"`
	ThrottledTime    uint64   `json:"ThrottledTime"`
	Percent          float64  `json:"Percent"`
	Measured         []string `json:"Measured"`
}

// AllocFileInfo is an entry of GET /v1/client/fs/ls/{alloc}.
type AllocFileInfo struct {
	Name        string    `json:"Name"`
	IsDir       bool      `json:"IsDir"`
	Size        int64     `json:"Size"`
	FileMode    string    `json:"FileMode"`
	ModTime     time.Time `json:"ModTime"`
	ContentType string    `json:"ContentType,omitempty"`
}

// AllocSignalRequest is the body of /v1/client/allocation/{id}/signal.
type AllocSignalRequest struct {
	Task   string `json:"Task,omitempty"`
	Signal string `json:"Signal"`
}

// AllocRestartRequest is the body of /v1/client/allocation/{id}/restart.
type AllocRestartRequest struct {
	TaskName string `json:"TaskName,omitempty"`
	AllTasks bool   `json:"AllTasks,omitempty"`
}
