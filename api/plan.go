package api

// Plan is a scheduler's proposed change to the cluster, committed
// atomically by the leader's plan applier after re-checking each node.
// It is a wire type because it crosses Raft.
type Plan struct {
	EvalID    string `json:"EvalID"`
	EvalToken string `json:"EvalToken,omitempty"`
	Priority  int    `json:"Priority"`
	// AllAtOnce makes the whole plan all-or-nothing: if any node is
	// rejected, nothing is committed. Gang placement builds on this.
	AllAtOnce bool `json:"AllAtOnce,omitempty"`
	// Gangs lists the plan's gang placements: each is committed whole or
	// dropped whole (with the preemptions made for it).
	Gangs []*PlanGang `json:"Gangs,omitempty"`
	Job   *Job        `json:"Job,omitempty"`
	// NodeUpdate holds allocs to stop or evict, by node.
	NodeUpdate map[string][]*Allocation `json:"NodeUpdate,omitempty"`
	// NodeAllocation holds new or in-place updated allocs, by node.
	NodeAllocation map[string][]*Allocation `json:"NodeAllocation,omitempty"`
	// NodePreemptions holds allocs evicted to make room, by node.
	NodePreemptions   map[string][]*Allocation  `json:"NodePreemptions,omitempty"`
	Annotations       *PlanAnnotations          `json:"Annotations,omitempty"`
	Deployment        *Deployment               `json:"Deployment,omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate `json:"DeploymentUpdates,omitempty"`
	SnapshotIndex     uint64                    `json:"SnapshotIndex"`
}

// IsNoOp reports whether the plan changes nothing.
func (p *Plan) IsNoOp() bool {
	return len(p.NodeUpdate) == 0 && len(p.NodeAllocation) == 0 && len(p.NodePreemptions) == 0 &&
		p.Deployment == nil && len(p.DeploymentUpdates) == 0
}

// AppendAlloc adds a placement.
func (p *Plan) AppendAlloc(a *Allocation) {
	if p.NodeAllocation == nil {
		p.NodeAllocation = map[string][]*Allocation{}
	}
	p.NodeAllocation[a.NodeID] = append(p.NodeAllocation[a.NodeID], a)
}

// AppendStoppedAlloc adds a stop of an existing alloc.
func (p *Plan) AppendStoppedAlloc(a *Allocation, desc, clientStatus string) {
	c := a.Copy()
	c.DesiredStatus = AllocDesiredStatusStop
	c.DesiredDescription = desc
	if clientStatus != "" {
		c.ClientStatus = clientStatus
	}
	if p.NodeUpdate == nil {
		p.NodeUpdate = map[string][]*Allocation{}
	}
	p.NodeUpdate[a.NodeID] = append(p.NodeUpdate[a.NodeID], c)
}

// PlanResult is what the applier committed.
type PlanResult struct {
	NodeUpdate        map[string][]*Allocation  `json:"NodeUpdate,omitempty"`
	NodeAllocation    map[string][]*Allocation  `json:"NodeAllocation,omitempty"`
	NodePreemptions   map[string][]*Allocation  `json:"NodePreemptions,omitempty"`
	Deployment        *Deployment               `json:"Deployment,omitempty"`
	DeploymentUpdates []*DeploymentStatusUpdate `json:"DeploymentUpdates,omitempty"`
	// RejectedNodes did not fit on re-check; RefreshIndex is the state
	// index the worker must see before retrying.
	RejectedNodes []string `json:"RejectedNodes,omitempty"`
	RefreshIndex  uint64   `json:"RefreshIndex"`
	AllocIndex    uint64   `json:"AllocIndex"`
}

// PlanAnnotations summarise a plan per group (shown by `job plan`).
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates `json:"DesiredTGUpdates"`
	PreemptedAllocs  []*AllocListStub           `json:"PreemptedAllocs,omitempty"`
}

// DesiredUpdates counts a group's changes.
type DesiredUpdates struct {
	Ignore            uint64 `json:"Ignore"`
	Place             uint64 `json:"Place"`
	Migrate           uint64 `json:"Migrate"`
	Stop              uint64 `json:"Stop"`
	InPlaceUpdate     uint64 `json:"InPlaceUpdate"`
	DestructiveUpdate uint64 `json:"DestructiveUpdate"`
	Canary            uint64 `json:"Canary"`
	Preemptions       uint64 `json:"Preemptions"`
}
