package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/api"
)

// Autopilot defaults (Config fields of the same names override them).
const (
	defaultDeadServerGrace     = 2 * time.Minute
	defaultServerStabilization = 3 * time.Second
	defaultMaxTrailingLogs     = 500
	autopilotInterval          = time.Second
	raftChangeTimeout          = 5 * time.Second
)

func (s *Server) deadServerGrace() time.Duration {
	if s.cfg.DeadServerGrace > 0 {
		return s.cfg.DeadServerGrace
	}
	return defaultDeadServerGrace
}

func (s *Server) serverStabilization() time.Duration {
	if s.cfg.ServerStabilization > 0 {
		return s.cfg.ServerStabilization
	}
	return defaultServerStabilization
}

// runAutopilot is a leader duty: it reconciles the Raft configuration
// with gossip membership on every membership change and every second.
func (s *Server) runAutopilot(ctx context.Context) {
	m := s.cluster.membership()
	if m == nil {
		return // no gossip (dev mode): the configuration never changes
	}
	ch := m.Changed()
	t := time.NewTicker(autopilotInterval)
	defer t.Stop()
	s.cluster.mu.Lock()
	clear(s.cluster.nonvoterSince)
	clear(s.cluster.failedSince)
	s.cluster.mu.Unlock()
	for {
		if err := s.reconcilePeers(ctx, m, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("autopilot reconcile", "err", err)
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
func (s *Server) reconcilePeers(ctx context.Context, m Membership, now time.Time) error {
	f := s.rs.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("raft configuration: %w", err)
	}
	conf := f.Configuration()
	self := s.rs.raft.ID
	byID := map[raft.ServerID]Member{}
	for _, mb := range m.Members() {
		if mb.Region == s.cfg.Region && mb.ID != "" {
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
	c := &s.cluster

	// Add new servers as non-voters.
	for id, mb := range byID {
		if mb.Status != MemberAlive || mb.RaftAddr == "" {
			continue
		}
		sv, ok := inConf[id]
		if ok && string(sv.Address) == mb.RaftAddr {
			continue
		}
		if ok && sv.Suffrage == raft.Voter {
			// Same ID, new address: re-add as a voter at the new address.
			if err := s.rs.raft.AddVoter(id, raft.ServerAddress(mb.RaftAddr), 0, raftChangeTimeout).Error(); err != nil {
				errs = append(errs, fmt.Errorf("update address of %s: %w", mb.Name, err))
			}
			continue
		}
		s.log.Info("adding server as non-voter", "server", mb.Name, "id", id, "addr", mb.RaftAddr)
		if err := s.rs.raft.AddNonvoter(id, raft.ServerAddress(mb.RaftAddr), 0, raftChangeTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("add non-voter %s: %w", mb.Name, err))
			continue
		}
		c.mu.Lock()
		c.nonvoterSince[id] = now
		c.mu.Unlock()
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
		c.mu.Lock()
		since, tracked := c.nonvoterSince[id]
		if !tracked {
			c.nonvoterSince[id] = now
			since = now
		}
		c.mu.Unlock()
		if now.Sub(since) < s.serverStabilization() {
			continue
		}
		if err := s.caughtUp(ctx, mb); err != nil {
			s.log.Debug("non-voter not caught up yet", "server", mb.Name, "err", err)
			continue
		}
		s.log.Info("promoting server to voter", "server", mb.Name, "id", id)
		if err := s.rs.raft.AddVoter(id, sv.Address, 0, raftChangeTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("promote %s: %w", mb.Name, err))
			continue
		}
		c.mu.Lock()
		delete(c.nonvoterSince, id)
		c.mu.Unlock()
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
			c.mu.Lock()
			delete(c.failedSince, id)
			c.mu.Unlock()
			continue
		case MemberFailed:
			c.mu.Lock()
			since, ok := c.failedSince[id]
			if !ok {
				c.failedSince[id] = now
				since = now
			}
			c.mu.Unlock()
			if now.Sub(since) < s.deadServerGrace() {
				continue
			}
		}
		// Never drop below a majority of the voters we started with.
		if sv.Suffrage == raft.Voter && (removed+1) > (voters-1)/2 {
			s.log.Warn("not removing dead server: quorum would be at risk", "server", name, "voters", voters)
			continue
		}
		s.log.Info("removing server from raft", "server", name, "id", id, "status", status)
		if err := s.rs.raft.RemoveServer(id, 0, raftChangeTimeout).Error(); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", name, err))
			continue
		}
		if sv.Suffrage == raft.Voter {
			removed++
		}
		c.mu.Lock()
		delete(c.failedSince, id)
		delete(c.nonvoterSince, id)
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// caughtUp asks a server for its Raft log index and compares it to ours.
func (s *Server) caughtUp(ctx context.Context, mb Member) error {
	if mb.HTTPAddr == "" {
		return errors.New("no HTTP address")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	self, err := api.NewClient(mb.HTTPAddr).AgentSelf(ctx)
	if err != nil {
		return err
	}
	theirs, err := strconv.ParseUint(self.Stats["raft"]["last_log_index"], 10, 64)
	if err != nil {
		return fmt.Errorf("its last_log_index: %w", err)
	}
	ours := s.rs.raft.LastIndex()
	max := s.cfg.MaxTrailingLogs
	if max <= 0 {
		max = defaultMaxTrailingLogs
	}
	if ours > theirs && ours-theirs > uint64(max) {
		return fmt.Errorf("%d entries behind", ours-theirs)
	}
	return nil
}

// RaftConfiguration lists the Raft peers with their gossip names.
func (s *Server) RaftConfiguration() (*api.RaftConfiguration, error) {
	f := s.rs.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	names := map[string]string{}
	for _, m := range s.Members() {
		names[m.ID] = m.Name
	}
	if _, ok := names[s.RaftID()]; !ok {
		names[s.RaftID()] = s.cfg.NodeName + "." + s.cfg.Region
	}
	leader := s.Leader()
	out := &api.RaftConfiguration{Index: f.Index(), Servers: []*api.RaftServer{}}
	for _, sv := range f.Configuration().Servers {
		out.Servers = append(out.Servers, &api.RaftServer{
			ID: string(sv.ID), Node: names[string(sv.ID)], Address: string(sv.Address),
			Leader: string(sv.Address) == leader, Voter: sv.Suffrage == raft.Voter, RaftProtocol: "3",
		})
	}
	return out, nil
}

// RemoveRaftPeer removes a server from the Raft configuration by ID or
// address (leader only: writes are forwarded to it).
func (s *Server) RemoveRaftPeer(ctx context.Context, id, addr string) error {
	if !s.IsLeader() {
		return errNotLeader()
	}
	if (id == "") == (addr == "") {
		return api.Errorf(api.ErrBadRequest, "give exactly one of id or address")
	}
	f := s.rs.raft.GetConfiguration()
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
	if err := s.rs.raft.RemoveServer(found.ID, 0, timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return fmt.Errorf("remove raft peer: %v: %w", err, errNotLeader())
		}
		return fmt.Errorf("remove raft peer %s: %w", found.ID, err)
	}
	s.log.Info("raft peer removed by operator", "id", found.ID, "addr", found.Address)
	return nil
}
