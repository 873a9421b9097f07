package exec

import (
	"os"
	"testing"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/drivertest"
	"github.com/drover/drover/internal/testproc"
)

var droverBin string

func TestMain(m *testing.M) {
	testproc.MainWithBinary(m, &droverBin)
}

// stateDir is shared by all driver instances, like an agent's data dir
// across restarts.
var stateDir = os.TempDir()

func newDriver(t *testing.T) drivers.Driver { return newDriverWith(t, nil) }

// newDriverWith builds the driver with client options (user.denylist).
func newDriverWith(t *testing.T, clientOptions map[string]string) drivers.Driver {
	d, err := New(drivers.Options{Config: map[string]any{"executor_path": droverBin}, DataDir: stateDir, ClientOptions: clientOptions})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) {
	drivertest.NeedRoot(t)
	drivertest.Run(t, drivertest.ShellHarness(&drivertest.Harness{New: newDriver, Parallel: true, EnforcesMemory: true}))
}
