package client

import (
	"context"
	"errors"
	"time"

	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/agent/taskrunner"
	"github.com/drover/drover/api"
)

// taskEventSource is a driver that reports what it does for a task while
// starting it (image import, pull progress ...). fn must not block; nil
// unregisters. The agent adapts drivers whose hook carries their own
// event type (containerd's OnEvent).
type taskEventSource interface {
	OnTaskEvent(fn func(taskID, message string, at time.Time))
}

// leftoverLister is a driver that can list what it runs for tasks the
// client does not know (containers of an earlier, lost data dir ...).
type leftoverLister interface {
	Leftovers(ctx context.Context, knownTaskIDs []string) ([]string, error)
}

// leftoverTimeout bounds the leftover listing at start-up (the drivers
// asked are healthy: connected already).
const leftoverTimeout = 2 * time.Second

// hookDriverEvents registers the client as the receiver of every
// driver's task events.
func (c *Client) hookDriverEvents() {
	for _, d := range c.drivers {
		if s, ok := d.(taskEventSource); ok {
			s.OnTaskEvent(c.driverEvent)
		}
	}
}

// unhookDriverEvents undoes hookDriverEvents (Shutdown).
func (c *Client) unhookDriverEvents() {
	for _, d := range c.drivers {
		if s, ok := d.(taskEventSource); ok {
			s.OnTaskEvent(nil)
		}
	}
}

// driverEvent routes a driver's message to the task's runner, where it
// becomes a "Driver" task event. Called from driver goroutines.
func (c *Client) driverEvent(taskID, message string, at time.Time) {
	allocID, task, ok := taskrunner.ParseTaskID(taskID)
	if !ok {
		c.log.Debug("driver event for a foreign task id", "task_id", taskID, "message", message)
		return
	}
	c.mu.Lock()
	ar := c.runners[allocID]
	c.mu.Unlock()
	if ar == nil || !ar.DriverEvent(task, message, at) {
		c.log.Debug("driver event for an unknown task", "task_id", taskID, "message", message)
	}
}

// reportLeftovers asks each driver that can for the tasks it runs that
// none of the restored allocations knows, and logs each at WARN. Nothing
// is stopped: an operator decides. It runs before the restored runners
// start, so no task this client starts can be mistaken for a leftover.
func (c *Client) reportLeftovers(ctx context.Context, allocs []*api.Allocation) {
	var listers []leftoverLister
	var names []string
	c.mu.Lock()
	infos := c.node.Drivers
	c.mu.Unlock()
	for name, d := range c.drivers {
		if info := infos[name]; info == nil || !info.Healthy {
			continue // not running here: nothing to list, and no dial to wait for
		}
		if l, ok := d.(leftoverLister); ok {
			listers = append(listers, l)
			names = append(names, name)
		}
	}
	if len(listers) == 0 {
		return
	}
	known := c.knownTaskIDs(allocs)
	ctx, cancel := context.WithTimeout(ctx, leftoverTimeout)
	defer cancel()
	for i, l := range listers {
		ids, err := l.Leftovers(ctx, known)
		if err != nil {
			// Typically the runtime is not running here: nothing to report.
			c.log.Debug("list leftover tasks", "driver", names[i], "error", err)
			continue
		}
		for _, id := range ids {
			c.log.Warn("leftover container not managed by drover", "driver", names[i], "id", id)
		}
	}
}

// knownTaskIDs are the driver task IDs in the persisted task handles of
// allocs (the tasks a restarted client reattaches to).
func (c *Client) knownTaskIDs(allocs []*api.Allocation) []string {
	var ids []string
	for _, a := range allocs {
		if a.Job == nil {
			continue
		}
		tg := a.Job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		for _, t := range tg.Tasks {
			rec, err := c.db.Task(a.ID, t.Name)
			if err != nil {
				if !errors.Is(err, clientstate.ErrNotFound) {
					c.log.Warn("read task record", "alloc_id", a.ID, "task", t.Name, "error", err)
				}
				continue
			}
			if rec.Handle != nil && rec.Handle.Config != nil {
				ids = append(ids, rec.Handle.Config.ID)
			}
		}
	}
	return ids
}
