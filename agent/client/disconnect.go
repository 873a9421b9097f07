package client

import (
	"context"
	"time"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/api"
)

// A client that cannot heartbeat for its TTL is cut off from the servers:
// they will soon consider its node disconnected (or down) and place its
// work elsewhere. So that two copies never run past the disconnect window,
// the client stops each alloc itself once it has been cut off for the
// group's max_client_disconnect (stop_after_client_disconnect when only
// that is set), and at once when neither is set. An alloc stopped this way
// is reported lost. When a heartbeat gets through again, every alloc's
// status is sent once more, so the server learns the real status of the
// allocs it marked unknown (and resolves duplicates).

// heartbeatOK records a successful register or heartbeat and its TTL.
// When the previous one is more than its TTL ago the client was cut off:
// every alloc's status is reported again.
func (c *Client) heartbeatOK(ttl time.Duration) {
	now := c.cfg.Clock.Now()
	c.hbMu.Lock()
	last, prevTTL := c.hbLast, c.hbTTL
	c.hbLast, c.hbTTL = now, ttl
	c.hbMu.Unlock()
	if prevTTL > 0 && !now.Before(last.Add(prevTTL)) {
		c.log.Info("heartbeat got through again: reporting every allocation's status", "since_last", now.Sub(last))
		c.resendAll()
	}
	select {
	case c.hbCh <- struct{}{}:
	default:
	}
}

func (c *Client) lastHeartbeat() (time.Time, time.Duration) {
	c.hbMu.Lock()
	defer c.hbMu.Unlock()
	return c.hbLast, c.hbTTL
}

// disconnectLoop watches the time since the last successful heartbeat:
// past the TTL it stops allocs as their groups say. Before the first registration nothing is
// stopped (restored allocs keep running until a server was reached).
func (c *Client) disconnectLoop(ctx context.Context) {
	away := false
	for {
		var wake <-chan time.Time
		if last, ttl := c.lastHeartbeat(); ttl > 0 {
			now := c.cfg.Clock.Now()
			cutAt := last.Add(ttl)
			switch {
			case now.Before(cutAt):
				away = false
				wake = c.cfg.Clock.After(cutAt.Sub(now))
			default:
				if !away {
					away = true
					c.log.Warn("no heartbeat got through within the TTL: cut off from the servers", "ttl", ttl, "last_heartbeat", last)
				}
				if next, ok := c.stopAway(now, cutAt); ok {
					wake = c.cfg.Clock.After(next.Sub(now))
				}
			}
		}
		select {
		case <-wake:
		case <-c.hbCh:
		case <-ctx.Done():
			return
		}
	}
}

// disconnectDelay is how long an alloc keeps running once its client is
// cut off: max_client_disconnect, else stop_after_client_disconnect, else 0.
func disconnectDelay(a *api.Allocation) time.Duration {
	if a.Job == nil {
		return 0
	}
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return 0
	}
	if tg.MaxClientDisconnect > 0 {
		return tg.MaxClientDisconnect
	}
	return max(tg.StopAfterClientDisconnect, 0)
}

// stopAway stops the allocs whose time is up (cut off since cutAt) and
// returns when the next one is due (false when none is left).
func (c *Client) stopAway(now, cutAt time.Time) (time.Time, bool) {
	c.mu.Lock()
	ids := make([]string, 0, len(c.runners))
	for id := range c.runners {
		if !c.awayStopped[id] {
			ids = append(ids, id)
		}
	}
	c.mu.Unlock()
	var next time.Time
	for _, id := range ids {
		c.mu.Lock()
		ar := c.runners[id]
		c.mu.Unlock()
		if ar == nil {
			continue
		}
		select {
		case <-ar.WaitCh():
			continue // already done
		default:
		}
		a := ar.Alloc()
		if a.DesiredStatus != api.AllocDesiredStatusRun && a.DesiredStatus != "" {
			continue // being stopped anyway
		}
		d := disconnectDelay(a)
		if at := cutAt.Add(d); now.Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		c.mu.Lock()
		c.awayStopped[id] = true
		c.mu.Unlock()
		c.log.Warn("stopping allocation: cut off from the servers", "alloc_id", id, "after", d)
		ar.KillFor(allocrunner.StopNodeLost)
	}
	return next, !next.IsZero()
}

// awayStatus reports an alloc the client stopped while cut off as lost
// once its tasks are done: it did not complete, it was abandoned.
func (c *Client) awayStatus(u *api.Allocation) {
	c.mu.Lock()
	away := c.awayStopped[u.ID]
	c.mu.Unlock()
	if away && (u.ClientStatus == api.AllocClientStatusComplete || u.ClientStatus == api.AllocClientStatusFailed) {
		u.ClientStatus = api.AllocClientStatusLost
		u.ClientDescription = "alloc was stopped by its client: cut off from the servers (max_client_disconnect)"
	}
}

// resendAll marks every alloc dirty so its status is reported again.
func (c *Client) resendAll() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.runners))
	for id := range c.runners {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.markDirty(id)
	}
}
