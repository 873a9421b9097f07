package http

import (
	"fmt"
	nethttp "net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/acl"
)

// route is one route of the API: its ServeMux pattern, the capability it
// needs (enforce checks it before the handler runs; acl_mux.go) and its
// handler. Routes are declared as unkeyed literals, so one without a
// capability does not compile; register also refuses a zero capability.
type route struct {
	pattern string
	cap     capability
	serve   nethttp.Handler // nil: not served on this agent (pprof without enable_debug)
}

// RoutePatterns lists every route of the API by its ServeMux pattern, as
// the route table declares them (the agent's tenancy matrix test sends a
// request to each), those an agent serves only with enable_debug too.
func RoutePatterns() []string {
	table := declaredRoutes()
	out := make([]string, 0, len(table))
	for _, rt := range table {
		out = append(out, rt.pattern)
	}
	slices.Sort(out)
	return out
}

// declaredRoutes is the route table of an agent with no role wired: the
// patterns and capabilities (handlers are never called).
func declaredRoutes() []route {
	return (&HTTPServer{role: &ServerRole{}}).routeTable()
}

// register adds every route of the table to the mux, behind enforce.
func (s *HTTPServer) register() {
	for _, rt := range s.routeTable() {
		if rt.cap == (capability{}) {
			panic(fmt.Sprintf("http route %q declares no ACL capability", rt.pattern))
		}
		if rt.serve != nil {
			s.mux.Handle(rt.pattern, s.enforce(rt.cap, rt.serve))
		}
	}
}

// routeTable declares every route once: pattern, capability, handler.
//
// Namespace capabilities (ns) are checked in the request's namespace
// (?namespace=, default "default"); handlers of objects that carry their
// own namespace (a job body, an alloc, an eval, a deployment, ...) check
// the route's capability again there (checkObject). List routes (nsList)
// also take namespace=*: they answer a token that holds the capability in
// some namespace, with the items of those namespaces only (visible).
// Routes a client agent calls with its node secret are self: that node's
// secret, for its own {id} only (a node's secret holds nothing else,
// acl.Node); registration is checked by the server (its introduction).
func (s *HTTPServer) routeTable() []route {
	r := s.role
	jobs := &jobHandlers{s: s, b: r.Jobs, parse: s.cfg.Parse}
	verbs := &jobVerbHandlers{s: s, b: r.JobVerbs}
	scaling := &scalingHandlers{s: s}
	nodes := &nodeHandlers{s: s, b: r.Nodes}
	allocs := &allocHandlers{s: s, b: r.Allocs}
	evals := &evalHandlers{s: s, b: r.Evals}
	deps := &deploymentHandlers{s: s, b: r.Deployments}
	acls := &aclHandlers{s: s, b: r.ACL}
	sso := &ssoHandlers{s: s, b: r.SSO, acl: acls}
	nss := &namespaceHandlers{s: s, b: r.Namespaces}
	pools := &nodePoolHandlers{s: s, b: r.NodePools}
	queues := &queueHandlers{s: s, b: r.Queues}
	svcs := &serviceHandlers{s: s, b: r.Services}
	vars := &variableHandlers{s: s, b: r.Variables}
	op := &operatorHandlers{s: s, b: r.Operator}
	sched := &schedulerConfigHandlers{s: s, b: r.SchedulerConfig}
	ids := &identityHandlers{s: s, b: r.Identity}
	usage := &usageHandlers{s: s}
	events := &eventHandlers{s: s, src: r.Events}
	agent := &agentHandlers{s: s, prom: promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})}
	cl := &clientHandlers{s: s}
	j := s.wrap // a JSON endpoint (apiFunc)
	raw := func(f nethttp.HandlerFunc) nethttp.Handler { return f }
	debug := func(f nethttp.HandlerFunc) nethttp.Handler {
		if !s.cfg.EnableDebug {
			return nil
		}
		return f
	}

	return []route{
		{"/", public, raw(s.notFound)},
		{"GET /{$}", public, raw(redirect("/ui/", nethttp.StatusTemporaryRedirect))},
		{"GET /ui", public, raw(redirect("/ui/", nethttp.StatusMovedPermanently))},
		{"GET /ui/", public, uiHandler(s.cfg.UI)},
		{"GET /v1/metrics", agentRead, raw(agent.metrics)},
		// Go's profiles, with agent enable_debug (as Nomad's).
		{"GET /debug/pprof/", agentWrite, debug(pprof.Index)},
		{"GET /debug/pprof/cmdline", agentWrite, debug(pprof.Cmdline)},
		{"GET /debug/pprof/profile", agentWrite, debug(pprof.Profile)},
		{"GET /debug/pprof/symbol", agentWrite, debug(pprof.Symbol)},
		{"GET /debug/pprof/trace", agentWrite, debug(pprof.Trace)},

		{"GET /v1/status/leader", public, j(agent.statusLeader)},
		{"GET /v1/status/peers", public, j(agent.statusPeers)},
		{"GET /v1/agent/health", public, j(agent.health)},
		{"GET /v1/agent/self", agentRead, j(agent.self)},
		{"GET /v1/agent/members", agentRead, j(agent.members)},
		{"GET /v1/agent/monitor", agentRead, raw(agent.monitor)},
		{"GET /v1/agent/keyring/list", agentWrite, j(op.keyringList)},
		{"POST /v1/agent/keyring/{op}", agentWrite, j(op.keyringOp)},
		{"PUT /v1/agent/keyring/{op}", agentWrite, j(op.keyringOp)},
		{"POST /v1/agent/force-leave", agentWrite, j(op.forceLeave)},
		{"PUT /v1/agent/force-leave", agentWrite, j(op.forceLeave)},
		{"POST /v1/agent/join", agentWrite, j(op.join)},
		{"PUT /v1/agent/join", agentWrite, j(op.join)},
		{"GET /v1/regions", public, j(agent.regions)},

		{"GET /v1/jobs", nsList(acl.CapListJobs), j(jobs.list)},
		{"PUT /v1/jobs", ns(acl.CapSubmitJob), j(jobs.register)},
		{"POST /v1/jobs", ns(acl.CapSubmitJob), j(jobs.register)},
		{"POST /v1/jobs/parse", ns(acl.CapParseJob), j(jobs.parseHCL)},
		{"GET /v1/job/{id}", ns(acl.CapReadJob), j(jobs.get)},
		{"POST /v1/job/{id}", ns(acl.CapSubmitJob), j(jobs.update)},
		{"PUT /v1/job/{id}", ns(acl.CapSubmitJob), j(jobs.update)},
		{"DELETE /v1/job/{id}", ns(acl.CapSubmitJob), j(jobs.deregister)},
		{"GET /v1/job/{id}/allocations", ns(acl.CapReadJob), j(jobs.allocs)},
		{"GET /v1/job/{id}/evaluations", ns(acl.CapReadJob), j(jobs.evals)},
		{"GET /v1/job/{id}/versions", ns(acl.CapReadJob), j(jobs.versions)},
		{"GET /v1/job/{id}/summary", ns(acl.CapReadJob), j(jobs.summary)},
		{"GET /v1/job/{id}/deployment", ns(acl.CapReadJob), j(deps.latestOfJob)},
		{"GET /v1/job/{id}/deployments", ns(acl.CapReadJob), j(deps.ofJob)},
		{"POST /v1/job/{id}/plan", ns(acl.CapSubmitJob), j(jobs.plan)},
		{"PUT /v1/job/{id}/plan", ns(acl.CapSubmitJob), j(jobs.plan)},
		{"POST /v1/job/{id}/evaluate", ns(acl.CapSubmitJob), j(jobs.evaluate)},
		{"PUT /v1/job/{id}/evaluate", ns(acl.CapSubmitJob), j(jobs.evaluate)},
		{"POST /v1/job/{id}/dispatch", ns(acl.CapDispatchJob), j(verbs.dispatch)},
		{"PUT /v1/job/{id}/dispatch", ns(acl.CapDispatchJob), j(verbs.dispatch)},
		{"POST /v1/job/{id}/periodic/force", ns(acl.CapSubmitJob), j(verbs.periodicForce)},
		{"PUT /v1/job/{id}/periodic/force", ns(acl.CapSubmitJob), j(verbs.periodicForce)},
		{"POST /v1/job/{id}/revert", ns(acl.CapSubmitJob), j(verbs.revert)},
		{"PUT /v1/job/{id}/revert", ns(acl.CapSubmitJob), j(verbs.revert)},
		{"GET /v1/job/{id}/scale", ns(acl.CapReadJobScaling), j(verbs.scaleStatus)},
		{"POST /v1/job/{id}/scale", ns(acl.CapScaleJob), j(verbs.scale)},
		{"PUT /v1/job/{id}/scale", ns(acl.CapScaleJob), j(verbs.scale)},
		{"GET /v1/scaling/policies", nsList(acl.CapListScaling), j(scaling.list)},
		{"GET /v1/scaling/policy/{id}", ns(acl.CapReadScaling), j(scaling.get)},
		{"POST /v1/system/gc", opWrite, j(op.systemGC)},
		{"PUT /v1/system/gc", opWrite, j(op.systemGC)},

		{"GET /v1/allocations", nsList(acl.CapReadJob), j(allocs.list)},
		{"GET /v1/allocation/{id}", ns(acl.CapReadJob), j(allocs.get)},
		{"GET /v1/allocation/{id}/services", ns(acl.CapReadJob), j(svcs.ofAlloc)},
		{"POST /v1/allocation/{id}/stop", ns(acl.CapAllocLifecycle), j(allocs.stop)},
		{"PUT /v1/allocation/{id}/stop", ns(acl.CapAllocLifecycle), j(allocs.stop)},
		{"GET /v1/evaluations", nsList(acl.CapReadJob), j(evals.list)},
		{"DELETE /v1/evaluations", management, j(evals.delete)},
		{"GET /v1/evaluation/{id}", ns(acl.CapReadJob), j(evals.get)},
		{"GET /v1/evaluation/{id}/allocations", ns(acl.CapReadJob), j(evals.allocs)},
		{"GET /v1/deployments", nsList(acl.CapReadJob), j(deps.list)},
		{"GET /v1/deployment/{id}", ns(acl.CapReadJob), j(deps.get)},
		{"GET /v1/deployment/allocations/{id}", ns(acl.CapReadJob), j(deps.allocs)},
		{"POST /v1/deployment/promote/{id}", ns(acl.CapSubmitJob), j(deps.promote)},
		{"PUT /v1/deployment/promote/{id}", ns(acl.CapSubmitJob), j(deps.promote)},
		{"POST /v1/deployment/fail/{id}", ns(acl.CapSubmitJob), j(deps.fail)},
		{"PUT /v1/deployment/fail/{id}", ns(acl.CapSubmitJob), j(deps.fail)},
		{"POST /v1/deployment/pause/{id}", ns(acl.CapSubmitJob), j(deps.pause)},
		{"PUT /v1/deployment/pause/{id}", ns(acl.CapSubmitJob), j(deps.pause)},
		{"POST /v1/deployment/unblock/{id}", ns(acl.CapSubmitJob), j(deps.unblock)},
		{"PUT /v1/deployment/unblock/{id}", ns(acl.CapSubmitJob), j(deps.unblock)},
		{"POST /v1/deployment/run/{id}", ns(acl.CapSubmitJob), j(deps.run)},
		{"PUT /v1/deployment/run/{id}", ns(acl.CapSubmitJob), j(deps.run)},
		{"GET /v1/services", nsList(acl.CapReadJob), j(svcs.list)},
		{"GET /v1/service/{name}", nodeReadable(acl.CapReadJob), j(svcs.get)},
		{"DELETE /v1/service/{name}/{id}", ns(acl.CapSubmitJob), j(svcs.delete)},
		{"GET /v1/event/stream", ns(acl.CapReadJob), raw(events.stream)},
		{"GET /v1/usage", opRead, j(usage.get)},
		// Variables: capabilities by path ({path...}) in the namespace.
		{"GET /v1/vars", varListCap, j(vars.list)},
		{"GET /v1/var/{path...}", varCap(acl.VarRead), j(vars.get)},
		{"PUT /v1/var/{path...}", varCap(acl.VarWrite), j(vars.put)},
		{"POST /v1/var/{path...}", varCap(acl.VarWrite), j(vars.put)},
		{"DELETE /v1/var/{path...}", varCap(acl.VarDestroy), j(vars.delete)},

		{"GET /v1/nodes", nodeRead, j(nodes.list)},
		{"GET /v1/node/{id}", nodeRead, j(nodes.get)},
		// {sub} rather than "allocations": GET /v1/node/pool/{name} must be
		// the more specific pattern (a literal one would conflict with it).
		{"GET /v1/node/{id}/{sub}", nodeSub, j(nodes.sub)},
		{"POST /v1/node/{id}/drain", nodeWrite, j(nodes.drain)},
		{"PUT /v1/node/{id}/drain", nodeWrite, j(nodes.drain)},
		{"POST /v1/node/{id}/interrupt", nodeWrite, j(nodes.interrupt)},
		{"PUT /v1/node/{id}/interrupt", nodeWrite, j(nodes.interrupt)},
		{"POST /v1/node/{id}/eligibility", nodeWrite, j(nodes.eligibility)},
		{"PUT /v1/node/{id}/eligibility", nodeWrite, j(nodes.eligibility)},
		{"POST /v1/node/{id}/gpu/mig", nodeWrite, j(nodes.migApply)},
		{"PUT /v1/node/{id}/gpu/mig", nodeWrite, j(nodes.migApply)},
		{"PUT /v1/node/register", nodeRegister, j(nodes.register)},
		{"POST /v1/node/register", nodeRegister, j(nodes.register)},
		{"PUT /v1/node/intro", nodeWrite, j(nodes.intro)},
		{"POST /v1/node/intro", nodeWrite, j(nodes.intro)},
		{"PUT /v1/node/{id}/heartbeat", self, j(nodes.heartbeat)},
		{"POST /v1/node/{id}/heartbeat", self, j(nodes.heartbeat)},
		{"POST /v1/node/{id}/allocations/fetch", self, j(nodes.fetchAllocs)},
		{"PUT /v1/node/{id}/allocations/update", self, j(nodes.updateAllocs)},
		{"POST /v1/node/{id}/allocations/update", self, j(nodes.updateAllocs)},
		{"PUT /v1/node/{id}/services", self, j(svcs.updateNode)},
		{"POST /v1/node/{id}/services", self, j(svcs.updateNode)},
		{"PUT /v1/node/{id}/identities", self, j(ids.sign)},
		{"POST /v1/node/{id}/identities", self, j(ids.sign)},
		{"GET /v1/node/pools", nodeRead, j(pools.list)},
		{"PUT /v1/node/pools", opWrite, j(pools.upsert)},
		{"POST /v1/node/pools", opWrite, j(pools.upsert)},
		{"GET /v1/node/pool/{name}", nodeRead, j(pools.get)},
		{"DELETE /v1/node/pool/{name}", opWrite, j(pools.delete)},
		{"GET /v1/node/pool/{name}/nodes", nodeRead, j(pools.nodes)},
		{"GET /v1/node/pool/{name}/jobs", nsList(acl.CapListJobs), j(pools.jobs)},
		{"/v1/client/", client, raw(cl.serve)},

		{"GET /v1/operator/raft/configuration", opRead, j(op.raftConfiguration)},
		{"DELETE /v1/operator/raft/peer", opWrite, j(op.raftRemovePeer)},
		{"POST /v1/operator/defrag", opDefrag, j(op.defrag)},
		{"GET /v1/operator/scheduler/configuration", opRead, j(sched.get)},
		{"PUT /v1/operator/scheduler/configuration", opWrite, j(sched.set)},
		{"POST /v1/operator/scheduler/configuration", opWrite, j(sched.set)},
		{"GET /v1/operator/snapshot", management, j(op.snapshotSave)},
		{"PUT /v1/operator/snapshot", management, j(op.snapshotRestore)},
		{"POST /v1/operator/snapshot", management, j(op.snapshotRestore)},
		{"GET /v1/operator/keyring/keys", opRead, j(ids.keys)},
		{"GET /.well-known/jwks.json", public, j(ids.jwks)},
		{"GET /.well-known/openid-configuration", public, j(ids.oidcDiscovery)},

		{"GET /v1/namespaces", anyToken, j(nss.list)},
		{"GET /v1/namespace/{name}", anyToken, j(nss.get)},
		{"PUT /v1/namespace", management, j(nss.upsert)},
		{"POST /v1/namespace", management, j(nss.upsert)},
		{"PUT /v1/namespace/{name}", management, j(nss.upsert)},
		{"POST /v1/namespace/{name}", management, j(nss.upsert)},
		{"DELETE /v1/namespace/{name}", management, j(nss.delete)},
		{"GET /v1/queues", anyToken, j(queues.list)},
		{"GET /v1/queue/{name...}", anyToken, j(queues.get)},
		{"PUT /v1/queues", opWrite, j(queues.upsert)},
		{"POST /v1/queues", opWrite, j(queues.upsert)},
		{"DELETE /v1/queue/{name...}", opWrite, j(queues.delete)},

		{"POST /v1/acl/bootstrap", public, j(acls.bootstrap)},
		{"PUT /v1/acl/bootstrap", public, j(acls.bootstrap)},
		{"GET /v1/acl/policies", management, j(acls.policyList)},
		// Its own policies; others need management (the handler).
		{"GET /v1/acl/policy/{name}", anyToken, j(acls.policyGet)},
		{"PUT /v1/acl/policy/{name}", management, j(acls.policyUpsert)},
		{"POST /v1/acl/policy/{name}", management, j(acls.policyUpsert)},
		{"DELETE /v1/acl/policy/{name}", management, j(acls.policyDelete)},
		{"GET /v1/acl/tokens", management, j(acls.tokenList)},
		{"GET /v1/acl/token/self", anyToken, j(acls.tokenSelf)},
		// A secret resolves only itself; an unknown one gets 403 (handler).
		{"GET /v1/acl/resolve", public, j(acls.resolve)},
		{"GET /v1/acl/token/{id}", management, j(acls.tokenGet)},
		{"PUT /v1/acl/token", management, j(acls.tokenUpsert)},
		{"POST /v1/acl/token", management, j(acls.tokenUpsert)},
		{"PUT /v1/acl/token/{id}", management, j(acls.tokenUpsert)},
		{"POST /v1/acl/token/{id}", management, j(acls.tokenUpsert)},
		{"DELETE /v1/acl/token/{id}", management, j(acls.tokenDelete)},
		{"GET /v1/acl/roles", management, j(acls.roleList)},
		{"GET /v1/acl/role/{id}", management, j(acls.roleGet)},
		{"PUT /v1/acl/role", management, j(acls.roleUpsert)},
		{"POST /v1/acl/role", management, j(acls.roleUpsert)},
		{"PUT /v1/acl/role/{id}", management, j(acls.roleUpsert)},
		{"POST /v1/acl/role/{id}", management, j(acls.roleUpsert)},
		{"DELETE /v1/acl/role/{id}", management, j(acls.roleDelete)},

		// SSO: the method list and the two OIDC login steps are how a
		// caller without a token gets one.
		{"GET /v1/acl/auth-methods", public, j(sso.methodList)},
		{"GET /v1/acl/auth-method/{name}", management, j(sso.methodGet)},
		{"PUT /v1/acl/auth-method", management, j(sso.methodUpsert)},
		{"POST /v1/acl/auth-method", management, j(sso.methodUpsert)},
		{"PUT /v1/acl/auth-method/{name}", management, j(sso.methodUpsert)},
		{"POST /v1/acl/auth-method/{name}", management, j(sso.methodUpsert)},
		{"DELETE /v1/acl/auth-method/{name}", management, j(sso.methodDelete)},
		{"GET /v1/acl/binding-rules", management, j(sso.ruleList)},
		{"GET /v1/acl/binding-rule/{id}", management, j(sso.ruleGet)},
		{"PUT /v1/acl/binding-rule", management, j(sso.ruleUpsert)},
		{"POST /v1/acl/binding-rule", management, j(sso.ruleUpsert)},
		{"PUT /v1/acl/binding-rule/{id}", management, j(sso.ruleUpsert)},
		{"POST /v1/acl/binding-rule/{id}", management, j(sso.ruleUpsert)},
		{"DELETE /v1/acl/binding-rule/{id}", management, j(sso.ruleDelete)},
		{"PUT /v1/acl/oidc/auth-url", public, j(sso.oidcAuthURL)},
		{"POST /v1/acl/oidc/auth-url", public, j(sso.oidcAuthURL)},
		{"PUT /v1/acl/oidc/complete-auth", public, j(sso.oidcCompleteAuth)},
		{"POST /v1/acl/oidc/complete-auth", public, j(sso.oidcCompleteAuth)},
	}
}

func redirect(to string, code int) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, r *nethttp.Request) { nethttp.Redirect(w, r, to, code) }
}

// uiHandler serves /ui/: the web UI (ui), or a placeholder page.
func uiHandler(ui nethttp.Handler) nethttp.Handler {
	if ui != nil {
		return ui
	}
	return nethttp.HandlerFunc(placeholderUI)
}

func placeholderUI(w nethttp.ResponseWriter, _ *nethttp.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><html><head><title>drover</title></head><body><h1>drover</h1><p>The web UI is not built into this binary. The API is at <a href="/v1/jobs">/v1/jobs</a>.</p></body></html>`)
}

// boolParam parses an optional boolean query parameter ("" present = true).
func boolParam(r *nethttp.Request, name string) (bool, error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid %s=%q: want true or false", name, v))
	}
	return b, nil
}

func nsParam(r *nethttp.Request) string {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return ns
	}
	return api.DefaultNamespace
}

func notFound(sentinel *api.Error, what, id string) error {
	return fmt.Errorf("%s %q: %w", what, id, api.Errorf(sentinel, strings.TrimSpace(what+" not found")))
}
