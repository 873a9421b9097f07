package api

import (
	"fmt"
	"math"
)

// GPU sharing: a device ask with a Share takes part of each of Count
// device instances (a GPU's compute in thousandths, and its memory)
// instead of whole ones. A shared instance runs one mode at a time.

// Share modes.
const (
	// ShareModeTimeSlicing: the tasks on a GPU take turns; no isolation
	// of compute or memory (the client says so to the task and sets
	// DROVER_GPU_MEMORY_LIMIT for frameworks that honour one).
	ShareModeTimeSlicing = "time-slicing"
	// ShareModeMPS: NVIDIA's Multi-Process Service, one control daemon
	// per shared GPU, with a compute share and a pinned memory limit per
	// task.
	ShareModeMPS = "mps"
)

// MilliPerDevice is one whole device instance in thousandths.
const MilliPerDevice = 1000

// DeviceShare asks a share of each device instance.
type DeviceShare struct {
	// Fraction of each instance's compute, above 0 and below 1 (a whole
	// one is asked without a share). Exclusive with MemoryMB.
	Fraction float64 `json:"Fraction,omitempty"`
	// MemoryMB of each instance's memory: the fraction is memory over the
	// chosen instance's memory (rounded up to a thousandth).
	MemoryMB int64 `json:"MemoryMB,omitempty"`
	// Mode is ShareModeTimeSlicing (default) or ShareModeMPS.
	Mode string `json:"Mode,omitempty"`
	// Limit is the burst allowed above the share (MPS' thread
	// percentage), at least the fraction and at most 1 (0: the share).
	Limit float64 `json:"Limit,omitempty"`
}

// ShareMode is the share's mode with the default applied.
func (s *DeviceShare) ShareMode() string {
	if s == nil || s.Mode == "" {
		return ShareModeTimeSlicing
	}
	return s.Mode
}

// Milli is the share of an instance with memMB of memory (0: unknown) in
// thousandths, rounded up, at least 1; ok is false when a memory share
// cannot be turned into one (unknown or too little memory).
func (s *DeviceShare) Milli(memMB int64) (int, bool) {
	if s.MemoryMB > 0 {
		if memMB <= 0 || s.MemoryMB > memMB {
			return 0, false
		}
		return max(1, int((s.MemoryMB*MilliPerDevice+memMB-1)/memMB)), true
	}
	return max(1, int(math.Ceil(s.Fraction*MilliPerDevice-1e-9))), true
}

// LimitMilli is the burst limit in thousandths for a share of milli.
func (s *DeviceShare) LimitMilli(milli int) int {
	if s.Limit <= 0 {
		return milli
	}
	return max(milli, min(MilliPerDevice, int(math.Ceil(s.Limit*MilliPerDevice-1e-9))))
}

// Validate checks a share's fields.
func (s *DeviceShare) Validate() error {
	switch {
	case s.Fraction != 0 && s.MemoryMB != 0:
		return fmt.Errorf("share: fraction and memory are exclusive")
	case s.Fraction == 0 && s.MemoryMB == 0:
		return fmt.Errorf("share: fraction or memory is required")
	case s.Fraction < 0 || s.Fraction >= 1 || math.IsNaN(s.Fraction):
		return fmt.Errorf("share: fraction %v must be above 0 and below 1 (ask a whole device without a share)", s.Fraction)
	case s.MemoryMB < 0:
		return fmt.Errorf("share: memory must be positive")
	case s.Mode != "" && s.Mode != ShareModeTimeSlicing && s.Mode != ShareModeMPS:
		return fmt.Errorf("share: mode %q: want %q or %q", s.Mode, ShareModeTimeSlicing, ShareModeMPS)
	case s.Limit < 0 || s.Limit > 1 || math.IsNaN(s.Limit):
		return fmt.Errorf("share: limit %v must be within (0, 1]", s.Limit)
	case s.Limit > 0 && s.Fraction > 0 && s.Limit < s.Fraction:
		return fmt.Errorf("share: limit %v is below the fraction %v", s.Limit, s.Fraction)
	}
	return nil
}

// AllocatedShare is the share an alloc holds of each of its device
// instances (AllocatedDeviceResource.DeviceIDs).
type AllocatedShare struct {
	Milli      int    `json:"Milli"`                // thousandths of each instance's compute
	MemoryMB   int64  `json:"MemoryMB,omitempty"`   // of each instance's memory: asked, or the fraction of it (0: memory unknown)
	Mode       string `json:"Mode"`                 // ShareModeTimeSlicing or ShareModeMPS
	LimitMilli int    `json:"LimitMilli,omitempty"` // burst limit (MPS thread percentage), >= Milli
}
