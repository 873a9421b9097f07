package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/drover/drover/api"
	"github.com/drover/drover/server/raftstore"
)

// bootstrap forms a new cluster from gossip (BootstrapExpect > 1): it
// runs in one goroutine the Server owns, from SetMembership until Raft
// has state or the server stops.
type bootstrap struct {
	raft   *raftstore.Raft
	id     func() string // this server's Raft ID
	region string
	expect int // Config.BootstrapExpect
	client func(httpAddr string) *api.Client
	verify func(ctx context.Context, raftAddr string) error
	log    *slog.Logger
}

// hasRaftState reports whether this server already belongs to a cluster.
func (b *bootstrap) hasRaftState() (bool, error) {
	if b.raft.LastIndex() > 0 {
		return true, nil
	}
	f := b.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, fmt.Errorf("raft configuration: %w", err)
	}
	return len(f.Configuration().Servers) > 0, nil
}

// run waits until BootstrapExpect servers of this region are
// alive in gossip and none of them already has Raft state, then
// bootstraps Raft with all of them as voters. Every server computes the
// same configuration (sorted by ID), so whichever bootstraps, they agree.
func (b *bootstrap) run(ctx context.Context, m Membership) {
	ch := m.Changed()
	t := time.NewTicker(time.Second) // peers' HTTP may come up after gossip
	defer t.Stop()
	for {
		done, err := b.try(ctx, m)
		if err != nil {
			b.log.Warn("bootstrap not possible yet", "err", err)
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-t.C:
		}
	}
}

// errBootstrapWait says bootstrap must wait for more servers or answers.
var errBootstrapWait = errors.New("waiting")

// try bootstraps Raft if it can now; true when there is nothing left to
// do (bootstrapped, or the cluster exists).
func (b *bootstrap) try(ctx context.Context, m Membership) (bool, error) {
	has, err := b.hasRaftState()
	if err != nil {
		return false, err
	}
	if has {
		return true, nil
	}
	expect := b.expect
	var peers []Member
	for _, p := range m.Members() {
		if p.Status != MemberAlive || p.Region != b.region || p.ID == "" || p.RaftAddr == "" {
			continue
		}
		if p.BootstrapExpect != 0 && p.BootstrapExpect != expect {
			return false, fmt.Errorf("server %s expects %d servers, this one %d: %w", p.Name, p.BootstrapExpect, expect, errBootstrapWait)
		}
		if p.ID != b.id() {
			if err := b.verify(ctx, p.RaftAddr); err != nil {
				b.log.Warn("leaving a server out of the bootstrap: its raft endpoint did not prove a server certificate",
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
		if p.ID == b.id() {
			continue
		}
		n, err := peerCount(ctx, b.client, p.HTTPAddr)
		if err != nil {
			return false, fmt.Errorf("ask %s for its raft peers: %w", p.Name, err)
		}
		if n > 0 {
			b.log.Info("a server already has raft peers: not bootstrapping", "server", p.Name)
			return true, nil
		}
	}
	conf := bootstrapConfiguration(peers)
	if err := b.raft.BootstrapCluster(conf).Error(); err != nil {
		if errors.Is(err, raft.ErrCantBootstrap) {
			return true, nil
		}
		return false, fmt.Errorf("bootstrap raft: %w", err)
	}
	var addrs []string
	for _, sv := range conf.Servers {
		addrs = append(addrs, string(sv.Address))
	}
	b.log.Info("raft bootstrapped", "voters", strings.Join(addrs, ","))
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

// raftPeerVerifier proves that the Raft endpoint at addr holds a server
// certificate of the region (a TLS handshake with Raft's own dial
// settings) when Raft runs over mutual TLS (t); without it there is
// nothing to prove. A server that fails is neither bootstrapped with,
// added, nor promoted.
func raftPeerVerifier(t *raftstore.TLS) func(ctx context.Context, addr string) error {
	return func(ctx context.Context, addr string) error {
		if t == nil {
			return nil
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: t.Dial}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}
