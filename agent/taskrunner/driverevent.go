package taskrunner

import (
	"strings"
	"time"

	"github.com/drover/drover/api"
)

// ParseTaskID splits a task ID the runner made ("<allocID>/<task>/<hex>",
// see drivers.TaskConfig.ID) into its alloc ID and task name.
func ParseTaskID(id string) (allocID, task string, ok bool) {
	first := strings.IndexByte(id, '/')
	last := strings.LastIndexByte(id, '/')
	if first <= 0 || last <= first+1 || last == len(id)-1 {
		return "", "", false
	}
	return id[:first], id[first+1 : last], true
}

// DriverEvent records a message the driver reported while it works on the
// task (image import and pull progress ...) as a "Driver" task event. It
// is safe from any goroutine, the driver's included, and does not block
// on the runner.
func (tr *TaskRunner) DriverEvent(msg string, at time.Time) {
	ev := &api.TaskEvent{Type: api.TaskDriverMessage, DisplayMessage: msg, Message: msg}
	if !at.IsZero() {
		ev.Time = at.UnixNano()
	}
	tr.emit(ev)
}
