//go:build !linux

package hugepages

import "log/slog"

// Advisor does nothing off Linux.
type Advisor struct{}

// Start returns an Advisor that does nothing: transparent huge pages are
// Linux's.
func Start(*slog.Logger) *Advisor { return nil }

// Stop does nothing.
func (*Advisor) Stop() {}
