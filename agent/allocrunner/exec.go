package allocrunner

import "github.com/drover/drover/agent/taskrunner"

// Task returns the runner of the named task, or nil. The set of runners
// is fixed at New, so no lock is needed.
func (ar *AllocRunner) Task(name string) *taskrunner.TaskRunner { return ar.runners[name] }
