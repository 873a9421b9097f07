package http

import (
	nethttp "net/http"

	"github.com/drover/drover/api"
)

func (s *HTTPServer) statusLeader(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	return s.cfg.Server.Leader(), nil
}

func (s *HTTPServer) statusPeers(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	p := s.cfg.Server.Peers()
	if p == nil {
		p = []string{}
	}
	return p, nil
}

func (s *HTTPServer) agentSelf(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if s.cfg.Self == nil {
		return &api.AgentSelf{Config: map[string]any{}}, nil
	}
	return s.cfg.Self(), nil
}

// agentHealth is 200 when every role this agent runs is healthy, else 500
// with the same body (as Nomad's).
func (s *HTTPServer) agentHealth(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	h := &api.AgentHealth{}
	ok := true
	if s.cfg.Server != nil {
		st := &api.AgentHealthStatus{Ok: s.cfg.Server.Leader() != "", Message: "ok"}
		if !st.Ok {
			st.Message = "no known cluster leader"
		}
		ok = ok && st.Ok
		h.Server = st
	}
	if s.cfg.Client != nil {
		h.Client = &api.AgentHealthStatus{Ok: true, Message: "ok"}
	}
	if !ok {
		writeJSON(w, nethttp.StatusInternalServerError, h)
		return nil, errWritten
	}
	return h, nil
}

func (s *HTTPServer) agentMembers(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if s.cfg.Members != nil {
		return s.cfg.Members(), nil
	}
	return &api.ServerMembers{Members: []*api.AgentMember{}}, nil
}
