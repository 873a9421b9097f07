package api

// Why pending: the structured reasons a task group's allocs were not
// placed and what would let them run, carried in AllocMetric.Reasons and
// AllocMetric.Counterfactuals of an evaluation's FailedTGAllocs (and so
// in `drover job status`, `drover job plan` and the UI). The scheduler
// computes them from the state it scheduled against, after the plan it
// built; they are bounded work (a sample of nodes, not a search of the
// cluster), so "largest free set" and "soonest" name what the sample saw.
// System and sysbatch jobs get reasons only (each of their allocs needs
// its own node). A group at a queue limit gets counterfactuals from that
// queue's subtree only: nothing else frees its quota.

// Pending reason kinds (PendingReason.Kind), in the order the scheduler
// lists them.
const (
	// PendingQuota: the job's queue is at a limit (from
	// AllocMetric.QuotaExhausted); Queue names it when known.
	PendingQuota = "quota"
	// PendingGang: a gang could not be placed whole (AllocMetric.GangFailure).
	PendingGang = "gang"
	// PendingNoNodes: no ready node is in the job's datacenters and pool,
	// or a datacenter has none (Datacenter).
	PendingNoNodes = "no-nodes"
	// PendingDevices: a device ask fits no node; Need is the ask, Have the
	// most free matching devices on one node (Node), Connected the largest
	// NVLink-connected free set there when the node reports links.
	PendingDevices = "devices"
	// PendingExhausted: nodes lack a resource dimension (Dimension: cpu,
	// memory, disk, ports, cores, reserved, ...); Count nodes.
	PendingExhausted = "exhausted"
	// PendingConstraint: a constraint (Constraint) excludes Count nodes.
	PendingConstraint = "constraint"
	// PendingDriver: Count nodes lack a healthy Driver the group's tasks
	// use; Message says why (the fingerprint's health description, or
	// that no node has a driver of that name).
	PendingDriver = "driver"
	// PendingCountLimit: the group's count (or that of a group of its
	// gang) is above the server's job_max_group_count; nothing of it is
	// placed until the job is changed. It is the group's only reason.
	PendingCountLimit = "count-limit"
)

// PendingReason is one structured reason a group's allocs wait.
type PendingReason struct {
	Kind string `json:"Kind"`
	// Message is the reason in words, e.g. "needs 4 nvidia/gpu on one
	// node; largest free set is 2 on node gpu-3 (2 NVLink-connected)".
	Message    string `json:"Message"`
	Node       string `json:"Node,omitempty"`       // node name
	Queue      string `json:"Queue,omitempty"`      // quota reasons
	Dimension  string `json:"Dimension,omitempty"`  // exhausted reasons
	Constraint string `json:"Constraint,omitempty"` // constraint reasons
	Datacenter string `json:"Datacenter,omitempty"` // no-nodes reasons
	Driver     string `json:"Driver,omitempty"`     // driver reasons
	Count      int    `json:"Count,omitempty"`      // nodes the reason applies to
	Need       int    `json:"Need,omitempty"`       // devices asked
	Have       int    `json:"Have,omitempty"`       // most free on one node
	Connected  int    `json:"Connected,omitempty"`  // largest NVLink-connected free set on Node
}

// Counterfactual kinds (Counterfactual.Kind).
const (
	// CounterPreempt: evicting the named lower-priority job's allocs on
	// Node would make room; Blocked says why the scheduler did not (empty
	// when it could have but the group failed for another reason, such
	// as a gang needing more members than one node gives).
	CounterPreempt = "preempt"
	// CounterJobEnds: the named job ending would free enough room on
	// Node; batch jobs are named first (they end by themselves), then the
	// longest running.
	CounterJobEnds = "job-ends"
)

// Counterfactual is one way a pending group would run.
type Counterfactual struct {
	Kind string `json:"Kind"`
	// Message is it in words, e.g. "would run on node b if job low
	// (priority 30) were preempted; not done: the priority gap is 5, under
	// 10".
	Message   string `json:"Message"`
	Namespace string `json:"Namespace"`
	JobID     string `json:"JobID"`
	Priority  int    `json:"Priority"`
	JobType   string `json:"JobType,omitempty"`
	Node      string `json:"Node,omitempty"` // node name
	Allocs    int    `json:"Allocs,omitempty"`
	Blocked   string `json:"Blocked,omitempty"`
}
