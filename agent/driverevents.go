package agent

import (
	"time"

	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/containerd"
)

// containerdDriver is the containerd driver with its event hook in the
// shape the client looks for (OnTaskEvent with plain values), so image
// import and pull progress become "Driver" task events. Every other
// method, the optional abilities (exec, stats, signals, Leftovers)
// included, is the driver's own.
type containerdDriver struct{ *containerd.Driver }

// containerdFactory builds the containerd driver for the client.
func containerdFactory(opts drivers.Options) (drivers.Driver, error) {
	d, err := containerd.New(opts)
	if err != nil {
		return nil, err
	}
	return containerdDriver{d}, nil
}

// OnTaskEvent registers fn for the driver's task events; nil unregisters.
func (d containerdDriver) OnTaskEvent(fn func(taskID, message string, at time.Time)) {
	if fn == nil {
		d.OnEvent(nil)
		return
	}
	d.OnEvent(func(e containerd.Event) { fn(e.TaskID, e.Message, e.Time) })
}
