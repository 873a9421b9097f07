package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/scheduler"
	"github.com/hashicorp/go-memdb"
)

// schedulerConfigReader is the part of a state snapshot or store that
// holds the scheduler configuration.
type schedulerConfigReader interface {
	SchedulerConfig(ws memdb.WatchSet) (*api.SchedulerConfiguration, error)
}

// SchedulerConfig returns the cluster's scheduler configuration (the
// defaults, with index 0, until an operator set one) and the index of
// the scheduler configuration table.
func (s *Server) SchedulerConfig() (*api.SchedulerConfiguration, uint64, error) {
	st := s.State()
	c, err := st.SchedulerConfig(nil)
	if err != nil {
		return nil, 0, fmt.Errorf("read scheduler configuration: %w", err)
	}
	if c == nil {
		c = api.DefaultSchedulerConfiguration()
	}
	return c, st.Index("scheduler_config"), nil
}

// SetSchedulerConfig replaces the scheduler configuration through Raft.
// With cas it writes only if the stored ModifyIndex (0 when unset) is
// casIndex; a mismatch is not an error but Updated false. Errors wrap api
// sentinels (api.ErrBadRequest for an invalid configuration).
func (s *Server) SetSchedulerConfig(ctx context.Context, c *api.SchedulerConfiguration, cas bool, casIndex uint64) (*api.SchedulerSetConfigurationResponse, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	idx, err := s.applySchedulerConfig(ctx, c, cas, casIndex)
	if cas && errors.Is(err, api.ErrIndexConflict) {
		return &api.SchedulerSetConfigurationResponse{Updated: false, Index: idx}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("set scheduler configuration: %w", err)
	}
	return &api.SchedulerSetConfigurationResponse{Updated: true, Index: idx}, nil
}

// schedulerOptions are the scheduler options the stored configuration
// sets (preemption per job type and the algorithm); defaults when unset
// or unreadable.
func schedulerOptions(r schedulerConfigReader) (pre scheduler.PreemptionConfig, algorithm string) {
	c, err := r.SchedulerConfig(nil)
	if err != nil || c == nil {
		c = api.DefaultSchedulerConfiguration()
	}
	return c.PreemptionConfig, c.Algorithm()
}

// registrationAllowed refuses job registration, dispatch and scaling while
// the scheduler configuration sets RejectJobRegistration (403, as Nomad
// for requests without a management token).
func (s *Server) registrationAllowed() error {
	c, err := s.State().SchedulerConfig(nil)
	if err != nil {
		return fmt.Errorf("read scheduler configuration: %w", err)
	}
	if c != nil && c.RejectJobRegistration {
		return api.Errorf(api.ErrPermissionDenied, "job registration, dispatch and scaling are disabled by the scheduler configuration (RejectJobRegistration)")
	}
	return nil
}
