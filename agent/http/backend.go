package http

import (
	"context"
	nethttp "net/http"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// State is the read side of the server's state store. Every read takes a
// watch set (may be nil) that fires when what was read changes; blocking
// queries wait on it. Missing single objects are (nil, nil).
type State interface {
	JobByID(ws memdb.WatchSet, ns, id string) (*api.Job, error)
	Jobs(ws memdb.WatchSet, ns, prefix string) ([]*api.Job, error)
	JobVersionsByID(ws memdb.WatchSet, ns, id string) ([]*api.Job, error)
	JobSummaryByID(ws memdb.WatchSet, ns, id string) (*api.JobSummary, error)
	NodeByID(ws memdb.WatchSet, id string) (*api.Node, error)
	Nodes(ws memdb.WatchSet, prefix string) ([]*api.Node, error)
	AllocByID(ws memdb.WatchSet, id string) (*api.Allocation, error)
	AllocsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error)
	Allocs(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error)
	AllocsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*api.Allocation, error)
	AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*api.Allocation, error)
	// NodeAllocsByID returns each ID's alloc when it is on nodeID, else
	// nil, in ids' order.
	NodeAllocsByID(nodeID string, ids []string) ([]*api.Allocation, error)
	// NodeAllocIndex is the last index at which the servers changed an
	// alloc of the node (0: never); a client's own status reports do not
	// move it.
	NodeAllocIndex(ws memdb.WatchSet, nodeID string) (uint64, error)
	AllocsByEval(ws memdb.WatchSet, evalID string) ([]*api.Allocation, error)
	EvalByID(ws memdb.WatchSet, id string) (*api.Evaluation, error)
	EvalsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error)
	Evals(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error)
	EvalsByJob(ws memdb.WatchSet, ns, jobID string) ([]*api.Evaluation, error)
	// Index is the last Raft index that changed table ("jobs", "nodes",
	// "allocs", "evals", "deployments").
	Index(table string) uint64
}

// IndexWaiter is an optional ability of State (found by type assertion):
// waiting until the state has applied a Raft index, for reads that name
// the index their caller saw (NodeAllocFetchRequest.MinIndex).
type IndexWaiter interface {
	WaitIndex(ctx context.Context, index uint64) error
}

// Server is the write side and the cluster view of the server role. All
// writes go through Raft; errors wrap api sentinels.
type Server interface {
	RegisterJob(ctx context.Context, req *api.JobRegisterRequest) (*api.JobRegisterResponse, error)
	DeregisterJob(ctx context.Context, ns, id string, purge bool) (*api.JobDeregisterResponse, error)
	EvaluateJob(ctx context.Context, ns, id string) (*api.JobEvaluateResponse, error)
	PlanJob(ctx context.Context, req *api.JobPlanRequest) (*api.JobPlanResponse, error)
	RegisterNode(ctx context.Context, n *api.Node, intro api.NodeIntro) (*api.NodeRegisterResponse, error)
	// CreateNodeIntro signs an introduction token for new nodes.
	CreateNodeIntro(ctx context.Context, req *api.NodeIntroRequest) (*api.NodeIntroResponse, error)
	HeartbeatNode(ctx context.Context, id, secret string, req *api.NodeHeartbeatRequest) (*api.NodeRegisterResponse, error)
	UpdateAllocsFromClient(ctx context.Context, nodeID, secret string, allocs []*api.Allocation) (uint64, error)
	UpdateNodeDrain(ctx context.Context, req *api.NodeUpdateDrainRequest) (*api.NodeUpdateResponse, error)
	UpdateNodeEligibility(ctx context.Context, req *api.NodeUpdateEligibilityRequest) (*api.NodeUpdateResponse, error)
	StopAlloc(ctx context.Context, id string) (*api.AllocStopResponse, error)
	DispatchJob(ctx context.Context, ns, id string, req *api.JobDispatchRequest) (*api.JobDispatchResponse, error)
	ForcePeriodic(ctx context.Context, ns, id string) (*api.PeriodicForceResponse, error)
	RevertJob(ctx context.Context, ns, id string, req *api.JobRevertRequest) (*api.JobRegisterResponse, error)
	ScaleJob(ctx context.Context, ns, id string, req *api.JobScaleRequest) (*api.JobRegisterResponse, error)
	SystemGC(ctx context.Context) (int, error)
	Leader() string
	Peers() []string
	LastContact() time.Duration
}

// JobDiffer is an optional ability of Server (found by type assertion):
// the diff between two versions of a job (either may be nil), for
// GET /v1/job/{id}/versions?diffs=true. It must be pure.
type JobDiffer interface {
	JobDiff(old, new *api.Job) *api.JobDiff
}

// EventSource streams state change events: topics maps topic -> keys
// ("*" = all); with fromIndex > 0 buffered batches from that index come first.
type EventSource interface {
	Subscribe(ctx context.Context, topics map[string][]string, fromIndex uint64) (EventSub, error)
}

// EventSub is one subscription. Next blocks for the next batch; it fails
// when ctx ends or the subscription was closed (e.g. it fell behind).
type EventSub interface {
	Next(ctx context.Context) (api.Events, error)
	Close()
}

// ClientRole is the local client role: it serves /v1/client/... for the
// allocations it holds.
type ClientRole interface {
	Handler() nethttp.Handler
	HasAlloc(id string) bool
}

// Parser converts job HCL to a job (POST /v1/jobs/parse).
type Parser func(req *api.JobsParseRequest) (*api.Job, error)
