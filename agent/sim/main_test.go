package sim_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/drover/drover/agent/hugepages"
)

// TestMain advises the heap for huge pages where drover sim would
// (DROVER_HEAP_HUGEPAGES=1): the benchmarks run the simulator in this
// process, beside the servers they measure.
func TestMain(m *testing.M) {
	a := hugepages.StartFromEnv(slog.Default())
	code := m.Run()
	a.Stop()
	os.Exit(code)
}
