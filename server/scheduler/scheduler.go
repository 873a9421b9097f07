package scheduler

import (
	"log/slog"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fairshare"
)

// State is the read-only view of the cluster a scheduler needs. The
// server's state store snapshot implements it. Returned objects are shared
// and must not be modified (copy first).
type State interface {
	// Index is the Raft index the snapshot reflects.
	Index() uint64
	JobByID(namespace, id string) (*api.Job, error)
	// Nodes returns every node (any status).
	Nodes() ([]*api.Node, error)
	NodeByID(id string) (*api.Node, error)
	// AllocsByJob returns every alloc of the job, terminal ones included.
	AllocsByJob(namespace, jobID string) ([]*api.Allocation, error)
	// AllocsByNode returns every alloc on the node, terminal ones included.
	AllocsByNode(nodeID string) ([]*api.Allocation, error)
	AllocByID(id string) (*api.Allocation, error)
	// LatestDeploymentByJobID returns the newest deployment or nil.
	LatestDeploymentByJobID(namespace, jobID string) (*api.Deployment, error)
	// Reservations returns the active reservations: those of blocked
	// evals of jobs that still run (one per job, the newest), in any order.
	Reservations() ([]*api.Reservation, error)
	// Queues returns every queue (the implicit "default" included),
	// sorted by name.
	Queues() ([]*api.Queue, error)
	// QueueUsage returns what each queue's non-terminal allocs hold, by
	// queue name: only the allocs of jobs naming that queue (a parent's
	// total is its own plus its descendants'); queues holding nothing may
	// be absent. A job's queue is api.JobQueue(job); an alloc's holding is
	// (*api.Allocation).QueueUsage.
	QueueUsage() (map[string]*api.QueueResources, error)
}

// Options are the scheduler's inputs besides state and eval.
type Options struct {
	// Now is the scheduler's clock reading (reschedule delays, timestamps).
	Now    time.Time
	Logger *slog.Logger
	// SampleLimit is how many feasible nodes are scored per placement.
	// 0 picks the default (max(2, ceil(log2 n)) for service jobs, 2 for
	// batch jobs, n = candidate nodes; at least 32 with devices, 100 with
	// affinities or spreads); a negative value scores every feasible node
	// (used by tests comparing against an oracle).
	SampleLimit int
	// Preemption says which job types may evict allocs of jobs at least
	// 10 priority points lower; nil means DefaultPreemptionConfig.
	Preemption *PreemptionConfig
	// Algorithm is how nodes are scored for fit: AlgorithmBinpack ("" too,
	// the default) fills the fullest nodes first, AlgorithmSpread the
	// emptiest (Nomad's scheduler_algorithm). Other values are rejected
	// with ErrBadOptions.
	Algorithm string
	// FairShare is the queues' fair shares (server/fairshare), computed
	// by the server from state; nil: queues play no part. With it,
	// preemption across queues is reclaim by fair share, regardless of
	// job priority, and never loops (reclaim.go); within a queue the
	// priority rule stays.
	FairShare *fairshare.Shares
	// MaxGroupCount is the largest group count the scheduler works on
	// (the server's job_max_group_count; 0 picks DefaultMaxGroupCount).
	// The server refuses jobs above it, but one stored before (an older
	// server, a lowered setting) can still reach the scheduler: such a
	// group, with the other groups of its gang (or every group of an
	// all_at_once job), is left as it is (nothing placed, stopped or
	// updated) and fails with an api.PendingCountLimit reason and no
	// blocked eval, until the job is changed.
	MaxGroupCount int
	// Workload is the expected shapes of GPU asks (the server's Workload
	// of recent submissions); with it, GPU placements minimise the growth
	// of the fragmentation those shapes see (fragment.go). Nil: GPU
	// placement is best fit.
	Workload []WorkloadShape
	// Usage, when set and the State is a VersionedState, keeps nodes'
	// usage between passes (usage.go). Nil: each pass adds it up.
	Usage *UsageCache
}

// DefaultMaxGroupCount is the default bound on a group's count: the
// server's job_max_group_count and Options.MaxGroupCount when unset.
const DefaultMaxGroupCount = 10000

// Scheduler algorithms (Options.Algorithm), Nomad's names.
const (
	AlgorithmBinpack = "binpack"
	AlgorithmSpread  = "spread"
)

// Result is what one scheduling pass decided.
type Result struct {
	// Plan to submit (may be a no-op).
	Plan *api.Plan
	// Eval is a copy of the input eval with Status, StatusDescription,
	// FailedTGAllocs, QueuedAllocations, BlockedEval and NextEval set.
	Eval *api.Evaluation
	// Blocked is a new eval (status blocked) to create when some
	// placements could not be made; it waits for capacity.
	Blocked *api.Evaluation
	// FollowUps are delayed evals (status pending, WaitUntil set), e.g.
	// for rescheduling failed allocs after their delay.
	FollowUps []*api.Evaluation
}
