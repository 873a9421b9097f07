package server

import (
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
func registrationAllowed(r schedulerConfigReader) error {
	c, err := r.SchedulerConfig(nil)
	if err != nil {
		return fmt.Errorf("read scheduler configuration: %w", err)
	}
	if c != nil && c.RejectJobRegistration {
		return api.Errorf(api.ErrPermissionDenied, "job registration, dispatch and scaling are disabled by the scheduler configuration (RejectJobRegistration)")
	}
	return nil
}
