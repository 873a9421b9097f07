package sim_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/drover/drover/agent/hugepages"
)

// TestMain advises the heap for huge pages as drover sim does: the
// benchmarks run the simulator in this process, beside the servers they
// measure.
func TestMain(m *testing.M) {
	a := hugepages.Start(slog.Default())
	code := m.Run()
	a.Stop()
	os.Exit(code)
}
