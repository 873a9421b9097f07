//go:build !cgo

package nvidia

import "fmt"

// Open loads the host's NVML. go-nvml needs cgo: a drover built with
// CGO_ENABLED=0 never finds NVML.
func Open() (Library, error) {
	return nil, fmt.Errorf("drover built without cgo: %w", ErrNoNVML)
}

// Simulate builds a simulated DGX server (the pure-Go simulator: go-nvml's
// mock servers need cgo).
func Simulate(cfg SimConfig) (Simulator, error) { return NewPureSim(cfg) }
