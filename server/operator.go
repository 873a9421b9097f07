package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/fsm"
)

// Operator is the component of an operator's cluster-wide actions: the
// Raft peers (list, remove), snapshots (save, restore), the scheduler
// configuration, a garbage collection now, and deleting evals while the
// broker is paused. It is safe for concurrent use; a restore stops every
// leader duty while it runs.
type Operator struct {
	serverCore
	rs *raftSystem
	// peers lists the Raft configuration with the servers' gossip names
	// (Server.RaftConfiguration).
	peers func() (*api.RaftConfiguration, error)
	// pause runs fn while no leader duty runs (Server.withLeaderDutiesPaused).
	pause func(ctx context.Context, fn func() error) error
	// blocked is the blocked tracker, which a deleted blocked eval leaves.
	blocked blockedTracker
	gc      *evalGC
	// defragQueueBudget bounds the allocs of one queue a defragmentation
	// round moves (DefragConfig.PerQueue; 0: none).
	defragQueueBudget int
}

// blockedTracker is the part of the blocked evals tracker an eval delete
// needs.
type blockedTracker interface {
	Blocked(namespace, jobID string) *api.Evaluation
	Untrack(namespace, jobID string) *api.Evaluation
}

// RaftConfiguration lists the Raft peers with their gossip names.
func (o *Operator) RaftConfiguration() (*api.RaftConfiguration, error) { return o.peers() }

// RemoveRaftPeer removes a server from the Raft configuration by ID or
// address (leader only: writes are forwarded to it).
func (o *Operator) RemoveRaftPeer(ctx context.Context, id, addr string) error {
	if !o.isLeader() {
		return errNotLeader()
	}
	if (id == "") == (addr == "") {
		return api.Errorf(api.ErrBadRequest, "give exactly one of id or address")
	}
	f := o.rs.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("raft configuration: %w", err)
	}
	var found *raft.Server
	for _, sv := range f.Configuration().Servers {
		if (id != "" && string(sv.ID) == id) || (addr != "" && string(sv.Address) == addr) {
			found = &sv
			break
		}
	}
	if found == nil {
		return fmt.Errorf("raft peer %q: %w", id+addr, api.Errorf(api.ErrNotFound, "no such raft peer"))
	}
	timeout := raftChangeTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	if err := o.rs.raft.RemoveServer(found.ID, 0, timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("remove raft peer: %v: %w", err, errNotLeader())
		}
		return fmt.Errorf("remove raft peer %s: %w", found.ID, err)
	}
	o.log.Info("raft peer removed by operator", "id", found.ID, "addr", found.Address)
	return nil
}

// SaveSnapshot writes a point-in-time copy of the whole state to w and
// returns its index. Any server can save (from its own, possibly stale,
// state); the HTTP layer sends it to the leader unless ?stale.
func (o *Operator) SaveSnapshot(ctx context.Context, w io.Writer) (uint64, error) {
	return writeSnapshot(ctx, w, o.rs.fsm)
}

// RestoreSnapshot replaces the cluster's whole state with a saved
// snapshot (leader only). The file is verified first; the restore then
// goes through Raft (followers install it too) and leader duties restart
// from the restored state.
func (o *Operator) RestoreSnapshot(ctx context.Context, r io.Reader) (uint64, error) {
	if !o.isLeader() {
		return 0, errNotLeader()
	}
	h, body, err := ReadSnapshot(r)
	if err != nil {
		return 0, err
	}
	timeout := o.timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Index: h.Index, Size: h.Size}
	// Leader duties stop first (no worker commits a plan computed from the
	// old state after the restore) and restart from the restored state.
	err = o.pause(ctx, func() error {
		return o.rs.raft.Restore(meta, bytes.NewReader(body), timeout)
	})
	if err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return 0, fmt.Errorf("restore snapshot: %v: %w", err, errNotLeader())
		}
		return 0, fmt.Errorf("restore snapshot: %w", err)
	}
	idx := o.rs.raft.LastIndex()
	o.log.Info("snapshot restored", "snapshot_index", h.Index, "raft_index", idx)
	return idx, nil
}

// SchedulerConfig returns the cluster's scheduler configuration (the
// defaults, with index 0, until an operator set one) and the index of
// the scheduler configuration table.
func (o *Operator) SchedulerConfig() (*api.SchedulerConfiguration, uint64, error) {
	st := o.state()
	c, err := st.SchedulerConfig(nil)
	if err != nil {
		return nil, 0, fmt.Errorf("read scheduler configuration: %w", err)
	}
	if c == nil {
		c = api.DefaultSchedulerConfiguration()
	}
	return c, st.Index("scheduler_config"), nil
}

// SetSchedulerConfig replaces the scheduler configuration through Raft.
// With cas it writes only if the stored ModifyIndex (0 when unset) is
// casIndex; a mismatch is not an error but Updated false. Errors wrap api
// sentinels (api.ErrBadRequest for an invalid configuration).
func (o *Operator) SetSchedulerConfig(ctx context.Context, c *api.SchedulerConfiguration, cas bool, casIndex uint64) (*api.SchedulerSetConfigurationResponse, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	idx, err := o.applySchedulerConfig(ctx, c, cas, casIndex)
	if cas && errors.Is(err, api.ErrIndexConflict) {
		return &api.SchedulerSetConfigurationResponse{Updated: false, Index: idx}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("set scheduler configuration: %w", err)
	}
	return &api.SchedulerSetConfigurationResponse{Updated: true, Index: idx}, nil
}

// SystemGC collects every finished eval (and its finished allocs) now,
// whatever their age.
func (o *Operator) SystemGC(ctx context.Context) (int, error) {
	if !o.isLeader() {
		return 0, errNotLeader()
	}
	return o.gc.collect(ctx)
}

// maxEvalDelete bounds the evals one delete removes.
const maxEvalDelete = 10000

// DeleteEvals deletes evaluations through Raft, as Nomad's eval delete:
// only while the scheduler configuration pauses the eval broker (else
// api.ErrBadRequest), every ID must exist (api.ErrNotFound), at most
// maxEvalDelete at once. A deleted eval the broker still holds is skipped
// by the worker that takes it; a deleted blocked eval stops waiting. It
// returns the Raft index.
func (o *Operator) DeleteEvals(ctx context.Context, ids []string) (uint64, error) {
	switch {
	case len(ids) == 0:
		return 0, api.Errorf(api.ErrBadRequest, "no evaluations to delete")
	case len(ids) > maxEvalDelete:
		return 0, api.Errorf(api.ErrBadRequest, fmt.Sprintf("%d evaluations: at most %d at once", len(ids), maxEvalDelete))
	}
	if !o.isLeader() {
		return 0, errNotLeader()
	}
	c, err := o.state().SchedulerConfig(nil)
	if err != nil {
		return 0, fmt.Errorf("read scheduler configuration: %w", err)
	}
	if c == nil || !c.PauseEvalBroker {
		return 0, api.Errorf(api.ErrBadRequest, "eval broker is enabled; pause it first (drover operator scheduler set-config -pause-eval-broker=true)")
	}
	evals := make([]*api.Evaluation, 0, len(ids))
	for _, id := range ids {
		e, err := o.state().EvalByID(nil, id)
		if err != nil {
			return 0, fmt.Errorf("eval %s: %w", id, err)
		}
		if e == nil {
			return 0, api.Errorf(api.ErrNotFound, fmt.Sprintf("evaluation %q not found", id))
		}
		evals = append(evals, e)
	}
	idx, err := o.apply(ctx, fsm.EvalDeleteType, &fsm.EvalDeleteRequest{Evals: ids})
	if err != nil {
		return 0, fmt.Errorf("delete evaluations: %w", err)
	}
	for _, e := range evals {
		if b := o.blocked.Blocked(e.Namespace, e.JobID); b != nil && b.ID == e.ID {
			o.blocked.Untrack(e.Namespace, e.JobID)
		}
	}
	return idx, nil
}
