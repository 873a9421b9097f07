package autoscale

import (
	"context"
	"time"
)

// Provider makes and removes a pool's instances. Each instance joins the
// cluster as a node named after its ID (node meta drover.instance = ID).
// Implementations are safe for concurrent use.
type Provider interface {
	// Create starts n instances of shape in pool and returns their IDs
	// (fewer than n when the provider ran out: a partial answer is not
	// an error).
	Create(ctx context.Context, pool string, shape Shape, n int) ([]string, error)
	// Destroy stops the instances; unknown IDs are ignored.
	Destroy(ctx context.Context, ids []string) error
	// List returns every instance the provider holds, booting ones too.
	List(ctx context.Context) ([]Instance, error)
	// Interruptions returns the notices of reclaimed spot instances not
	// returned before.
	Interruptions(ctx context.Context) ([]Interruption, error)
}

// Instance is one instance a provider holds.
type Instance struct {
	ID    string  `json:"id"`
	Pool  string  `json:"pool"`
	Spot  bool    `json:"spot,omitempty"`
	Price float64 `json:"price,omitempty"` // per hour
	// Created is when it was asked for (zero when the provider does not
	// know).
	Created time.Time `json:"created,omitzero"`
}

// Interruption is a notice that an instance will be reclaimed: its node
// drains with the deadline and the reason ReasonSpot.
type Interruption struct {
	ID       string        `json:"id"`
	Deadline time.Duration `json:"deadline"`
}
