package taskrunner

import (
	"fmt"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// ExecTarget returns the driver's Execer and the running task's driver ID
// for `alloc exec`. A driver without exec support yields an error wrapping
// drivers.ErrNotSupported; a task that is not running a 400 api.Error.
func (tr *TaskRunner) ExecTarget() (drivers.Execer, string, error) {
	tr.mu.Lock()
	h := tr.handle
	running := tr.state.State == api.TaskStateRunning
	tr.mu.Unlock()
	e, ok := tr.cfg.Driver.(drivers.Execer)
	if !ok {
		return nil, "", fmt.Errorf("exec in task %q: %w", tr.Name(), drivers.ErrNotSupported)
	}
	if !running || h == nil || h.Config == nil {
		return nil, "", fmt.Errorf("exec in task %q: %w", tr.Name(), api.Errorf(api.ErrBadRequest, "task is not running"))
	}
	return e, h.Config.ID, nil
}
