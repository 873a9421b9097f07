package http

import (
	"fmt"
	nethttp "net/http"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
)

func (s *HTTPServer) routes() {
	m := s.mux
	h := func(pattern string, f apiFunc) { m.HandleFunc(pattern, s.wrap(f)) }

	s.debugRoutes()
	h("GET /v1/jobs", s.jobList)
	h("PUT /v1/jobs", s.jobRegister)
	h("POST /v1/jobs", s.jobRegister)
	h("POST /v1/jobs/parse", s.jobParse)
	h("GET /v1/job/{id}", s.jobGet)
	h("POST /v1/job/{id}", s.jobUpdate)
	h("PUT /v1/job/{id}", s.jobUpdate)
	h("DELETE /v1/job/{id}", s.jobDeregister)
	h("GET /v1/job/{id}/allocations", s.jobAllocs)
	h("GET /v1/job/{id}/evaluations", s.jobEvals)
	h("GET /v1/job/{id}/versions", s.jobVersions)
	h("GET /v1/job/{id}/summary", s.jobSummary)
	h("POST /v1/job/{id}/plan", s.jobPlan)
	h("PUT /v1/job/{id}/plan", s.jobPlan)
	h("POST /v1/job/{id}/evaluate", s.jobEvaluate)
	h("PUT /v1/job/{id}/evaluate", s.jobEvaluate)

	h("GET /v1/nodes", s.nodeList)
	h("GET /v1/node/{id}", s.nodeGet)
	// {sub} rather than "allocations": GET /v1/node/pool/{name} must be the
	// more specific pattern (a literal one would conflict with it).
	h("GET /v1/node/{id}/{sub}", s.nodeSub)
	h("POST /v1/node/{id}/drain", s.nodeDrain)
	h("PUT /v1/node/{id}/drain", s.nodeDrain)
	h("POST /v1/node/{id}/eligibility", s.nodeEligibility)
	h("PUT /v1/node/{id}/eligibility", s.nodeEligibility)
	h("PUT /v1/node/register", s.nodeRegister)
	h("POST /v1/node/register", s.nodeRegister)
	h("PUT /v1/node/intro", s.nodeIntro)
	h("POST /v1/node/intro", s.nodeIntro)
	h("PUT /v1/node/{id}/heartbeat", s.nodeHeartbeat)
	h("POST /v1/node/{id}/heartbeat", s.nodeHeartbeat)
	h("POST /v1/node/{id}/allocations/fetch", s.nodeAllocsFetch)
	h("PUT /v1/node/{id}/allocations/update", s.nodeAllocsUpdate)
	h("POST /v1/node/{id}/allocations/update", s.nodeAllocsUpdate)

	h("GET /v1/allocations", s.allocList)
	h("GET /v1/allocation/{id}", s.allocGet)
	h("POST /v1/allocation/{id}/stop", s.allocStop)
	h("PUT /v1/allocation/{id}/stop", s.allocStop)

	h("GET /v1/evaluations", s.evalList)
	h("DELETE /v1/evaluations", s.evalDelete)
	h("GET /v1/evaluation/{id}", s.evalGet)
	h("GET /v1/evaluation/{id}/allocations", s.evalAllocs)

	h("GET /v1/status/leader", s.statusLeader)
	h("GET /v1/status/peers", s.statusPeers)
	h("GET /v1/agent/self", s.agentSelf)
	h("GET /v1/agent/health", s.agentHealth)
	h("GET /v1/agent/members", s.agentMembers)

	s.operatorRoutes()
	s.deploymentRoutes()
	s.jobVerbRoutes()
	s.usageRoutes()

	m.HandleFunc("GET /v1/event/stream", s.eventStream)
	m.HandleFunc("GET /v1/agent/monitor", s.agentMonitor)
	s.metricsRoute()

	m.HandleFunc("/v1/client/", s.clientRoute)

	m.HandleFunc("GET /{$}", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, "/ui/", nethttp.StatusTemporaryRedirect)
	})
	m.HandleFunc("GET /ui", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		nethttp.Redirect(w, r, "/ui/", nethttp.StatusMovedPermanently)
	})
	if s.cfg.UI != nil {
		m.Handle("GET /ui/", s.cfg.UI)
	} else {
		m.HandleFunc("GET /ui/", placeholderUI)
	}
	m.HandleFunc("/", s.notFound)
}

func placeholderUI(w nethttp.ResponseWriter, _ *nethttp.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, `<!doctype html><html><head><title>drover</title></head><body><h1>drover</h1><p>The web UI is not built into this binary. The API is at <a href="/v1/jobs">/v1/jobs</a>.</p></body></html>`)
}

// needServer fails when this agent does not run the server role.
func (s *HTTPServer) needServer() error {
	if s.cfg.Server == nil {
		return api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	return nil
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
