package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/raftstore"
)

// Autopilot defaults (Config fields of the same names override them).
const (
	defaultDeadServerGrace     = 2 * time.Minute
	defaultServerStabilization = 3 * time.Second
	defaultMaxTrailingLogs     = 500
	autopilotInterval          = time.Second
	raftChangeTimeout          = 5 * time.Second
)

// autopilot is a leader duty: it reconciles the Raft configuration with
// gossip membership on every membership change and every second. It owns
// its bookkeeping (since when a server is a non-voter, since when it
// failed) for one leadership term.
type autopilot struct {
	raft          *raftstore.Raft
	members       Membership
	region        string
	grace         time.Duration // DeadServerGrace
	stabilization time.Duration // ServerStabilization
	maxTrailing   uint64        // MaxTrailingLogs
	client        func(addr string) *api.Client
	// verify proves a server's Raft endpoint before it is added or
	// promoted (raftPeerVerifier).
	verify func(ctx context.Context, raftAddr string) error
	log    *slog.Logger

	nonvoterSince map[raft.ServerID]time.Time
	failedSince   map[raft.ServerID]time.Time
}

// newAutopilot returns the duty over gossip membership m (a server
// without gossip, in dev mode, runs none: its configuration never changes).
func newAutopilot(cfg *Config, r *raftstore.Raft, m Membership, log *slog.Logger) *autopilot {
	a := &autopilot{raft: r, members: m, region: cfg.Region,
		grace: defaultDeadServerGrace, stabilization: defaultServerStabilization, maxTrailing: defaultMaxTrailingLogs,
		log: log.With("component", "autopilot"), client: cfg.PeerClient, verify: raftPeerVerifier(cfg.RaftTLS),
		nonvoterSince: map[raft.ServerID]time.Time{}, failedSince: map[raft.ServerID]time.Time{}}
	if cfg.DeadServerGrace > 0 {
		a.grace = cfg.DeadServerGrace
	}
	if cfg.ServerStabilization > 0 {
		a.stabilization = cfg.ServerStabilization
	}
	if cfg.MaxTrailingLogs > 0 {
		a.maxTrailing = uint64(cfg.MaxTrailingLogs)
	}
	return a
}

// Run reconciles until ctx ends.
func (a *autopilot) Run(ctx context.Context) {
	m := a.members
	ch := m.Changed()
	t := time.NewTicker(autopilotInterval)
	defer t.Stop()
	for {
		if err := a.reconcilePeers(ctx, m, time.Now()); err != nil && ctx.Err() == nil {
			a.log.Warn("autopilot reconcile", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-t.C:
		}
	}
}

// reconcilePeers makes one pass:
//   - an alive server of this region missing from the configuration (or
//     with a new address) is added as a non-voter;
//   - a non-voter that has been healthy (its log within MaxTrailingLogs of
//     ours) for ServerStabilization is promoted to voter;
//   - a server that left gossip is removed; a failed (or unknown) one is
//     removed after DeadServerGrace, as long as quorum is not at stake.
func (a *autopilot) reconcilePeers(ctx context.Context, m Membership, now time.Time) error {
	f := a.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("raft configuration: %w", err)
	}
	conf := f.Configuration()
	self := a.raft.ID
	byID := map[raft.ServerID]Member{}
	for _, mb := range m.Members() {
		if mb.Region == a.region && mb.ID != "" {
			byID[raft.ServerID(mb.ID)] = mb
		}
	}
	inConf := map[raft.ServerID]raft.Server{}
	voters := 0
	for _, sv := range conf.Servers {
		inConf[sv.ID] = sv
		if sv.Suffrage == raft.Voter {
			voters++
		}
	}
	var errs []error

	// Add new servers as non-voters.
	for id, mb := range byID {
		if mb.Status != MemberAlive || mb.RaftAddr == "" {
			continue
		}
		sv, ok := inConf[id]
		if ok && string(sv.Address) == mb.RaftAddr {
			continue
		}
		if err := a.verify(ctx, mb.RaftAddr); err != nil {
			a.log.Warn("not adding server: its raft endpoint did not prove a server certificate", "server", mb.Name, "addr", mb.RaftAddr, "err", err)
			continue
		}
		if ok && sv.Suffrage == raft.Voter {
			// Same ID, new address: re-add as a voter at the new address.
			if err := a.raft.AddVoter(id, raft.ServerAddress(mb.RaftAddr), 0, raftChangeTimeout).Error(); err != nil {
				errs = append(errs, fmt.Errorf("update address of %s: %w", mb.Name, err))
			}
			continue
		}
		a.log.Info("adding server as non-voter", "server", mb.Name, "id", id, "addr", mb.RaftAddr)
		if err := a.raft.AddNonvoter(id, raft.ServerAddress(mb.RaftAddr), 0, raftChangeTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("add non-voter %s: %w", mb.Name, err))
			continue
		}
		a.nonvoterSince[id] = now
	}

	// Promote stable non-voters.
	for id, sv := range inConf {
		if sv.Suffrage != raft.Nonvoter {
			continue
		}
		mb, ok := byID[id]
		if !ok || mb.Status != MemberAlive {
			continue
		}
		since, tracked := a.nonvoterSince[id]
		if !tracked {
			a.nonvoterSince[id] = now
			since = now
		}
		if now.Sub(since) < a.stabilization {
			continue
		}
		if err := a.verify(ctx, string(sv.Address)); err != nil {
			a.log.Warn("not promoting server: its raft endpoint did not prove a server certificate", "server", mb.Name, "err", err)
			continue
		}
		if err := a.caughtUp(ctx, mb); err != nil {
			a.log.Debug("non-voter not caught up yet", "server", mb.Name, "err", err)
			continue
		}
		a.log.Info("promoting server to voter", "server", mb.Name, "id", id)
		if err := a.raft.AddVoter(id, sv.Address, 0, raftChangeTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("promote %s: %w", mb.Name, err))
			continue
		}
		delete(a.nonvoterSince, id)
		voters++
	}

	// Remove servers that left; failed ones after the grace period.
	removed := 0
	for id, sv := range inConf {
		if id == self {
			continue
		}
		mb, known := byID[id]
		status := MemberFailed
		if known {
			status = mb.Status
		}
		name := string(id)
		if known {
			name = mb.Name
		}
		switch status {
		case MemberAlive, MemberLeaving:
			delete(a.failedSince, id)
			continue
		case MemberFailed:
			since, ok := a.failedSince[id]
			if !ok {
				a.failedSince[id] = now
				since = now
			}
			if now.Sub(since) < a.grace {
				continue
			}
		}
		// Never drop below a majority of the voters we started with.
		if sv.Suffrage == raft.Voter && (removed+1) > (voters-1)/2 {
			a.log.Warn("not removing dead server: quorum would be at risk", "server", name, "voters", voters)
			continue
		}
		a.log.Info("removing server from raft", "server", name, "id", id, "status", status)
		if err := a.raft.RemoveServer(id, 0, raftChangeTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
			continue
		}
		if sv.Suffrage == raft.Voter {
			removed++
		}
		delete(a.failedSince, id)
		delete(a.nonvoterSince, id)
	}
	return errors.Join(errs...)
}

// caughtUp asks a server for its Raft log index and compares it to ours.
func (a *autopilot) caughtUp(ctx context.Context, mb Member) error {
	if mb.HTTPAddr == "" {
		return errors.New("no HTTP address")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	self, err := a.client(mb.HTTPAddr).AgentSelf(ctx)
	if err != nil {
		return err
	}
	theirs, err := strconv.ParseUint(self.Stats["raft"]["last_log_index"], 10, 64)
	if err != nil {
		return fmt.Errorf("its last_log_index: %w", err)
	}
	ours := a.raft.LastIndex()
	if ours > theirs && ours-theirs > a.maxTrailing {
		return fmt.Errorf("%d entries behind", ours-theirs)
	}
	return nil
}
