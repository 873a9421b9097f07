package drivertest

import (
	"encoding/json"
	"testing"

	"github.com/drover/drover/drivers"
)

// roundTrip copies a handle through JSON, as the client persists it.
func roundTrip(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatalf("marshal handle: %v", err)
	}
	var out drivers.TaskHandle
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal handle: %v", err)
	}
	return &out
}
