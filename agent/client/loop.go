package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/drover/drover/agent/fingerprint"
	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// serverBackoff is the retry delay of the loops that talk to the servers:
// jittered, doubling from 250 ms to 15 s.
func serverBackoff() clock.Backoff {
	return clock.Backoff{Base: 250 * time.Millisecond, Max: 15 * time.Second, Jitter: true}
}

// sleep waits d on the client clock; false when ctx ended.
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-c.cfg.Clock.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// registerLoop registers the node, then heartbeats within half the TTL
// (jittered); it re-registers when the node changed or the server lost it.
func (c *Client) registerLoop(ctx context.Context) {
	retry := serverBackoff()
	registered := false
	var ttl time.Duration
	for ctx.Err() == nil {
		var resp *api.NodeRegisterResponse
		var err error
		if !registered {
			req := &api.NodeRegisterRequest{Node: c.Node()}
			if c.cfg.Intro != nil {
				req.IntroToken, err = c.cfg.Intro(ctx)
			}
			if err == nil {
				err = c.servers.do(ctx, func(cl *api.Client) error {
					r, err := cl.RegisterNodeRequest(ctx, req)
					resp = r
					return err
				})
			}
		} else {
			err = c.servers.do(ctx, func(cl *api.Client) error {
				r, err := cl.HeartbeatNode(ctx, node(c).ID, &api.NodeHeartbeatRequest{})
				resp = r
				return err
			})
			if errors.Is(err, api.ErrNodeNotFound) {
				c.log.Warn("server does not know the node, registering again")
				registered = false
				continue
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			d := retry.Next()
			c.log.Warn("node register/heartbeat failed", "error", err, "retry_in", d)
			if !c.sleep(ctx, d) {
				return
			}
			continue
		}
		retry.Reset()
		if !registered {
			c.log.Info("node registered", "node_id", node(c).ID, "server", c.servers.current())
			c.regOnce.Do(func() { close(c.registeredCh) })
			c.registrar.Resync() // a server that lost the node lost its services too
		}
		registered = true
		if len(resp.Servers) > 0 {
			c.servers.set(resp.Servers)
		}
		ttl = resp.HeartbeatTTL
		if ttl <= 0 {
			ttl = 10 * time.Second
		}
		c.heartbeatOK(ttl)
		// Heartbeat at half the TTL, jittered down by up to a quarter.
		wait := ttl/2 - rand.N(ttl/4+1)
		select {
		case <-c.cfg.Clock.After(wait):
		case <-c.registerCh:
			registered = false
		case <-ctx.Done():
			return
		}
	}
}

func node(c *Client) *api.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node
}

// watchLoop long-polls this node's alloc IDs and AllocModifyIndexes
// (client-allocs, as Nomad's clients do), fetches the allocs the server
// changed since this loop last fetched them, and applies them. A status
// this client reported moves no AllocModifyIndex and costs no fetch.
func (c *Client) watchLoop(ctx context.Context) {
	select {
	case <-c.registeredCh:
	case <-ctx.Done():
		return
	}
	var index uint64
	retry := serverBackoff()
	fetched := map[string]uint64{} // alloc ID -> AllocModifyIndex last fetched
	stale := true                  // any server answers; the leader after a server behind us did
	fail := func(what string, err error) bool {
		if ctx.Err() != nil {
			return false
		}
		if errors.Is(err, api.ErrNodeNotFound) {
			c.reregister()
		}
		d := retry.Next()
		c.log.Warn(what+" failed", "error", err, "retry_in", d)
		return c.sleep(ctx, d)
	}
	for ctx.Err() == nil {
		var stubs *api.NodeClientAllocsResponse
		var meta *api.QueryMeta
		err := c.servers.do(ctx, func(cl *api.Client) error {
			qctx, cancel := context.WithTimeout(ctx, c.cfg.AllocWaitTime+30*time.Second)
			defer cancel()
			var err error
			// Stale, as Nomad's clients ask: any server answers from its
			// own state, so the long polls of thousands of nodes neither
			// all go to the leader nor need one during an election; the
			// fetch that follows goes to the leader.
			stubs, meta, err = cl.NodeClientAllocs(qctx, node(c).ID, &api.QueryOptions{WaitIndex: index, WaitTime: c.cfg.AllocWaitTime, AllowStale: stale})
			return err
		})
		if err != nil && stale && errors.Is(err, api.ErrNodeNotFound) {
			// A server that has not applied this node's registration
			// yet: the leader says whether it must register again.
			stale = false
			continue
		}
		if err != nil {
			if !fail("watch allocations", err) {
				return
			}
			continue
		}
		if stale && meta.LastIndex < index {
			// A server behind what this client already saw (a lagging
			// follower after a failover): its list may lack allocs this
			// client runs. Not applied; the leader answers next.
			stale = false
			continue
		}
		stale = true
		want := stubs.Changed(fetched)
		changed, err := c.fetchAllocs(ctx, want, meta.LastIndex)
		if err == nil && len(changed) < len(want) {
			// An alloc went away in between (the fetch waits for the
			// list's index, so a server behind the one that listed is
			// not the cause, unless it predates MinIndex): the index
			// stays, so the next poll lists again.
			err = fmt.Errorf("got %d of the %d allocations asked for", len(changed), len(want))
		}
		if err != nil {
			if !fail("fetch allocations", err) {
				return
			}
			continue // index unchanged: the next poll answers at once
		}
		retry.Reset()
		for _, a := range changed {
			fetched[a.ID] = a.AllocModifyIndex
		}
		if meta.LastIndex == 0 {
			// A server that sets no index cannot block: do not spin on it.
			c.log.Warn("allocations response without an index")
			if !c.sleep(ctx, time.Second) {
				return
			}
		}
		if meta.LastIndex < index {
			index = 0 // the leader's index went backwards (new cluster): start over
		} else {
			index = meta.LastIndex
		}
		c.applyAllocs(changed, stubs.Allocs)
	}
}

// fetchAllocs gets the named allocs of this node in full, in batches,
// from a state at or past minIndex (the list's index).
func (c *Client) fetchAllocs(ctx context.Context, ids []string, minIndex uint64) ([]*api.Allocation, error) {
	var out []*api.Allocation
	for len(ids) > 0 {
		n := min(len(ids), api.MaxAllocFetch)
		err := c.servers.do(ctx, func(cl *api.Client) error {
			got, err := cl.NodeFetchAllocs(ctx, node(c).ID, ids[:n], minIndex)
			out = append(out, got...)
			return err
		})
		if err != nil {
			return nil, err
		}
		ids = ids[n:]
	}
	return out, nil
}

func (c *Client) reregister() {
	select {
	case c.registerCh <- struct{}{}:
	default:
	}
}

// allocDiff is what to do with the server's view of this node's allocs.
type allocDiff struct {
	added   []*api.Allocation
	updated []*api.Allocation
	removed []string
	// neverRun were stopped by the server before this client ran them but
	// still read pending there: the client reports them complete, or the
	// job summary would count them as starting forever.
	neverRun []*api.Allocation
}

// diffAllocs compares the server's allocs with the runners (id -> last
// applied AllocModifyIndex): changed are the allocs fetched in full,
// onServer every alloc the server holds for this node (what is not there
// is removed). Terminal allocs the client never ran are not started;
// those the server still sees as pending go to neverRun.
func diffAllocs(have map[string]uint64, changed []*api.Allocation, onServer map[string]uint64) allocDiff {
	var d allocDiff
	for _, a := range changed {
		idx, ok := have[a.ID]
		switch {
		case !ok:
			if !a.TerminalStatus() {
				d.added = append(d.added, a)
			} else if a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == "" {
				d.neverRun = append(d.neverRun, a)
			}
		case a.AllocModifyIndex > idx:
			d.updated = append(d.updated, a)
		}
	}
	for id := range have {
		if _, ok := onServer[id]; !ok {
			d.removed = append(d.removed, id)
		}
	}
	sort.Strings(d.removed)
	return d
}

func (c *Client) applyAllocs(changed []*api.Allocation, onServer map[string]uint64) {
	c.mu.Lock()
	have := make(map[string]uint64, len(c.seenIndex))
	for k, v := range c.seenIndex {
		have[k] = v
	}
	c.mu.Unlock()
	d := diffAllocs(have, changed, onServer)
	for _, a := range d.neverRun {
		c.report(a, api.AllocClientStatusComplete, "stopped before it started")
	}
	for _, a := range d.added {
		if err := c.startRunner(a, false); err != nil {
			c.log.Error("start allocation", "alloc_id", a.ID, "error", err)
			c.reportFailed(a, err)
		}
	}
	for _, a := range d.updated {
		c.mu.Lock()
		ar := c.runners[a.ID]
		c.seenIndex[a.ID] = a.AllocModifyIndex
		c.mu.Unlock()
		if ar != nil {
			ar.Update(a)
		}
	}
	for _, id := range d.removed {
		c.mu.Lock()
		ar := c.runners[id]
		delete(c.runners, id)
		delete(c.seenIndex, id)
		delete(c.awayStopped, id)
		c.mu.Unlock()
		if ar == nil {
			continue
		}
		// Garbage-collected on the server: stop, then remove dir and state.
		c.arWG.Add(1)
		go func() {
			defer c.arWG.Done()
			ar.Kill()
			<-ar.WaitCh()
			if err := ar.Destroy(); err != nil {
				c.log.Warn("destroy alloc dir", "alloc_id", id, "error", err)
			}
			if err := c.db.DeleteAlloc(id); err != nil {
				c.log.Warn("delete alloc state", "alloc_id", id, "error", err)
			}
		}()
	}
}

// reportFailed tells the server an alloc could not even be set up.
func (c *Client) reportFailed(a *api.Allocation, err error) {
	c.report(a, api.AllocClientStatusFailed, err.Error())
}

// report queues a status for an alloc that has no runner.
func (c *Client) report(a *api.Allocation, status, desc string) {
	c.dirtyMu.Lock()
	defer c.dirtyMu.Unlock()
	c.failedAllocs = append(c.failedAllocs, &api.Allocation{ID: a.ID, NodeID: a.NodeID, JobID: a.JobID, Namespace: a.Namespace,
		TaskGroup: a.TaskGroup, ClientStatus: status, ClientDescription: desc})
	select {
	case c.dirtyCh <- struct{}{}:
	default:
	}
}

// updateLoop sends coalesced alloc status updates.
func (c *Client) updateLoop(ctx context.Context) {
	retry := serverBackoff()
	for {
		select {
		case <-c.dirtyCh:
		case <-ctx.Done():
			return
		}
		// Coalesce what else changes in the next moment.
		if !c.sleep(ctx, c.cfg.UpdateCoalesce) {
			return
		}
		select {
		case <-c.registeredCh:
		case <-ctx.Done():
			return
		}
		c.dirtyMu.Lock()
		ids := c.dirty
		failed := c.failedAllocs
		c.dirty = map[string]bool{}
		c.failedAllocs = nil
		c.dirtyMu.Unlock()
		batch := failed
		for id := range ids {
			c.mu.Lock()
			ar := c.runners[id]
			c.mu.Unlock()
			if ar == nil {
				continue
			}
			a := ar.Alloc()
			u := &api.Allocation{ID: a.ID, NodeID: node(c).ID, JobID: a.JobID, Namespace: a.Namespace,
				TaskGroup: a.TaskGroup, ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription,
				TaskStates: a.TaskStates, GPUUsage: c.gpuUsageOf(a.ID)} // alloc health is the leader's deployment watcher's verdict
			c.awayStatus(u)
			batch = append(batch, u)
		}
		if len(batch) == 0 {
			continue
		}
		sort.Slice(batch, func(i, j int) bool { return batch[i].ID < batch[j].ID })
		err := c.servers.do(ctx, func(cl *api.Client) error { return cl.UpdateAllocsFromClient(ctx, node(c).ID, batch) })
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// Keep them dirty and retry after a backoff.
			c.dirtyMu.Lock()
			for id := range ids {
				c.dirty[id] = true
			}
			c.failedAllocs = append(c.failedAllocs, failed...)
			c.dirtyMu.Unlock()
			d := retry.Next()
			c.log.Warn("alloc status update failed", "error", err, "retry_in", d)
			if !c.sleep(ctx, d) {
				return
			}
			select {
			case c.dirtyCh <- struct{}{}:
			default:
			}
			continue
		}
		retry.Reset()
	}
}

// fingerprintLoop re-fingerprints drivers and resources and re-registers
// the node only when something changed.
func (c *Client) fingerprintLoop(ctx context.Context) {
	drvT := c.cfg.Clock.After(c.cfg.DriverFingerprintInterval)
	resT := c.cfg.Clock.After(c.cfg.ResourceFingerprintInterval)
	for {
		full := false
		select {
		case <-drvT:
			drvT = c.cfg.Clock.After(c.cfg.DriverFingerprintInterval)
		case <-resT:
			resT = c.cfg.Clock.After(c.cfg.ResourceFingerprintInterval)
			full = true
		case <-ctx.Done():
			return
		}
		if c.refingerprint(ctx, full) {
			c.log.Info("node fingerprint changed, re-registering")
			c.reregister()
		}
	}
}

// refingerprint updates the node; true when it changed.
func (c *Client) refingerprint(ctx context.Context, full bool) bool {
	infos, dattrs := fingerprint.FingerprintDrivers(ctx, c.drivers, c.cfg.Clock.Now())
	var host *fingerprint.Host
	if full {
		h, err := c.fingerprintHost()
		if err != nil {
			c.log.Warn("fingerprint host", "error", err)
		} else {
			host = h
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node.Copy()
	changed := !fingerprint.SameDrivers(n.Drivers, infos)
	n.Drivers = infos
	// Driver attributes: drop the old ones, add the new.
	for k := range n.Attributes {
		if len(k) > 7 && k[:7] == "driver." {
			delete(n.Attributes, k)
		}
	}
	for k, v := range dattrs {
		n.Attributes[k] = v
	}
	if host != nil {
		for k, v := range host.Attributes {
			if old := n.Attributes[k]; old != v {
				n.Attributes[k] = v
				if k != "unique.storage.bytesfree" {
					changed = true
				}
			}
		}
		old := n.NodeResources
		if old.Cpu.CpuShares != host.Resources.Cpu.CpuShares || old.Memory.MemoryMB != host.Resources.Memory.MemoryMB ||
			diskMoved(old.Disk.DiskMB, host.Resources.Disk.DiskMB) {
			changed = true
			host.Resources.Devices = old.Devices // owned by the device source
			n.NodeResources = host.Resources
		}
	}
	c.node = n
	return changed
}

// diskMoved: free disk changes all the time; only a 10% move counts.
func diskMoved(old, cur int64) bool {
	d := old - cur
	if d < 0 {
		d = -d
	}
	return old == 0 || d*10 > old
}

// deviceLoop runs the device watcher; a change updates the node's
// devices and re-registers it.
func (c *Client) deviceLoop(ctx context.Context) {
	c.devices.Watch(ctx, func() {
		devs := c.devices.Devices()
		c.mu.Lock()
		n := c.node.Copy()
		n.NodeResources.Devices = devs
		if m, ok := c.devices.(MIGApplier); ok {
			n.GPUs = m.GPUs()
		}
		c.node = n
		c.mu.Unlock()
		c.log.Info("device fingerprint changed, re-registering")
		c.reregister()
	})
}
