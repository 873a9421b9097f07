package rawexec

import (
	"os"
	"testing"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/internal/testproc"
)

var droverBin string

func TestMain(m *testing.M) {
	if os.Getenv(fakeAgentEnv) != "" {
		os.Exit(fakeAgent())
	}
	testproc.MainWithBinary(m, &droverBin)
}

func newDriver(t *testing.T) drivers.Driver {
	d, err := New(drivers.Options{Config: map[string]any{"executor_path": droverBin}, DataDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stateDir is shared by all driver instances, like an agent's data dir
// across restarts.
var stateDir = os.TempDir()

func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.ShellHarness(&drivertest.Harness{New: newDriver, Parallel: true}))
}
