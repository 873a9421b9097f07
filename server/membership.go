package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/api"
)

// Member statuses reported by a Membership.
const (
	MemberAlive   = "alive"
	MemberLeaving = "leaving"
	MemberLeft    = "left"
	MemberFailed  = "failed"
)

// Member is a server as the membership layer (gossip) knows it.
type Member struct {
	Name       string
	ID         string // Raft server ID
	RaftAddr   string // host:port
	HTTPAddr   string // host:port
	Region     string
	Datacenter string
	Status     string // MemberAlive, MemberLeaving, MemberLeft, MemberFailed
	// BootstrapExpect is the member's -bootstrap-expect (0: not set).
	BootstrapExpect int
}

// Membership is what the server needs of gossip. The agent adapts
// agent/gossip to it; the server never imports agent.
type Membership interface {
	// Members returns every known server, including failed and left ones.
	Members() []Member
	// Changed returns a new subscription: a channel signalled (without
	// blocking the sender, coalescing) after any membership change.
	Changed() <-chan struct{}
}

// cluster is the server's multi-server state (membership.go, autopilot.go).
type cluster struct {
	mu sync.Mutex
	m  Membership
	// reestablish asks the leader loop to restart leader duties (after a
	// snapshot restore replaced the state).
	reestablish chan struct{}
	// pause asks the leader loop to stop leader duties until resumed
	// (around a snapshot restore).
	pause chan pauseRequest
}

func (c *cluster) init() {
	c.reestablish = make(chan struct{}, 1)
	c.pause = make(chan pauseRequest)
}

func (c *cluster) membership() Membership {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m
}

// RaftID is this server's Raft server ID (persisted in the data dir).
func (s *Server) RaftID() string { return string(s.rs.raft.ID) }

// RaftAddr is this server's Raft address as peers dial it.
func (s *Server) RaftAddr() string { return string(s.rs.raft.Addr) }

// SetMembership connects the server to gossip: with BootstrapExpect > 1
// it bootstraps Raft once enough servers are seen, and the leader's
// autopilot adds and removes Raft peers from it. Call it once, after New.
func (s *Server) SetMembership(m Membership) {
	s.cluster.mu.Lock()
	s.cluster.m = m
	s.cluster.mu.Unlock()
	if s.cfg.BootstrapExpect > 1 && !s.cfg.DevMode {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runBootstrap(m)
		}()
	}
	// A leader elected before membership was set starts autopilot now
	// (one elected later finds the membership when it starts its duties).
	if s.IsLeader() {
		select {
		case s.cluster.reestablish <- struct{}{}:
		default:
		}
	}
}

// Members returns the servers known through gossip (nil without gossip).
func (s *Server) Members() []Member {
	m := s.cluster.membership()
	if m == nil {
		return nil
	}
	return m.Members()
}

// LeaderHTTPAddr is the HTTP address of the leader, learned from gossip
// by its Raft address ("" when unknown). On the leader it is our own.
func (s *Server) LeaderHTTPAddr() string {
	if s.IsLeader() {
		return s.cfg.HTTPAddr
	}
	leader := s.Leader()
	if leader == "" {
		return ""
	}
	for _, m := range s.Members() {
		if m.RaftAddr == leader && m.Status == MemberAlive {
			return m.HTTPAddr
		}
	}
	return ""
}

// ServerHTTPAddrs lists the HTTP addresses of the alive servers of this
// region, the leader's first (what clients are told to use).
func (s *Server) ServerHTTPAddrs() []string {
	leader := s.LeaderHTTPAddr()
	var out []string
	if leader != "" {
		out = append(out, leader)
	}
	var rest []string
	for _, m := range s.Members() {
		if m.Status == MemberAlive && m.Region == s.cfg.Region && m.HTTPAddr != "" && m.HTTPAddr != leader {
			rest = append(rest, m.HTTPAddr)
		}
	}
	sort.Strings(rest)
	out = append(out, rest...)
	if len(out) == 0 && s.cfg.HTTPAddr != "" {
		out = []string{s.cfg.HTTPAddr}
	}
	return out
}

// VerifyLeader confirms, with a round of heartbeats, that this server is
// still the leader (for ?consistent reads). It fails with api.ErrNotLeader.
func (s *Server) VerifyLeader(ctx context.Context) error {
	f := s.rs.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("verify leadership: %v: %w", err, api.ErrNotLeader)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("verify leadership: %w", errors.Join(ctx.Err(), api.ErrTimeout))
	}
}

// hasRaftState reports whether this server already belongs to a cluster.
func (s *Server) hasRaftState() (bool, error) {
	if s.rs.raft.LastIndex() > 0 {
		return true, nil
	}
	f := s.rs.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, fmt.Errorf("raft configuration: %w", err)
	}
	return len(f.Configuration().Servers) > 0, nil
}

// runBootstrap waits until BootstrapExpect servers of this region are
// alive in gossip and none of them already has Raft state, then
// bootstraps Raft with all of them as voters. Every server computes the
// same configuration (sorted by ID), so whichever bootstraps, they agree.
func (s *Server) runBootstrap(m Membership) {
	ch := m.Changed()
	t := time.NewTicker(time.Second) // peers' HTTP may come up after gossip
	defer t.Stop()
	for {
		done, err := s.tryBootstrap(s.ctx, m)
		if err != nil {
			s.log.Warn("bootstrap not possible yet", "err", err)
		}
		if done {
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-ch:
		case <-t.C:
		}
	}
}

// errBootstrapWait says bootstrap must wait for more servers or answers.
var errBootstrapWait = errors.New("waiting")

func (s *Server) tryBootstrap(ctx context.Context, m Membership) (bool, error) {
	has, err := s.hasRaftState()
	if err != nil {
		return false, err
	}
	if has {
		return true, nil
	}
	expect := s.cfg.BootstrapExpect
	var peers []Member
	for _, p := range m.Members() {
		if p.Status != MemberAlive || p.Region != s.cfg.Region || p.ID == "" || p.RaftAddr == "" {
			continue
		}
		if p.BootstrapExpect != 0 && p.BootstrapExpect != expect {
			return false, fmt.Errorf("server %s expects %d servers, this one %d: %w", p.Name, p.BootstrapExpect, expect, errBootstrapWait)
		}
		if p.ID != s.RaftID() {
			if err := s.verifyRaftPeer(ctx, p.RaftAddr); err != nil {
				s.log.Warn("leaving a server out of the bootstrap: its raft endpoint did not prove a server certificate",
					"server", p.Name, "addr", p.RaftAddr, "err", err)
				continue
			}
		}
		peers = append(peers, p)
	}
	if len(peers) < expect {
		return false, nil
	}
	// Nobody may have state already: then the cluster exists and its
	// leader adds us.
	for _, p := range peers {
		if p.ID == s.RaftID() {
			continue
		}
		n, err := peerCount(ctx, s.peerClient, p.HTTPAddr)
		if err != nil {
			return false, fmt.Errorf("ask %s for its raft peers: %w", p.Name, err)
		}
		if n > 0 {
			s.log.Info("a server already has raft peers: not bootstrapping", "server", p.Name)
			return true, nil
		}
	}
	conf := bootstrapConfiguration(peers)
	if err := s.rs.raft.BootstrapCluster(conf).Error(); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			return true, nil
		}
		return false, fmt.Errorf("bootstrap raft: %w", err)
	}
	var addrs []string
	for _, sv := range conf.Servers {
		addrs = append(addrs, string(sv.Address))
	}
	s.log.Info("raft bootstrapped", "voters", strings.Join(addrs, ","))
	return true, nil
}

// bootstrapConfiguration is the deterministic voter set: members sorted
// by ID.
func bootstrapConfiguration(peers []Member) raft.Configuration {
	ps := slices.Clone(peers)
	slices.SortFunc(ps, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	var conf raft.Configuration
	for _, p := range ps {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	return conf
}

// peerCount asks a server's HTTP API how many Raft peers it has.
func peerCount(ctx context.Context, client func(string) *api.Client, httpAddr string) (int, error) {
	if httpAddr == "" {
		return 0, errors.New("no HTTP address in its tags")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	peers, err := client(httpAddr).Peers(ctx)
	if err != nil {
		return 0, err
	}
	return len(peers), nil
}

// pauseRequest stops leader duties: paused is closed once they stopped;
// closing resume restarts them (if still leader).
type pauseRequest struct {
	paused chan struct{}
	resume chan struct{}
}

// pauseLeadership runs on the leader loop.
func (s *Server) pauseLeadership(req pauseRequest) {
	s.revokeLeadership()
	close(req.paused)
	select {
	case <-req.resume:
	case <-s.ctx.Done():
		return
	}
	if s.IsLeader() {
		s.establishLeadership()
	}
}

// withLeaderDutiesPaused runs fn while no leader duty (worker, plan
// applier, heartbeat timer ...) runs, so nothing writes from old state.
func (s *Server) withLeaderDutiesPaused(ctx context.Context, fn func() error) error {
	req := pauseRequest{paused: make(chan struct{}), resume: make(chan struct{})}
	select {
	case s.cluster.pause <- req:
	case <-ctx.Done():
		return fmt.Errorf("pause leader duties: %w", ctx.Err())
	case <-s.ctx.Done():
		return fmt.Errorf("pause leader duties: %w", api.ErrUnavailable)
	}
	defer close(req.resume)
	select {
	case <-req.paused:
	case <-s.ctx.Done():
		return fmt.Errorf("pause leader duties: %w", api.ErrUnavailable)
	}
	return fn()
}

// TransferLeadership hands leadership to another voter before a graceful
// shutdown, so the cluster does not wait for an election timeout. It is a
// no-op on a follower or a single server.
func (s *Server) TransferLeadership(ctx context.Context) error {
	if !s.IsLeader() || len(s.Peers()) < 2 {
		return nil
	}
	f := s.rs.raft.LeadershipTransfer()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("leadership transfer: %w", err)
		}
		s.log.Info("leadership transferred before shutdown")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leadership transfer: %w", ctx.Err())
	}
}

// peerClient is the API client of another server's HTTP address.
func (s *Server) peerClient(addr string) *api.Client { return s.cfg.PeerClient(addr) }

// verifyRaftPeer proves that the Raft endpoint at addr holds a server
// certificate of the region (a TLS handshake with Raft's own dial
// settings) when Raft runs over mutual TLS; without it there is nothing
// to prove. A server that fails is neither bootstrapped with, added, nor
// promoted.
func (s *Server) verifyRaftPeer(ctx context.Context, addr string) error {
	if s.cfg.RaftTLS == nil {
		return nil
	}
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: s.cfg.RaftTLS.Dial}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}
