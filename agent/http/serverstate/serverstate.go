package serverstate

import (
	"context"

	"github.com/drover/drover/agent/http"
	"github.com/drover/drover/server"
	"github.com/drover/drover/server/state"
)

// Bind wires s into the server role of an agent's HTTP API: each resource
// gets the server component that owns it (s itself for leadership and
// Raft), and the state store is asked for on every read (the server
// replaces it on a snapshot restore).
func Bind(s *server.Server) *http.ServerRole {
	ops := s.Operator()
	return &http.ServerRole{
		State:           source{s},
		Events:          events{s},
		Cluster:         s,
		Leadership:      s,
		Raft:            s,
		Jobs:            s.Jobs(),
		JobVerbs:        s.Jobs(),
		Nodes:           s.Nodes(),
		Allocs:          s.Allocs(),
		Evals:           ops,
		Deployments:     s.Deployments(),
		ACL:             s.ACL(),
		SSO:             s.SSO(),
		Namespaces:      s.Tenancy(),
		NodePools:       s.Tenancy(),
		Queues:          s.Tenancy(),
		Services:        s.Services(),
		Operator:        ops,
		SchedulerConfig: ops,
		Identity:        s.Keyring(),
		Variables:       s.Variables(),
	}
}

// The server's side of every interface agent/http consumes, checked here
// where both packages are visible (Bind checks them too).
var (
	_ http.Store                  = (*state.StateStore)(nil)
	_ http.Cluster                = (*server.Server)(nil)
	_ http.Leadership             = (*server.Server)(nil)
	_ http.RaftPeers              = (*server.Server)(nil)
	_ http.JobsBackend            = (*server.Jobs)(nil)
	_ http.JobVerbsBackend        = (*server.Jobs)(nil)
	_ http.NodesBackend           = (*server.Nodes)(nil)
	_ http.AllocsBackend          = (*server.Allocs)(nil)
	_ http.EvalsBackend           = (*server.Operator)(nil)
	_ http.DeploymentsBackend     = (*server.Deployments)(nil)
	_ http.ACLBackend             = (*server.ACL)(nil)
	_ http.SSOBackend             = (*server.SSO)(nil)
	_ http.NamespacesBackend      = (*server.Tenancy)(nil)
	_ http.NodePoolsBackend       = (*server.Tenancy)(nil)
	_ http.QueuesBackend          = (*server.Tenancy)(nil)
	_ http.ServicesBackend        = (*server.Services)(nil)
	_ http.OperatorBackend        = (*server.Operator)(nil)
	_ http.SchedulerConfigBackend = (*server.Operator)(nil)
	_ http.IdentityBackend        = (*server.Keyring)(nil)
	_ http.VariablesBackend       = (*server.Variables)(nil)
	_ http.ACLResolver            = (*server.ACL)(nil)
	_ http.StateSource            = source{}
	_ http.EventSource            = events{}
)

// source is the server's current state store.
type source struct{ s *server.Server }

func (a source) CurrentState() (http.Store, <-chan struct{}) {
	st := a.s.State()
	return st, st.AbandonCh()
}

// events is the current state store's event broker.
type events struct{ s *server.Server }

func (e events) Subscribe(ctx context.Context, topics map[string][]string, from uint64) (http.EventSub, error) {
	sub, err := e.s.State().Events().Subscribe(ctx, topics, from)
	if err != nil {
		return nil, err
	}
	return sub, nil
}
