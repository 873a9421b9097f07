package http

import (
	"context"
	nethttp "net/http"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// ServerRole is the server role as the handlers see it, wired explicitly
// (agent/http/serverstate.Bind binds a *server.Server's parts to every field):
// the state store's reads, its event stream, the cluster view, and one
// backend per resource for the writes of that resource's routes. A nil
// field answers that resource's routes 503 (a test wires only what it
// needs).
type ServerRole struct {
	// State is the state store, asked for the current one on every read.
	State  StateSource
	Events EventSource
	// Cluster says who leads (query meta, /v1/status); Leadership forwards
	// a follower's requests to the leader; Raft lists the peers the
	// connection limit exempts.
	Cluster    Cluster
	Leadership Leadership
	Raft       RaftPeers

	Jobs            JobsBackend
	JobVerbs        JobVerbsBackend
	Nodes           NodesBackend
	Allocs          AllocsBackend
	Evals           EvalsBackend
	Deployments     DeploymentsBackend
	ACL             ACLBackend
	SSO             SSOBackend
	Namespaces      NamespacesBackend
	NodePools       NodePoolsBackend
	Queues          QueuesBackend
	Services        ServicesBackend
	Operator        OperatorBackend
	SchedulerConfig SchedulerConfigBackend
	Identity        IdentityBackend
	Variables       VariablesBackend
}

// StateSource is the server's state store as it is now. The server swaps
// its store on a snapshot restore: every read asks for the current one,
// and a blocking query also watches abandoned, closed when that store is
// replaced, so it wakes up and reads the new one.
type StateSource interface {
	CurrentState() (st Store, abandoned <-chan struct{})
}

// Store is the read side of the server's state store, by resource (the
// XxxState interfaces beside each resource's handlers). Every read takes
// a watch set (may be nil) that fires when what was read changes;
// blocking queries wait on it. Missing single objects are (nil, nil).
type Store interface {
	JobState
	NodeState
	AllocState
	EvalState
	DeploymentState
	ACLState
	SSOState
	NamespaceState
	NodePoolState
	QueueState
	ServiceState
	SchedulerConfigState
	UsageState
	// Index is the last Raft index that changed table ("jobs", "nodes",
	// "allocs", "evals", "deployments", ...).
	Index(table string) uint64
	// WaitIndex waits until the store has applied index; it fails with
	// ctx's error, or when the store is abandoned meanwhile.
	WaitIndex(ctx context.Context, index uint64) error
}

// Cluster is the server's view of who leads, for the query meta headers,
// GET /v1/status/* and /v1/agent/health.
type Cluster interface {
	// Leader is the leader's Raft address ("" when none is known).
	Leader() string
	Peers() []string
	LastContact() time.Duration
}

// Leadership lets a follower forward writes and plain reads to the
// leader's HTTP address and the leader check ?consistent reads (leader.go).
type Leadership interface {
	IsLeader() bool
	// LeaderHTTPAddr is the leader's HTTP host:port ("" when unknown).
	LeaderHTTPAddr() string
	// VerifyLeader confirms leadership with a quorum (api.ErrNotLeader).
	VerifyLeader(ctx context.Context) error
	// LeaderChanged returns a channel closed at the next change of
	// leader (a request held for one goes on at once); take it before
	// looking at the leader.
	LeaderChanged() <-chan struct{}
}

// RaftPeers is the Raft configuration, whose other servers the
// per-client connection limit does not count (connlimit_peers.go).
type RaftPeers interface {
	// RaftID is this server's own ID in the configuration.
	RaftID() string
	RaftConfiguration() (*api.RaftConfiguration, error)
	// RaftConfigurationIndex is the configuration's index (a cheap read).
	RaftConfigurationIndex() uint64
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
// allocations it holds. Its optional abilities (allocNamespacer,
// nodeIdentifier, grantSecrets) are found by type assertion.
type ClientRole interface {
	Handler() nethttp.Handler
	HasAlloc(id string) bool
}

// Parser converts job HCL to a job (POST /v1/jobs/parse).
type Parser func(req *api.JobsParseRequest) (*api.Job, error)

// readFunc performs one read from st, registering what it read in ws,
// and returns the value (or a lazyAnswer that builds it) and the index
// of the data (the index of the tables read).
type readFunc func(st Store, ws memdb.WatchSet) (any, uint64, error)

// errNoServer answers server routes on an agent without the server role
// (and without servers to forward them to).
func errNoServer() error {
	return api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
}

// need fails with errNoServer on an agent without the server role, else
// with msg (503) unless ok: the resource's backend is wired.
func (s *HTTPServer) need(ok bool, msg string) error {
	if s.cfg.Server == nil {
		return errNoServer()
	}
	if !ok {
		return api.Errorf(api.ErrUnavailable, msg)
	}
	return nil
}
