package allocrunner

import "time"

// DriverEvent hands a driver's message about one of the alloc's tasks to
// that task's runner (a "Driver" task event); false when the alloc has no
// such task.
func (ar *AllocRunner) DriverEvent(task, msg string, at time.Time) bool {
	tr := ar.runners[task]
	if tr == nil {
		return false
	}
	tr.DriverEvent(msg, at)
	return true
}
