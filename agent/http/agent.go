package http

import (
	nethttp "net/http"

	"github.com/drover/drover/api"
)

// agentHandlers serve the agent's own endpoints (/v1/agent/*, metrics)
// and /v1/status/*.
type agentHandlers struct {
	s    *HTTPServer
	prom nethttp.Handler // Prometheus text of Config.Registry
}

func (h *agentHandlers) statusLeader(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	c := h.s.role.Cluster
	if err := h.s.need(c != nil, "the cluster status is not available on this agent"); err != nil {
		return nil, err
	}
	return c.Leader(), nil
}

func (h *agentHandlers) statusPeers(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	c := h.s.role.Cluster
	if err := h.s.need(c != nil, "the cluster status is not available on this agent"); err != nil {
		return nil, err
	}
	p := c.Peers()
	if p == nil {
		p = []string{}
	}
	return p, nil
}

func (h *agentHandlers) self(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.cfg.Self == nil {
		return &api.AgentSelf{Config: map[string]any{}}, nil
	}
	return h.s.cfg.Self(), nil
}

// health is 200 when every role this agent runs is healthy, else 500
// with the same body (as Nomad's).
func (h *agentHandlers) health(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	out := &api.AgentHealth{}
	ok := true
	if c := h.s.role.Cluster; c != nil {
		st := &api.AgentHealthStatus{Ok: c.Leader() != "", Message: "ok"}
		if !st.Ok {
			st.Message = "no known cluster leader"
		}
		ok = ok && st.Ok
		out.Server = st
	}
	if h.s.cfg.Client != nil {
		out.Client = &api.AgentHealthStatus{Ok: true, Message: "ok"}
	}
	if !ok {
		writeJSON(w, nethttp.StatusInternalServerError, out)
		return nil, errWritten
	}
	return out, nil
}

func (h *agentHandlers) members(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.cfg.Members != nil {
		return h.s.cfg.Members(), nil
	}
	return &api.ServerMembers{Members: []*api.AgentMember{}}, nil
}
