package api

// Reservation is capacity a pending gang holds back so that a stream of
// smaller, lower-priority work cannot starve it (as Slurm's backfill
// reservations): the scheduler records it on the gang's blocked eval, the
// nodes the gang will use once the work on them frees what it needs, and
// every other pass treats that capacity as taken for new placements of
// lower priority, or of the same priority and a newer job. Such work may
// still backfill a reserved node when the node keeps room for the
// reservation after it. The reservation ends with its blocked eval (the
// gang placed, a newer eval, or the eval cancelled).
type Reservation struct {
	Namespace string `json:"Namespace"`
	JobID     string `json:"JobID"`
	// JobCreateIndex orders jobs of one priority: a reservation holds
	// capacity back from jobs created after its job only.
	JobCreateIndex uint64 `json:"JobCreateIndex"`
	Priority       int    `json:"Priority"`
	// Groups are the task groups the reservation is for.
	Groups []string        `json:"Groups"`
	Nodes  []*ReservedNode `json:"Nodes"`
	// CreateTime is when the scheduler made it (Unix nanoseconds).
	CreateTime int64 `json:"CreateTime"`
}

// ReservedNode is one node a reservation holds and the capacity it needs
// there (the asks of the members meant for the node, summed).
type ReservedNode struct {
	NodeID   string `json:"NodeID"`
	Members  int    `json:"Members"`
	CPU      int64  `json:"CPU"` // MHz
	MemoryMB int64  `json:"MemoryMB"`
	DiskMB   int64  `json:"DiskMB"`
	// Devices are device instances needed, by requested name ("nvidia/gpu").
	Devices []ReservedDevice `json:"Devices,omitempty"`
}

// ReservedDevice is a count of device instances a reservation needs.
type ReservedDevice struct {
	Name  string `json:"Name"`
	Count int    `json:"Count"`
}

// Holds reports whether the reservation keeps its capacity from new
// placements of job (namespace, id, priority, create index): jobs of
// lower priority, and jobs of its priority created after its job.
func (r *Reservation) Holds(namespace, id string, priority int, createIndex uint64) bool {
	if r == nil || (r.Namespace == namespace && r.JobID == id) {
		return false
	}
	if priority != r.Priority {
		return priority < r.Priority
	}
	return createIndex > r.JobCreateIndex
}
