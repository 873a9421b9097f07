package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strconv"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// SchedulerConfigState is the optional scheduler-configuration read side
// of State (found by type assertion): the stored configuration or nil,
// nil when none was set (the defaults apply).
type SchedulerConfigState interface {
	SchedulerConfig(ws memdb.WatchSet) (*api.SchedulerConfiguration, error)
}

// SchedulerConfigServer is the optional scheduler-configuration write
// side of Server (found by type assertion). With cas, the configuration
// is written only if the stored ModifyIndex (0 when unset) is casIndex;
// otherwise the answer is Updated false. Errors wrap api sentinels
// (ErrBadRequest for an invalid configuration).
type SchedulerConfigServer interface {
	SetSchedulerConfig(ctx context.Context, c *api.SchedulerConfiguration, cas bool, casIndex uint64) (*api.SchedulerSetConfigurationResponse, error)
}

// tableSchedulerConfig is the state table whose index the GET reports.
const tableSchedulerConfig = "scheduler_config"

func (s *HTTPServer) schedulerConfigRoutes() {
	h := func(pattern string, f apiFunc) { s.mux.HandleFunc(pattern, s.wrap(f)) }
	h("GET /v1/operator/scheduler/configuration", s.schedulerConfigGet)
	h("PUT /v1/operator/scheduler/configuration", s.schedulerConfigSet)
	h("POST /v1/operator/scheduler/configuration", s.schedulerConfigSet)
}

func (s *HTTPServer) schedulerConfigState() (SchedulerConfigState, error) {
	if s.cfg.State == nil {
		return nil, api.Errorf(api.ErrUnavailable, "this agent does not run the server role")
	}
	st, ok := s.cfg.State.(SchedulerConfigState)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "the scheduler configuration is not available on this agent")
	}
	return st, nil
}

func (s *HTTPServer) schedulerConfigServer() (SchedulerConfigServer, error) {
	if err := s.needServer(); err != nil {
		return nil, err
	}
	sc, ok := s.cfg.Server.(SchedulerConfigServer)
	if !ok {
		return nil, api.Errorf(api.ErrUnavailable, "this server cannot change the scheduler configuration")
	}
	return sc, nil
}

// schedulerConfigGet answers like Nomad: {"SchedulerConfig": {...}, "Index": n}
// (the defaults, with Index 0, until an operator set a configuration).
// It supports blocking queries (?index=).
func (s *HTTPServer) schedulerConfigGet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	st, err := s.schedulerConfigState()
	if err != nil {
		return nil, err
	}
	return s.blocking(w, r, func(ws memdb.WatchSet) (any, uint64, error) {
		c, err := st.SchedulerConfig(ws)
		if err != nil {
			return nil, 0, err
		}
		if c == nil {
			c = api.DefaultSchedulerConfiguration()
		}
		idx := s.cfg.State.Index(tableSchedulerConfig)
		return &api.SchedulerConfigurationResponse{SchedulerConfig: c, Index: idx}, idx, nil
	})
}

// schedulerConfigSet replaces the configuration; ?cas=<ModifyIndex> makes
// it a check-and-set ({"Updated": false} on a mismatch, like Nomad).
func (s *HTTPServer) schedulerConfigSet(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	sc, err := s.schedulerConfigServer()
	if err != nil {
		return nil, err
	}
	cas, casIndex, err := casParam(r)
	if err != nil {
		return nil, err
	}
	c, err := decodeSchedulerConfig(r)
	if err != nil {
		return nil, err
	}
	return sc.SetSchedulerConfig(r.Context(), c, cas, casIndex)
}

// casParam parses the optional ?cas=<index>.
func casParam(r *nethttp.Request) (bool, uint64, error) {
	q := r.URL.Query()
	if !q.Has("cas") {
		return false, 0, nil
	}
	v := q.Get("cas")
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return false, 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("invalid cas=%q: want the ModifyIndex to check against (a non-negative integer)", v))
	}
	return true, n, nil
}

// decodeSchedulerConfig reads and validates a SchedulerConfiguration body
// (the general body limit applies): 400 for malformed JSON, unknown fields
// or an invalid configuration, 413 when too large.
func decodeSchedulerConfig(r *nethttp.Request) (*api.SchedulerConfiguration, error) {
	var c api.SchedulerConfiguration
	if err := decodeBody(r, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}
