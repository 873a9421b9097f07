package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"strconv"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/drover/drover/api"
)

// SchedulerConfigState is the scheduler-configuration read side of
// Store: the stored configuration or nil, nil when none was set (the
// defaults apply).
type SchedulerConfigState interface {
	SchedulerConfig(ws memdb.WatchSet) (*api.SchedulerConfiguration, error)
}

// SchedulerConfigBackend is the scheduler-configuration write side of
// the server role. With cas, the configuration is written only if the
// stored ModifyIndex (0 when unset) is casIndex; otherwise the answer is
// Updated false. Errors wrap api sentinels (ErrBadRequest for an invalid
// configuration).
type SchedulerConfigBackend interface {
	SetSchedulerConfig(ctx context.Context, c *api.SchedulerConfiguration, cas bool, casIndex uint64) (*api.SchedulerSetConfigurationResponse, error)
}

// tableSchedulerConfig is the state table whose index the GET reports.
const tableSchedulerConfig = "scheduler_config"

// schedulerConfigHandlers serve /v1/operator/scheduler/configuration.
type schedulerConfigHandlers struct {
	s *HTTPServer
	b SchedulerConfigBackend
}

// get answers like Nomad: {"SchedulerConfig": {...}, "Index": n} (the
// defaults, with Index 0, until an operator set a configuration). It
// supports blocking queries (?index=).
func (h *schedulerConfigHandlers) get(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	return h.s.blocking(w, r, func(st Store, ws memdb.WatchSet) (any, uint64, error) {
		c, err := st.SchedulerConfig(ws)
		if err != nil {
			return nil, 0, err
		}
		if c == nil {
			c = api.DefaultSchedulerConfiguration()
		}
		idx := st.Index(tableSchedulerConfig)
		return &api.SchedulerConfigurationResponse{SchedulerConfig: c, Index: idx}, idx, nil
	})
}

// set replaces the configuration; ?cas=<ModifyIndex> makes it a
// check-and-set ({"Updated": false} on a mismatch, like Nomad).
func (h *schedulerConfigHandlers) set(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if err := h.s.need(h.b != nil, "this server cannot change the scheduler configuration"); err != nil {
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
	return h.b.SetSchedulerConfig(r.Context(), c, cas, casIndex)
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
