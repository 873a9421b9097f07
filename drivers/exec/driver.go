package exec

import (
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/executor"
)

// Name of the driver in job files.
const Name = "exec"

// New builds the exec driver; see executor.NewDriver for plugin config.
func New(opts drivers.Options) (drivers.Driver, error) {
	return executor.NewDriver(Name, true, opts)
}

var _ drivers.Factory = New
