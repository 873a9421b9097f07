package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// Scheduler algorithms (SchedulerConfiguration.SchedulerAlgorithm).
const (
	SchedulerAlgorithmBinpack = "binpack"
	SchedulerAlgorithmSpread  = "spread"
)

// PreemptionConfig says which job types may evict allocs of jobs at least
// 10 priority points lower to make room (Nomad's PreemptionConfig).
type PreemptionConfig struct {
	SystemSchedulerEnabled   bool `json:"SystemSchedulerEnabled"`
	SysBatchSchedulerEnabled bool `json:"SysBatchSchedulerEnabled"`
	BatchSchedulerEnabled    bool `json:"BatchSchedulerEnabled"`
	ServiceSchedulerEnabled  bool `json:"ServiceSchedulerEnabled"`
}

// SchedulerConfiguration is the cluster-wide scheduler configuration kept
// in Raft (GET/PUT /v1/operator/scheduler/configuration). The zero value
// is not the default: use DefaultSchedulerConfiguration.
type SchedulerConfiguration struct {
	// SchedulerAlgorithm is "binpack" (default) or "spread"; "" means binpack.
	SchedulerAlgorithm string           `json:"SchedulerAlgorithm"`
	PreemptionConfig   PreemptionConfig `json:"PreemptionConfig"`
	// MemoryOversubscriptionEnabled, RejectJobRegistration and
	// PauseEvalBroker are Nomad's; drover has none of these features, so
	// Validate accepts them only false (Nomad clients send all fields).
	MemoryOversubscriptionEnabled bool   `json:"MemoryOversubscriptionEnabled,omitempty"`
	RejectJobRegistration         bool   `json:"RejectJobRegistration,omitempty"`
	PauseEvalBroker               bool   `json:"PauseEvalBroker,omitempty"`
	CreateIndex                   uint64 `json:"CreateIndex"`
	ModifyIndex                   uint64 `json:"ModifyIndex"`

	// UsageRetentionHours is how long the usage ledger keeps its hourly
	// buckets (0: 90 days). It is applied as allocs finish.
	UsageRetentionHours int `json:"UsageRetentionHours,omitempty"`
}

// DefaultUsageRetentionHours is the usage ledger's retention when
// UsageRetentionHours is 0 (90 days).
const DefaultUsageRetentionHours = 90 * 24

// MaxUsageRetentionHours bounds SchedulerConfiguration.UsageRetentionHours
// (ten years of hourly buckets).
const MaxUsageRetentionHours = 10 * 365 * 24

// DefaultSchedulerConfiguration is what a cluster uses until an operator
// sets one: binpack, and every job type preempts (a job evicts allocs of
// jobs at least 10 priority points lower when it cannot be placed
// otherwise; preemptible = false and min_runtime protect work). A stored
// configuration is used as it is: an operator turns preemption off for a
// job type by setting its flag false (a configuration set before service
// and batch preemption became the default keeps them off).
func DefaultSchedulerConfiguration() *SchedulerConfiguration {
	return &SchedulerConfiguration{
		SchedulerAlgorithm: SchedulerAlgorithmBinpack,
		PreemptionConfig:   DefaultPreemptionConfig(),
	}
}

// DefaultPreemptionConfig is the preemption a cluster uses until an
// operator sets a scheduler configuration: on for every job type.
func DefaultPreemptionConfig() PreemptionConfig {
	return PreemptionConfig{SystemSchedulerEnabled: true, SysBatchSchedulerEnabled: true,
		BatchSchedulerEnabled: true, ServiceSchedulerEnabled: true}
}

// Algorithm is the effective algorithm ("" is binpack).
func (c *SchedulerConfiguration) Algorithm() string {
	if c == nil || c.SchedulerAlgorithm == "" {
		return SchedulerAlgorithmBinpack
	}
	return c.SchedulerAlgorithm
}

// Validate checks the configuration; errors wrap ErrBadRequest.
func (c *SchedulerConfiguration) Validate() error {
	if c == nil {
		return fmt.Errorf("scheduler configuration required: %w", ErrBadRequest)
	}
	for _, f := range []struct {
		name string
		on   bool
	}{{"MemoryOversubscriptionEnabled", c.MemoryOversubscriptionEnabled},
		{"RejectJobRegistration", c.RejectJobRegistration}, {"PauseEvalBroker", c.PauseEvalBroker}} {
		if f.on {
			return Errorf(ErrBadRequest, f.name+" is not supported by drover: set it false or leave it out")
		}
	}
	if c.UsageRetentionHours < 0 || c.UsageRetentionHours > MaxUsageRetentionHours {
		return Errorf(ErrBadRequest, fmt.Sprintf("invalid UsageRetentionHours %d: want 0 (90 days) to %d",
			c.UsageRetentionHours, MaxUsageRetentionHours))
	}
	switch c.SchedulerAlgorithm {
	case "", SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread:
		return nil
	}
	return Errorf(ErrBadRequest, fmt.Sprintf("invalid SchedulerAlgorithm %q: want %q or %q",
		c.SchedulerAlgorithm, SchedulerAlgorithmBinpack, SchedulerAlgorithmSpread))
}

// Copy returns a copy (nil for nil).
func (c *SchedulerConfiguration) Copy() *SchedulerConfiguration {
	if c == nil {
		return nil
	}
	n := *c
	return &n
}

// SchedulerConfigurationResponse answers GET /v1/operator/scheduler/configuration.
type SchedulerConfigurationResponse struct {
	SchedulerConfig *SchedulerConfiguration `json:"SchedulerConfig"`
	Index           uint64                  `json:"Index"`
}

// SchedulerSetConfigurationResponse answers PUT/POST
// /v1/operator/scheduler/configuration: Updated is false when a
// check-and-set (?cas=) index did not match.
type SchedulerSetConfigurationResponse struct {
	Updated bool   `json:"Updated"`
	Index   uint64 `json:"Index"`
}

// SchedulerGetConfiguration reads the scheduler configuration.
func (c *Client) SchedulerGetConfiguration(ctx context.Context, o *QueryOptions) (*SchedulerConfigurationResponse, *QueryMeta, error) {
	var out SchedulerConfigurationResponse
	qm, err := c.Query(ctx, "/v1/operator/scheduler/configuration", &out, o)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// SchedulerSetConfiguration replaces the scheduler configuration.
func (c *Client) SchedulerSetConfiguration(ctx context.Context, conf *SchedulerConfiguration) (*SchedulerSetConfigurationResponse, error) {
	var out SchedulerSetConfigurationResponse
	if err := c.Write(ctx, http.MethodPut, "/v1/operator/scheduler/configuration", conf, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// SchedulerCASConfiguration replaces the scheduler configuration only if
// its ModifyIndex is still index (Updated false otherwise).
func (c *Client) SchedulerCASConfiguration(ctx context.Context, conf *SchedulerConfiguration, index uint64) (*SchedulerSetConfigurationResponse, error) {
	var out SchedulerSetConfigurationResponse
	o := &WriteOptions{Params: map[string]string{"cas": strconv.FormatUint(index, 10)}}
	if err := c.Write(ctx, http.MethodPut, "/v1/operator/scheduler/configuration", conf, &out, o); err != nil {
		return nil, err
	}
	return &out, nil
}
