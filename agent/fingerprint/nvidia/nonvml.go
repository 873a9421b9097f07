//go:build !cgo || !nvml

package nvidia

import "fmt"

// Open loads the host's NVML. Without the nvml build tag (and cgo) drover
// has no NVML support: build with `make build-nvml` for GPU hosts.
func Open() (Library, error) {
	return nil, fmt.Errorf("drover built without NVML support (build tag nvml, cgo): %w", ErrNoNVML)
}

// Simulate builds a simulated DGX server (the pure-Go simulator; builds
// with the nvml tag use go-nvml's mock servers).
func Simulate(cfg SimConfig) (Simulator, error) { return NewPureSim(cfg) }
