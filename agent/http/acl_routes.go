package http

import (
	"slices"

	"github.com/drover/drover/server/acl"
)

// RoutePatterns lists every route of the API by its ServeMux pattern, as
// the route table declares them (the agent's tenancy matrix test sends a
// request to each; a route missing here cannot be registered).
func RoutePatterns() []string {
	out := make([]string, 0, len(routeCaps))
	for p := range routeCaps {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// routeCaps is the capability of every route, by its ServeMux pattern
// (see aclMux). Namespace capabilities are checked in the request's
// namespace (?namespace=, default "default"); handlers of objects that
// carry their own namespace (a job body, an alloc, an eval, a
// deployment, ...) check the route's capability again there
// (checkObject). List routes (nsList) also take namespace=*: they answer
// a token that holds the capability in some namespace, with the items of
// those namespaces only (visible).
// Routes a client agent calls with its node secret are self: that
// node's secret, for its own {id} only (a node's secret holds nothing
// else, acl.Node); registration is checked by the server (its
// introduction).
var routeCaps = map[string]capability{
	"/":                                     public,
	"GET /{$}":                              public,
	"GET /ui":                               public,
	"GET /ui/":                              public,
	"GET /.well-known/jwks.json":            public,
	"GET /.well-known/openid-configuration": public,
	"GET /v1/status/leader":                 public,
	"GET /v1/status/peers":                  public,
	"GET /v1/agent/health":                  public,
	"GET /v1/metrics":                       agentRead,
	"GET /debug/pprof/":                     agentWrite,
	"GET /debug/pprof/cmdline":              agentWrite,
	"GET /debug/pprof/profile":              agentWrite,
	"GET /debug/pprof/symbol":               agentWrite,
	"GET /debug/pprof/trace":                agentWrite,

	"GET /v1/jobs":                     nsList(acl.CapListJobs),
	"PUT /v1/jobs":                     ns(acl.CapSubmitJob),
	"POST /v1/jobs":                    ns(acl.CapSubmitJob),
	"POST /v1/jobs/parse":              ns(acl.CapParseJob),
	"GET /v1/job/{id}":                 ns(acl.CapReadJob),
	"POST /v1/job/{id}":                ns(acl.CapSubmitJob),
	"PUT /v1/job/{id}":                 ns(acl.CapSubmitJob),
	"DELETE /v1/job/{id}":              ns(acl.CapSubmitJob),
	"GET /v1/job/{id}/allocations":     ns(acl.CapReadJob),
	"GET /v1/job/{id}/evaluations":     ns(acl.CapReadJob),
	"GET /v1/job/{id}/versions":        ns(acl.CapReadJob),
	"GET /v1/job/{id}/summary":         ns(acl.CapReadJob),
	"GET /v1/job/{id}/deployment":      ns(acl.CapReadJob),
	"GET /v1/job/{id}/deployments":     ns(acl.CapReadJob),
	"GET /v1/job/{id}/scale":           ns(acl.CapReadJobScaling),
	"POST /v1/job/{id}/plan":           ns(acl.CapSubmitJob),
	"PUT /v1/job/{id}/plan":            ns(acl.CapSubmitJob),
	"POST /v1/job/{id}/evaluate":       ns(acl.CapSubmitJob),
	"PUT /v1/job/{id}/evaluate":        ns(acl.CapSubmitJob),
	"POST /v1/job/{id}/dispatch":       ns(acl.CapDispatchJob),
	"PUT /v1/job/{id}/dispatch":        ns(acl.CapDispatchJob),
	"POST /v1/job/{id}/periodic/force": ns(acl.CapSubmitJob),
	"PUT /v1/job/{id}/periodic/force":  ns(acl.CapSubmitJob),
	"POST /v1/job/{id}/revert":         ns(acl.CapSubmitJob),
	"PUT /v1/job/{id}/revert":          ns(acl.CapSubmitJob),
	"POST /v1/job/{id}/scale":          ns(acl.CapScaleJob),
	"PUT /v1/job/{id}/scale":           ns(acl.CapScaleJob),
	"GET /v1/scaling/policies":         nsList(acl.CapListScaling),
	"GET /v1/scaling/policy/{id}":      ns(acl.CapReadScaling),
	"POST /v1/system/gc":               opWrite,
	"PUT /v1/system/gc":                opWrite,

	"GET /v1/allocations":                 nsList(acl.CapReadJob),
	"GET /v1/allocation/{id}":             ns(acl.CapReadJob),
	"GET /v1/allocation/{id}/services":    ns(acl.CapReadJob),
	"POST /v1/allocation/{id}/stop":       ns(acl.CapAllocLifecycle),
	"PUT /v1/allocation/{id}/stop":        ns(acl.CapAllocLifecycle),
	"GET /v1/evaluations":                 nsList(acl.CapReadJob),
	"DELETE /v1/evaluations":              management,
	"GET /v1/evaluation/{id}":             ns(acl.CapReadJob),
	"GET /v1/evaluation/{id}/allocations": ns(acl.CapReadJob),
	"GET /v1/deployments":                 nsList(acl.CapReadJob),
	"GET /v1/deployment/{id}":             ns(acl.CapReadJob),
	"GET /v1/deployment/allocations/{id}": ns(acl.CapReadJob),
	"POST /v1/deployment/promote/{id}":    ns(acl.CapSubmitJob),
	"PUT /v1/deployment/promote/{id}":     ns(acl.CapSubmitJob),
	"POST /v1/deployment/fail/{id}":       ns(acl.CapSubmitJob),
	"PUT /v1/deployment/fail/{id}":        ns(acl.CapSubmitJob),
	"POST /v1/deployment/pause/{id}":      ns(acl.CapSubmitJob),
	"PUT /v1/deployment/pause/{id}":       ns(acl.CapSubmitJob),
	"GET /v1/services":                    nsList(acl.CapReadJob),
	"GET /v1/service/{name}":              nodeReadable(acl.CapReadJob),
	"DELETE /v1/service/{name}/{id}":      ns(acl.CapSubmitJob),
	"GET /v1/event/stream":                ns(acl.CapReadJob),
	"GET /v1/usage":                       opRead,

	"GET /v1/nodes":                         nodeRead,
	"GET /v1/node/{id}":                     nodeRead,
	"GET /v1/node/{id}/{sub}":               nodeSub,
	"POST /v1/node/{id}/drain":              nodeWrite,
	"PUT /v1/node/{id}/drain":               nodeWrite,
	"POST /v1/node/{id}/eligibility":        nodeWrite,
	"PUT /v1/node/{id}/eligibility":         nodeWrite,
	"PUT /v1/node/register":                 nodeRegister,
	"POST /v1/node/register":                nodeRegister,
	"PUT /v1/node/intro":                    nodeWrite,
	"POST /v1/node/intro":                   nodeWrite,
	"PUT /v1/node/{id}/heartbeat":           self,
	"POST /v1/node/{id}/heartbeat":          self,
	"POST /v1/node/{id}/allocations/fetch":  self,
	"PUT /v1/node/{id}/allocations/update":  self,
	"POST /v1/node/{id}/allocations/update": self,
	"PUT /v1/node/{id}/services":            self,
	"POST /v1/node/{id}/services":           self,
	"PUT /v1/node/{id}/identities":          self,
	"POST /v1/node/{id}/identities":         self,
	"GET /v1/node/pools":                    nodeRead,
	"PUT /v1/node/pools":                    opWrite,
	"POST /v1/node/pools":                   opWrite,
	"GET /v1/node/pool/{name}":              nodeRead,
	"DELETE /v1/node/pool/{name}":           opWrite,
	"GET /v1/node/pool/{name}/nodes":        nodeRead,
	"GET /v1/node/pool/{name}/jobs":         nsList(acl.CapListJobs),
	"/v1/client/":                           client,

	"GET /v1/agent/self":          agentRead,
	"GET /v1/agent/members":       agentRead,
	"GET /v1/agent/monitor":       agentRead,
	"GET /v1/agent/keyring/list":  agentWrite,
	"POST /v1/agent/keyring/{op}": agentWrite,
	"PUT /v1/agent/keyring/{op}":  agentWrite,
	"POST /v1/agent/force-leave":  agentWrite,
	"PUT /v1/agent/force-leave":   agentWrite,

	"GET /v1/operator/raft/configuration":       opRead,
	"DELETE /v1/operator/raft/peer":             opWrite,
	"GET /v1/operator/scheduler/configuration":  opRead,
	"PUT /v1/operator/scheduler/configuration":  opWrite,
	"POST /v1/operator/scheduler/configuration": opWrite,
	"GET /v1/operator/snapshot":                 management,
	"PUT /v1/operator/snapshot":                 management,
	"POST /v1/operator/snapshot":                management,
	"GET /v1/operator/keyring/keys":             opRead,

	"GET /v1/namespaces":          anyToken,
	"GET /v1/namespace/{name}":    anyToken,
	"PUT /v1/namespace":           management,
	"POST /v1/namespace":          management,
	"PUT /v1/namespace/{name}":    management,
	"POST /v1/namespace/{name}":   management,
	"DELETE /v1/namespace/{name}": management,
	"GET /v1/queues":              anyToken,
	"GET /v1/queue/{name...}":     anyToken,
	"PUT /v1/queues":              opWrite,
	"POST /v1/queues":             opWrite,
	"DELETE /v1/queue/{name...}":  opWrite,

	"POST /v1/acl/bootstrap":       public,
	"PUT /v1/acl/bootstrap":        public,
	"GET /v1/acl/policies":         management,
	"GET /v1/acl/policy/{name}":    anyToken, // its own policies; others need management (handler)
	"PUT /v1/acl/policy/{name}":    management,
	"POST /v1/acl/policy/{name}":   management,
	"DELETE /v1/acl/policy/{name}": management,
	"GET /v1/acl/tokens":           management,
	"GET /v1/acl/token/self":       anyToken,
	// A secret resolves only itself; an unknown one gets 403 (handler).
	"GET /v1/acl/resolve":       public,
	"GET /v1/acl/token/{id}":    management,
	"PUT /v1/acl/token":         management,
	"POST /v1/acl/token":        management,
	"PUT /v1/acl/token/{id}":    management,
	"POST /v1/acl/token/{id}":   management,
	"DELETE /v1/acl/token/{id}": management,
	"GET /v1/acl/roles":         management,
	"GET /v1/acl/role/{id}":     management,
	"PUT /v1/acl/role":          management,
	"POST /v1/acl/role":         management,
	"PUT /v1/acl/role/{id}":     management,
	"POST /v1/acl/role/{id}":    management,
	"DELETE /v1/acl/role/{id}":  management,

	// SSO: the method list and the two OIDC login steps are how a caller
	// without a token gets one.
	"GET /v1/acl/auth-methods":          public,
	"GET /v1/acl/auth-method/{name}":    management,
	"PUT /v1/acl/auth-method":           management,
	"POST /v1/acl/auth-method":          management,
	"PUT /v1/acl/auth-method/{name}":    management,
	"POST /v1/acl/auth-method/{name}":   management,
	"DELETE /v1/acl/auth-method/{name}": management,
	"GET /v1/acl/binding-rules":         management,
	"GET /v1/acl/binding-rule/{id}":     management,
	"PUT /v1/acl/binding-rule":          management,
	"POST /v1/acl/binding-rule":         management,
	"PUT /v1/acl/binding-rule/{id}":     management,
	"POST /v1/acl/binding-rule/{id}":    management,
	"DELETE /v1/acl/binding-rule/{id}":  management,
	"PUT /v1/acl/oidc/auth-url":         public,
	"POST /v1/acl/oidc/auth-url":        public,
	"PUT /v1/acl/oidc/complete-auth":    public,
	"POST /v1/acl/oidc/complete-auth":   public,
}
