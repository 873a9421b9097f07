package rawexec

import (
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/executor"
)

// Name of the driver in job files.
const Name = "raw_exec"

// New builds the raw_exec driver; see executor.NewDriver for plugin config.
func New(opts drivers.Options) (drivers.Driver, error) {
	return executor.NewDriver(Name, false, opts)
}

var _ drivers.Factory = New
