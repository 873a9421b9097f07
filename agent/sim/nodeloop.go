package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"sync"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
)

// allocStub is all of an alloc a simulated node decodes: encoding/json
// skips the rest (job, resources, metrics) without building it.
type allocStub struct {
	ID               string `json:"ID"`
	Namespace        string `json:"Namespace"`
	JobID            string `json:"JobID"`
	TaskGroup        string `json:"TaskGroup"`
	DesiredStatus    string `json:"DesiredStatus"`
	ClientStatus     string `json:"ClientStatus"`
	AllocModifyIndex uint64 `json:"AllocModifyIndex"`
	// The task names and device instances: the node reports a state per
	// task, as a real client does, and its GPUs' usage.
	AllocatedResources struct {
		Tasks map[string]struct {
			Devices []struct {
				Type      string   `json:"Type"`
				DeviceIDs []string `json:"DeviceIDs"`
			} `json:"Devices"`
		} `json:"Tasks"`
	} `json:"AllocatedResources"`
	// The tasks' env, for DROVER_SIM_GPU_UTIL (simGPUUsage).
	Job struct {
		TaskGroups []struct {
			Name  string `json:"Name"`
			Tasks []struct {
				Env map[string]string `json:"Env"`
			} `json:"Tasks"`
		} `json:"TaskGroups"`
	} `json:"Job"`
}

// simGPUUsage is a running alloc's simulated GPU usage: its tasks'
// largest DROVER_SIM_GPU_UTIL (percent), else 100; idle from now when
// under api.GPUIdleUtilPercent. Nil without GPUs.
func (a *allocStub) simGPUUsage(now time.Time) *api.GPUUsage {
	gpus := 0
	for _, t := range a.AllocatedResources.Tasks {
		for _, d := range t.Devices {
			if d.Type == api.DeviceTypeGPU || d.Type == api.DeviceTypeMIG {
				gpus += len(d.DeviceIDs)
			}
		}
	}
	if gpus == 0 {
		return nil
	}
	util := -1.0
	for _, tg := range a.Job.TaskGroups {
		if tg.Name != a.TaskGroup {
			continue
		}
		for _, t := range tg.Tasks {
			if v, err := strconv.ParseFloat(t.Env[api.SimGPUUtilEnv], 64); err == nil && v >= 0 {
				util = max(util, min(v, 100))
			}
		}
	}
	if util < 0 {
		util = 100
	}
	u := &api.GPUUsage{GPUs: gpus, UtilPercent: util, SampledAt: now.UnixNano(), Simulated: true}
	if util < api.GPUIdleUtilPercent {
		u.IdleSince = now.UnixNano()
	}
	return u
}

func (a *allocStub) desiredStop() bool {
	return a.DesiredStatus == api.AllocDesiredStatusStop || a.DesiredStatus == api.AllocDesiredStatusEvict
}

func clientTerminal(status string) bool {
	return status == api.AllocClientStatusComplete || status == api.AllocClientStatusFailed || status == api.AllocClientStatusLost
}

// allocState is what a node remembers of one alloc.
type allocState struct {
	stub    allocStub
	status  string    // pending, running, complete, failed
	started time.Time // when it went running
}

// simNode is one simulated client.
type simNode struct {
	s      *Sim
	idx    int
	node   *api.Node
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	rng        *rand.Rand
	allocs     map[string]*allocState
	pending    map[string]*api.Allocation // status updates not yet sent
	ttl        time.Duration
	lastHB     time.Time
	registered bool
	regCh      chan struct{} // the watch waits for the first register
	regOnce    sync.Once
}

func newSimNode(s *Sim, idx int, n *api.Node) *simNode {
	ctx, cancel := context.WithCancel(s.ctx)
	return &simNode{s: s, idx: idx, node: n, ctx: ctx, cancel: cancel,
		rng:    rand.New(rand.NewPCG(s.cfg.Seed, uint64(idx)+1)),
		allocs: map[string]*allocState{}, pending: map[string]*api.Allocation{}, regCh: make(chan struct{})}
}

func (n *simNode) kill() { n.cancel() }

// jitter returns d less up to frac of it.
func (n *simNode) jitter(d time.Duration, frac float64) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	return d - time.Duration(n.rng.Float64()*frac*float64(d))
}

// retryBackoff is the delay of the sim's register and watch retries:
// 250 ms doubling to 15 s, on the wall clock (the sim drives real servers).
func retryBackoff() clock.Backoff {
	return clock.Backoff{Base: 250 * time.Millisecond, Max: 15 * time.Second}
}

// register registers the node, retrying up to attempts times.
func (n *simNode) register(ctx context.Context, attempts int) error {
	var err error
	retry := retryBackoff()
	for range attempts {
		var resp *api.NodeRegisterResponse
		err = n.s.do(ctx, "", func(c *api.Client) error {
			r, err := c.RegisterNode(ctx, n.node)
			resp = r
			return err
		})
		if err == nil {
			n.heartbeatOK(resp, true)
			return nil
		}
		if ctx.Err() != nil || n.ctx.Err() != nil {
			break
		}
		select {
		case <-clock.Real{}.After(retry.Next()):
		case <-ctx.Done():
		case <-n.ctx.Done():
		}
	}
	return fmt.Errorf("sim: register node %s: %w", n.node.Name, err)
}

// reregister registers again after the server forgot the node.
func (n *simNode) reregister() {
	if err := n.register(n.ctx, 1); err != nil {
		n.s.log.Warn("re-register failed", "node", n.node.Name, "error", err)
		n.s.timers.add(timer{at: time.Now().Add(n.jitter(2*time.Second, 0.5)), kind: tRegister, node: n})
	}
}

// heartbeatOK records a successful register or heartbeat and arms the
// next heartbeat at half the TTL, jittered down by up to a quarter (as
// agent/client).
func (n *simNode) heartbeatOK(resp *api.NodeRegisterResponse, register bool) {
	now := time.Now()
	ttl := resp.HeartbeatTTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	n.mu.Lock()
	if !register && n.registered && now.Sub(n.lastHB) > n.ttl {
		n.s.missed.Add(1)
	}
	wasRegistered := n.registered
	n.ttl, n.lastHB, n.registered = ttl, now, true
	n.mu.Unlock()
	if !wasRegistered {
		n.s.registered.Add(1)
	}
	n.regOnce.Do(func() { close(n.regCh) })
	wait := ttl/2 - time.Duration(n.jitter(ttl/4, 1))
	n.s.timers.add(timer{at: now.Add(wait), kind: tHeartbeat, node: n})
}

// heartbeat runs in a heartbeat worker.
func (n *simNode) heartbeat() {
	var resp *api.NodeRegisterResponse
	n.s.heartbeats.Add(1)
	err := n.s.do(n.ctx, n.node.SecretID, func(c *api.Client) error {
		r, err := c.HeartbeatNode(n.ctx, n.node.ID, &api.NodeHeartbeatRequest{})
		resp = r
		return err
	})
	if err == nil {
		n.heartbeatOK(resp, false)
		return
	}
	if n.ctx.Err() != nil {
		return
	}
	n.s.heartbeatErrors.Add(1)
	if errors.Is(err, api.ErrNodeNotFound) {
		n.reregister()
		return
	}
	n.s.log.Debug("heartbeat failed", "node", n.node.Name, "error", err)
	n.s.timers.add(timer{at: time.Now().Add(n.jitter(time.Second, 0.5)), kind: tHeartbeat, node: n})
}

// watchLoop long-polls the node's allocations: the only goroutine per
// node, parked in its read.
func (n *simNode) watchLoop() {
	defer n.s.wg.Done()
	select {
	case <-n.regCh:
	case <-n.ctx.Done():
		return
	}
	var index uint64
	retry := retryBackoff()
	path := "/v1/node/" + n.node.ID + "/client-allocs"
	fetched := map[string]uint64{} // alloc ID -> AllocModifyIndex last fetched
	var fetch struct {
		Allocs []allocStub `json:"Allocs"`
	}
	stale := true // as agent/client: any server, the leader after one behind us
	for n.ctx.Err() == nil {
		var ids api.NodeClientAllocsResponse
		var meta *api.QueryMeta
		err := n.s.do(n.ctx, n.node.SecretID, func(c *api.Client) error {
			qctx, cancel := context.WithTimeout(n.ctx, n.s.cfg.AllocWait+30*time.Second)
			defer cancel()
			var err error
			meta, err = c.Query(qctx, path, &ids, &api.QueryOptions{WaitIndex: index, WaitTime: n.s.cfg.AllocWait, AllowStale: stale})
			return err
		})
		if stale && ((err == nil && meta.LastIndex < index) || errors.Is(err, api.ErrNodeNotFound)) {
			stale = false // a lagging server's answer is not used: ask the leader
			continue
		}
		stale = true
		if err == nil {
			want := ids.Changed(fetched)
			fetch.Allocs = nil
			// One fetch: a simulated node holds far fewer than MaxAllocFetch.
			if len(want) > 0 {
				err = n.s.do(n.ctx, n.node.SecretID, func(c *api.Client) error {
					return c.Write(n.ctx, "POST", "/v1/node/"+n.node.ID+"/allocations/fetch",
						&api.NodeAllocFetchRequest{AllocIDs: want, Compact: true, MinIndex: meta.LastIndex}, &fetch, nil)
				})
				if err == nil && len(fetch.Allocs) < len(want) {
					// As agent/client: an alloc went away in between;
					// list again.
					err = fmt.Errorf("got %d of the %d allocations asked for", len(fetch.Allocs), len(want))
				}
			}
		}
		if err != nil {
			if n.ctx.Err() != nil {
				return
			}
			if errors.Is(err, api.ErrNodeNotFound) {
				n.reregister()
			}
			n.s.log.Debug("watch allocations failed", "node", n.node.Name, "error", err)
			if !retry.Wait(n.ctx, clock.Real{}) {
				return
			}
			continue
		}
		retry.Reset()
		n.s.allocReads.Add(1)
		for _, a := range fetch.Allocs {
			fetched[a.ID] = a.AllocModifyIndex
		}
		switch {
		case meta.LastIndex == 0:
			select { // a server that sets no index cannot block: do not spin
			case <-time.After(time.Second):
			case <-n.ctx.Done():
				return
			}
		case meta.LastIndex < index:
			index = 0
		default:
			index = meta.LastIndex
		}
		n.apply(fetch.Allocs, ids.Allocs)
	}
}

// apply compares the server's allocs with the node's: stubs are those
// fetched (changed), onServer all the server holds for the node.
func (n *simNode) apply(stubs []allocStub, onServer map[string]uint64) {
	now := time.Now()
	var starts []timer
	n.mu.Lock()
	for i := range stubs {
		a := &stubs[i]
		st, ok := n.allocs[a.ID]
		if !ok {
			if a.desiredStop() || clientTerminal(a.ClientStatus) {
				if a.ClientStatus == api.AllocClientStatusPending || a.ClientStatus == "" {
					// Stopped before this node ran it: report it complete, or
					// the job summary counts it starting forever.
					st := &allocState{stub: *a, status: api.AllocClientStatusComplete}
					n.allocs[a.ID] = st
					n.queueLocked(st, "stopped before it started")
				}
				continue
			}
			n.allocs[a.ID] = &allocState{stub: *a, status: api.AllocClientStatusPending}
			d := n.s.cfg.RunDelay
			if d > 0 {
				d -= time.Duration(n.rng.Float64() * 0.1 * float64(d))
			}
			starts = append(starts, timer{at: now.Add(d), kind: tStart, node: n, alloc: a.ID})
			continue
		}
		if a.AllocModifyIndex <= st.stub.AllocModifyIndex {
			continue
		}
		st.stub = *a
		switch {
		case clientTerminal(a.ClientStatus) && !clientTerminal(st.status):
			// The server decided (lost): take its word.
			n.setStatusLocked(st, a.ClientStatus)
		case a.desiredStop() && !clientTerminal(st.status):
			n.setStatusLocked(st, api.AllocClientStatusComplete)
			n.queueLocked(st, "stopped by the server")
		}
	}
	for id, st := range n.allocs {
		if _, ok := onServer[id]; !ok {
			// Garbage-collected on the server.
			if st.status == api.AllocClientStatusRunning {
				n.s.running.Add(-1)
			}
			delete(n.allocs, id)
			delete(n.pending, id)
		}
	}
	dirty := len(n.pending) > 0
	n.mu.Unlock()
	if dirty {
		n.s.markDirty(n)
	}
	if len(starts) > 0 && n.s.cfg.RunDelay == 0 {
		for _, t := range starts {
			n.start(t.alloc)
		}
		return
	}
	for _, t := range starts {
		n.s.timers.add(t)
	}
}

// setStatusLocked moves st to status, keeping the running gauge.
func (n *simNode) setStatusLocked(st *allocState, status string) {
	if st.status == api.AllocClientStatusRunning && status != api.AllocClientStatusRunning {
		n.s.running.Add(-1)
	}
	if st.status != api.AllocClientStatusRunning && status == api.AllocClientStatusRunning {
		n.s.running.Add(1)
		n.s.started.Add(1)
	}
	if !clientTerminal(st.status) {
		switch status {
		case api.AllocClientStatusComplete:
			n.s.completed.Add(1)
		case api.AllocClientStatusFailed:
			n.s.failed.Add(1)
		}
	}
	st.status = status
}

// queueLocked records st's status for the next batch, with a state per
// task as a real client reports it: running since st.started (a "Started"
// event), or dead, and failed when st failed, at its end ("Terminated")
// when it ran.
func (n *simNode) queueLocked(st *allocState, desc string) {
	a := &st.stub
	u := &api.Allocation{ID: a.ID, NodeID: n.node.ID, JobID: a.JobID, Namespace: a.Namespace,
		TaskGroup: a.TaskGroup, ClientStatus: st.status, ClientDescription: desc}
	if st.status == api.AllocClientStatusRunning {
		// A simulated alloc's utilization never changes: sent once, with
		// its start (api.GPUUsage).
		u.GPUUsage = a.simGPUUsage(time.Now())
	}
	if tasks := a.AllocatedResources.Tasks; len(tasks) > 0 {
		now := time.Now()
		u.TaskStates = make(map[string]*api.TaskState, len(tasks))
		for name := range tasks {
			ts := &api.TaskState{State: api.TaskStateDead, Failed: st.status == api.AllocClientStatusFailed}
			if !st.started.IsZero() {
				ts.StartedAt = st.started
				ts.Events = []*api.TaskEvent{{Type: api.TaskStarted, Time: st.started.UnixNano(), DisplayMessage: "Task started by client"}}
			}
			switch {
			case st.status == api.AllocClientStatusRunning:
				ts.State = api.TaskStateRunning
			case !st.started.IsZero():
				ts.FinishedAt = now
				ts.Events = append(ts.Events, &api.TaskEvent{Type: api.TaskTerminated, Time: now.UnixNano(), DisplayMessage: desc})
			}
			u.TaskStates[name] = ts
		}
	}
	n.pending[a.ID] = u
}

// start ends an alloc's run delay.
func (n *simNode) start(id string) {
	cfg := &n.s.cfg
	n.mu.Lock()
	st := n.allocs[id]
	if st == nil || st.status != api.AllocClientStatusPending {
		n.mu.Unlock()
		return
	}
	var end time.Duration
	if cfg.CompleteAfter == 0 && cfg.FailRate > 0 && n.rng.Float64() < cfg.FailRate {
		n.setStatusLocked(st, api.AllocClientStatusFailed)
		n.queueLocked(st, "simulated start failure")
	} else {
		n.setStatusLocked(st, api.AllocClientStatusRunning)
		st.started = time.Now()
		n.queueLocked(st, "simulated: running")
		end = cfg.CompleteAfter
	}
	n.mu.Unlock()
	n.s.markDirty(n)
	if end > 0 {
		n.s.timers.add(timer{at: time.Now().Add(end), kind: tEnd, node: n, alloc: id})
	}
}

// end finishes a running alloc: failed with FailRate, else complete.
func (n *simNode) end(id string) {
	n.mu.Lock()
	st := n.allocs[id]
	if st == nil || st.status != api.AllocClientStatusRunning {
		n.mu.Unlock()
		return
	}
	if n.rng.Float64() < n.s.cfg.FailRate {
		n.setStatusLocked(st, api.AllocClientStatusFailed)
		n.queueLocked(st, "simulated failure")
	} else {
		n.setStatusLocked(st, api.AllocClientStatusComplete)
		n.queueLocked(st, "simulated: complete")
	}
	n.mu.Unlock()
	n.s.markDirty(n)
}

func (s *Sim) markDirty(n *simNode) {
	s.dirtyMu.Lock()
	s.dirty[n] = struct{}{}
	s.dirtyMu.Unlock()
}

// flushLoop sends each dirty node's updates in one batch per
// UpdateCoalesce.
func (s *Sim) flushLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.UpdateCoalesce)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-s.ctx.Done():
			return
		}
		s.dirtyMu.Lock()
		dirty := s.dirty
		s.dirty = make(map[*simNode]struct{}, len(dirty))
		s.dirtyMu.Unlock()
		for n := range dirty {
			if n.ctx.Err() == nil && !s.submit(n.flush) {
				return
			}
		}
	}
}

// flush sends the node's pending updates in one request; on a retryable
// failure they stay pending (unless newer ones replaced them).
func (n *simNode) flush() {
	n.mu.Lock()
	batch := make([]*api.Allocation, 0, len(n.pending))
	for _, u := range n.pending {
		batch = append(batch, u)
	}
	clear(n.pending)
	n.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	sort.Slice(batch, func(i, j int) bool { return batch[i].ID < batch[j].ID })
	n.s.updateBatches.Add(1)
	err := n.s.do(n.ctx, n.node.SecretID, func(c *api.Client) error {
		return c.UpdateAllocsFromClient(n.ctx, n.node.ID, batch)
	})
	if err == nil || n.ctx.Err() != nil {
		return
	}
	n.s.updateErrors.Add(1)
	if !retryable(err) {
		n.s.log.Warn("alloc updates refused", "node", n.node.Name, "allocs", len(batch), "error", err)
		return
	}
	n.s.log.Debug("alloc updates failed, retrying", "node", n.node.Name, "error", err)
	n.mu.Lock()
	for _, u := range batch {
		if _, newer := n.pending[u.ID]; !newer {
			if _, alive := n.allocs[u.ID]; alive {
				n.pending[u.ID] = u
			}
		}
	}
	n.mu.Unlock()
	n.s.markDirty(n)
}
