package server

import (
	"sort"
	"sync"
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

// SetMembership connects the server to gossip: with BootstrapExpect > 1
// it bootstraps Raft once enough servers are seen, and the leader's
// autopilot adds and removes Raft peers from it. Call it once, after New.
func (s *Server) SetMembership(m Membership) {
	s.cluster.mu.Lock()
	s.cluster.m = m
	s.cluster.mu.Unlock()
	if s.cfg.BootstrapExpect > 1 && !s.cfg.DevMode {
		b := &bootstrap{raft: s.rs.raft, id: s.RaftID, region: s.cfg.Region, expect: s.cfg.BootstrapExpect,
			client: s.cfg.PeerClient, verify: raftPeerVerifier(s.cfg.RaftTLS), log: s.core.log}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			b.run(s.ctx, m)
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
