package api

import "time"

// Evaluation statuses.
const (
	EvalStatusBlocked   = "blocked"
	EvalStatusPending   = "pending"
	EvalStatusComplete  = "complete"
	EvalStatusFailed    = "failed"
	EvalStatusCancelled = "canceled"
)

// Evaluation triggers.
const (
	EvalTriggerJobRegister       = "job-register"
	EvalTriggerJobDeregister     = "job-deregister"
	EvalTriggerPeriodicJob       = "periodic-job"
	EvalTriggerNodeDrain         = "node-drain"
	EvalTriggerNodeUpdate        = "node-update"
	EvalTriggerAllocStop         = "alloc-stop"
	EvalTriggerScheduled         = "scheduled"
	EvalTriggerRollingUpdate     = "rolling-update"
	EvalTriggerDeploymentWatcher = "deployment-watcher"
	EvalTriggerFailedFollowUp    = "failed-follow-up"
	EvalTriggerMaxPlans          = "max-plan-attempts"
	EvalTriggerRetryFailedAlloc  = "alloc-failure"
	EvalTriggerQueuedAllocs      = "queued-allocs"
	EvalTriggerPreemption        = "preemption"
	EvalTriggerJobScaling        = "job-scaling"
	EvalTriggerReconnect         = "reconnect"
)

// Evaluation is a request to reconcile a job with the cluster.
type Evaluation struct {
	ID                   string                  `json:"ID"`
	Namespace            string                  `json:"Namespace"`
	Priority             int                     `json:"Priority"`
	Type                 string                  `json:"Type"` // the job type, or "_core"
	TriggeredBy          string                  `json:"TriggeredBy"`
	JobID                string                  `json:"JobID"`
	JobModifyIndex       uint64                  `json:"JobModifyIndex,omitempty"`
	NodeID               string                  `json:"NodeID,omitempty"`
	NodeModifyIndex      uint64                  `json:"NodeModifyIndex,omitempty"`
	DeploymentID         string                  `json:"DeploymentID,omitempty"`
	Status               string                  `json:"Status"`
	StatusDescription    string                  `json:"StatusDescription,omitempty"`
	Wait                 time.Duration           `json:"Wait,omitempty"`
	WaitUntil            time.Time               `json:"WaitUntil,omitempty"`
	NextEval             string                  `json:"NextEval,omitempty"`
	PreviousEval         string                  `json:"PreviousEval,omitempty"`
	BlockedEval          string                  `json:"BlockedEval,omitempty"`
	RelatedEvals         []string                `json:"RelatedEvals,omitempty"`
	FailedTGAllocs       map[string]*AllocMetric `json:"FailedTGAllocs,omitempty"`
	ClassEligibility     map[string]bool         `json:"ClassEligibility,omitempty"`
	EscapedComputedClass bool                    `json:"EscapedComputedClass,omitempty"`
	AnnotatePlan         bool                    `json:"AnnotatePlan,omitempty"`
	QueuedAllocations    map[string]int          `json:"QueuedAllocations,omitempty"`
	SnapshotIndex        uint64                  `json:"SnapshotIndex,omitempty"`
	CreateIndex          uint64                  `json:"CreateIndex"`
	ModifyIndex          uint64                  `json:"ModifyIndex"`
	CreateTime           int64                   `json:"CreateTime"`
	ModifyTime           int64                   `json:"ModifyTime"`
	// Reservation is the capacity a blocked eval of a pending gang holds
	// back from lower-priority work (see Reservation).
	Reservation *Reservation `json:"Reservation,omitempty"`
	// DefragMoves are the moves an eval of trigger EvalTriggerDefrag
	// makes: alloc ID -> destination node ID (DefragPlan).
	DefragMoves map[string]string `json:"DefragMoves,omitempty"`
	// StopAllocs are the allocs an eval of trigger EvalTriggerIdleReclaim
	// stops (with the reason IdleReclaimDescription).
	StopAllocs []string `json:"StopAllocs,omitempty"`
}

// TerminalStatus reports whether the eval is finished.
func (e *Evaluation) TerminalStatus() bool {
	switch e.Status {
	case EvalStatusComplete, EvalStatusFailed, EvalStatusCancelled:
		return true
	}
	return false
}

// Copy returns a deep copy.
func (e *Evaluation) Copy() *Evaluation {
	if e == nil {
		return nil
	}
	return deepCopy(e)
}

// EvalDeleteRequest is the body of DELETE /v1/evaluations: the IDs to
// delete, or a go-bexpr Filter over the evals (one of the two).
type EvalDeleteRequest struct {
	EvalIDs []string `json:"EvalIDs,omitempty"`
	Filter  string   `json:"Filter,omitempty"`
}

// EvalDeleteResponse says how many evals were deleted.
type EvalDeleteResponse struct {
	Count int `json:"Count"`
}
