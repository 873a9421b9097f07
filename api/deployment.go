package api

// Deployment statuses.
const (
	DeploymentStatusRunning    = "running"
	DeploymentStatusPaused     = "paused"
	DeploymentStatusFailed     = "failed"
	DeploymentStatusSuccessful = "successful"
	DeploymentStatusCancelled  = "cancelled"
	DeploymentStatusBlocked    = "blocked"
)

// Deployment tracks a rolling update of a service job version.
type Deployment struct {
	ID                 string                      `json:"ID"`
	Namespace          string                      `json:"Namespace"`
	JobID              string                      `json:"JobID"`
	JobVersion         uint64                      `json:"JobVersion"`
	JobModifyIndex     uint64                      `json:"JobModifyIndex"`
	JobSpecModifyIndex uint64                      `json:"JobSpecModifyIndex"`
	JobCreateIndex     uint64                      `json:"JobCreateIndex"`
	TaskGroups         map[string]*DeploymentState `json:"TaskGroups"`
	Status             string                      `json:"Status"`
	StatusDescription  string                      `json:"StatusDescription"`
	CreateIndex        uint64                      `json:"CreateIndex"`
	ModifyIndex        uint64                      `json:"ModifyIndex"`
}

// Active reports whether the deployment is still in progress.
func (d *Deployment) Active() bool {
	switch d.Status {
	case DeploymentStatusRunning, DeploymentStatusPaused, DeploymentStatusBlocked:
		return true
	}
	return false
}

// DeploymentState is one group's progress.
type DeploymentState struct {
	AutoRevert        bool     `json:"AutoRevert"`
	AutoPromote       bool     `json:"AutoPromote"`
	ProgressDeadline  int64    `json:"ProgressDeadline"`
	RequireProgressBy int64    `json:"RequireProgressBy"`
	Promoted          bool     `json:"Promoted"`
	PlacedCanaries    []string `json:"PlacedCanaries,omitempty"`
	DesiredCanaries   int      `json:"DesiredCanaries"`
	DesiredTotal      int      `json:"DesiredTotal"`
	PlacedAllocs      int      `json:"PlacedAllocs"`
	HealthyAllocs     int      `json:"HealthyAllocs"`
	UnhealthyAllocs   int      `json:"UnhealthyAllocs"`
}

// DeploymentStatusUpdate changes a deployment's status in a plan.
type DeploymentStatusUpdate struct {
	DeploymentID      string `json:"DeploymentID"`
	Status            string `json:"Status"`
	StatusDescription string `json:"StatusDescription"`
}
