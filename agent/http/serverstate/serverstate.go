package serverstate

import (
	"context"
	"errors"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/agent/http"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
	"github.com/drover/drover/server/state"
)

// serverState adapts the server's state store to http.State. The server
// swaps its store on a snapshot restore, so every read asks for the
// current one and also watches its abandon channel, so a blocking query
// wakes up and re-reads from the new store.
type serverState struct{ s *server.Server }

var _ http.State = serverState{}

func (a serverState) st(ws memdb.WatchSet) *state.StateStore {
	st := a.s.State()
	if ws != nil {
		ws.Add(st.AbandonCh())
	}
	return st
}

func (a serverState) JobByID(ws memdb.WatchSet, ns, id string) (*api.Job, error) {
	return a.st(ws).JobByID(ws, ns, id)
}
func (a serverState) Jobs(ws memdb.WatchSet, ns, prefix string) ([]*api.Job, error) {
	return a.st(ws).Jobs(ws, ns, prefix)
}
func (a serverState) JobVersionsByID(ws memdb.WatchSet, ns, id string) ([]*api.Job, error) {
	return a.st(ws).JobVersionsByID(ws, ns, id)
}
func (a serverState) JobSummaryByID(ws memdb.WatchSet, ns, id string) (*api.JobSummary, error) {
	return a.st(ws).JobSummaryByID(ws, ns, id)
}
func (a serverState) NodeByID(ws memdb.WatchSet, id string) (*api.Node, error) {
	return a.st(ws).NodeByID(ws, id)
}
func (a serverState) Nodes(ws memdb.WatchSet, prefix string) ([]*api.Node, error) {
	return a.st(ws).Nodes(ws, prefix)
}
func (a serverState) AllocByID(ws memdb.WatchSet, id string) (*api.Allocation, error) {
	return a.st(ws).AllocByID(ws, id)
}
func (a serverState) AllocsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error) {
	return a.st(ws).AllocsByIDPrefix(ws, ns, prefix)
}
func (a serverState) Allocs(ws memdb.WatchSet, ns, prefix string) ([]*api.Allocation, error) {
	return a.st(ws).Allocs(ws, ns, prefix)
}
func (a serverState) AllocsByJob(ws memdb.WatchSet, ns, jobID string, all bool) ([]*api.Allocation, error) {
	return a.st(ws).AllocsByJob(ws, ns, jobID, all)
}
func (a serverState) NodeAllocIndex(ws memdb.WatchSet, nodeID string) (uint64, error) {
	return a.st(ws).NodeAllocIndex(ws, nodeID)
}
func (a serverState) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*api.Allocation, error) {
	return a.st(ws).AllocsByNode(ws, nodeID)
}
func (a serverState) NodeAllocsByID(nodeID string, ids []string) ([]*api.Allocation, error) {
	return a.st(nil).NodeAllocsByID(nodeID, ids)
}
func (a serverState) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*api.Allocation, error) {
	return a.st(ws).AllocsByEval(ws, evalID)
}
func (a serverState) EvalByID(ws memdb.WatchSet, id string) (*api.Evaluation, error) {
	return a.st(ws).EvalByID(ws, id)
}
func (a serverState) EvalsByIDPrefix(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error) {
	return a.st(ws).EvalsByIDPrefix(ws, ns, prefix)
}
func (a serverState) Evals(ws memdb.WatchSet, ns, prefix string) ([]*api.Evaluation, error) {
	return a.st(ws).Evals(ws, ns, prefix)
}
func (a serverState) EvalsByJob(ws memdb.WatchSet, ns, jobID string) ([]*api.Evaluation, error) {
	return a.st(ws).EvalsByJob(ws, ns, jobID)
}
func (a serverState) Index(table string) uint64 { return a.s.State().Index(table) }

// WaitIndex waits until the current store has applied index; a store
// replaced meanwhile (a snapshot restore) is waited on in its turn.
func (a serverState) WaitIndex(ctx context.Context, index uint64) error {
	for {
		err := a.s.State().WaitIndex(ctx, index)
		if !errors.Is(err, state.ErrAbandoned) {
			return err
		}
	}
}

func (a serverState) DeploymentByID(ws memdb.WatchSet, id string) (*api.Deployment, error) {
	return a.st(ws).DeploymentByID(ws, id)
}
func (a serverState) Deployments(ws memdb.WatchSet, ns, prefix string) ([]*api.Deployment, error) {
	return a.st(ws).Deployments(ws, ns, prefix)
}
func (a serverState) DeploymentsByJobID(ws memdb.WatchSet, ns, jobID string) ([]*api.Deployment, error) {
	return a.st(ws).DeploymentsByJobID(ws, ns, jobID)
}
func (a serverState) AllocsByDeployment(ws memdb.WatchSet, deploymentID string) ([]*api.Allocation, error) {
	return a.st(ws).AllocsByDeployment(ws, deploymentID)
}

var _ http.DeploymentState = serverState{}

func (a serverState) SchedulerConfig(ws memdb.WatchSet) (*api.SchedulerConfiguration, error) {
	return a.st(ws).SchedulerConfig(ws)
}

var _ http.SchedulerConfigState = serverState{}

func (a serverState) NodePools(ws memdb.WatchSet, prefix string) ([]*api.NodePool, error) {
	return a.st(ws).NodePools(ws, prefix)
}

func (a serverState) NodePoolByName(ws memdb.WatchSet, name string) (*api.NodePool, error) {
	return a.st(ws).NodePoolByName(ws, name)
}

var _ http.NodePoolState = serverState{}

func (a serverState) Namespaces(ws memdb.WatchSet, prefix string) ([]*api.Namespace, error) {
	return a.st(ws).Namespaces(ws, prefix)
}

func (a serverState) Services(ws memdb.WatchSet, namespace string) ([]*api.ServiceRegistration, error) {
	return a.st(ws).Services(ws, namespace)
}

func (a serverState) ServicesByName(ws memdb.WatchSet, namespace, name string) ([]*api.ServiceRegistration, error) {
	return a.st(ws).ServicesByName(ws, namespace, name)
}

func (a serverState) ServicesByAlloc(ws memdb.WatchSet, allocID string) ([]*api.ServiceRegistration, error) {
	return a.st(ws).ServicesByAlloc(ws, allocID)
}

func (a serverState) ACLPolicies(ws memdb.WatchSet) ([]*api.ACLPolicy, error) {
	return a.st(ws).ACLPolicies(ws)
}

func (a serverState) ACLPolicyByName(ws memdb.WatchSet, name string) (*api.ACLPolicy, error) {
	return a.st(ws).ACLPolicyByName(ws, name)
}

func (a serverState) ACLTokens(ws memdb.WatchSet) ([]*api.ACLToken, error) {
	return a.st(ws).ACLTokens(ws)
}

func (a serverState) ACLTokenByAccessor(ws memdb.WatchSet, id string) (*api.ACLToken, error) {
	return a.st(ws).ACLTokenByAccessor(ws, id)
}

func (a serverState) ACLTokenBySecret(ws memdb.WatchSet, secret string) (*api.ACLToken, error) {
	return a.st(ws).ACLTokenBySecret(ws, secret)
}

func (a serverState) ACLRoles(ws memdb.WatchSet) ([]*api.ACLRole, error) {
	return a.st(ws).ACLRoles(ws)
}

func (a serverState) ACLRoleByID(ws memdb.WatchSet, id string) (*api.ACLRole, error) {
	return a.st(ws).ACLRoleByID(ws, id)
}

func (a serverState) ACLAuthMethods(ws memdb.WatchSet) ([]*api.ACLAuthMethod, error) {
	return a.st(ws).ACLAuthMethods(ws)
}

func (a serverState) ACLAuthMethodByName(ws memdb.WatchSet, name string) (*api.ACLAuthMethod, error) {
	return a.st(ws).ACLAuthMethodByName(ws, name)
}

func (a serverState) ACLBindingRules(ws memdb.WatchSet, method string) ([]*api.ACLBindingRule, error) {
	return a.st(ws).ACLBindingRules(ws, method)
}

func (a serverState) ACLBindingRuleByID(ws memdb.WatchSet, id string) (*api.ACLBindingRule, error) {
	return a.st(ws).ACLBindingRuleByID(ws, id)
}

func (a serverState) NamespaceByName(ws memdb.WatchSet, name string) (*api.Namespace, error) {
	return a.st(ws).NamespaceByName(ws, name)
}

var (
	_ http.NamespaceState = serverState{}
	_ http.ServiceState   = serverState{}
	_ http.ACLState       = serverState{}
	_ http.SSOState       = serverState{}
	_ http.SSOServer      = (*server.Server)(nil)
)

func (a serverState) QueueStatuses(ws memdb.WatchSet, prefix string) ([]*api.QueueStatus, error) {
	return a.st(ws).QueueStatuses(ws, prefix)
}

func (a serverState) QueueStatus(ws memdb.WatchSet, name string) (*api.QueueStatus, error) {
	return a.st(ws).QueueStatus(ws, name)
}

var _ http.QueueState = serverState{}

var _ http.QueueServer = (*server.Server)(nil)

func (a serverState) Usage(by string, from, to, now int64) ([]api.UsageRow, error) {
	return a.st(nil).Usage(by, from, to, now)
}

var _ http.UsageState = serverState{}

var _ http.SchedulerConfigServer = (*server.Server)(nil)

// serverEvents adapts the state store's event broker to http.EventSource.
type serverEvents struct{ s *server.Server }

func (e serverEvents) Subscribe(ctx context.Context, topics map[string][]string, from uint64) (http.EventSub, error) {
	sub, err := e.s.State().Events().Subscribe(ctx, topics, from)
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// New returns the read and event sides of s for http.Config (tests of the
// HTTP layer run against a real in-memory server with these).
func New(s *server.Server) (http.State, http.EventSource) {
	return serverState{s}, serverEvents{s}
}
