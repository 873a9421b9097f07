package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/drover/drover/agent/gossip"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// Gossip tag names (as Nomad's serf tags where one exists).
const (
	tagRole            = "role"
	tagRegion          = "region"
	tagDC              = "dc"
	tagBuild           = "build"
	tagPort            = "port"
	tagID              = "id"
	tagRaftAddr        = "raft_addr"
	tagHTTPAddr        = "http_addr"
	tagBootstrapExpect = "bootstrap_expect"
)

// advertiseHost is the host other agents dial for this agent's Raft and
// gossip ports: the bind address, or 127.0.0.1 when bound to all
// addresses (as AdvertisedHTTP).
func (a *Agent) advertiseHost() string {
	h := a.cfg.BindAddr
	if h == "" || h == "0.0.0.0" || h == "::" {
		return "127.0.0.1"
	}
	return h
}

// raftAdvertise is the Raft address peers dial ("" in dev mode, where
// Raft may run in memory).
func (a *Agent) raftAdvertise() string {
	if a.cfg.DevMode {
		return ""
	}
	return net.JoinHostPort(a.advertiseHost(), strconv.Itoa(a.cfg.Ports.Raft))
}

// gossipEnabled: every server outside dev mode gossips; a dev server only
// when told to join someone.
func (a *Agent) gossipEnabled() bool {
	return a.cfg.Server.Enabled && (!a.cfg.DevMode || len(a.cfg.Join) > 0)
}

// startGossip joins the server to the gossip pool with its tags, connects
// the server to it (bootstrap, autopilot, leader lookup) and starts
// joining cfg.Join in the background.
func (a *Agent) startGossip(s *server.Server) error {
	cfg := a.cfg
	var keys [][]byte
	if cfg.Server.Encrypt != "" {
		k, err := gossip.DecodeKey(cfg.Server.Encrypt)
		if err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
		keys = [][]byte{k}
	}
	keyringFile := ""
	if cfg.DataDir != "" {
		keyringFile = filepath.Join(cfg.DataDir, "server", "keyring")
	}
	wanAddr, err := a.startFederation(s, keys)
	if err != nil {
		return fmt.Errorf("federation: %w", err)
	}
	host := a.advertiseHost()
	ip := net.ParseIP(host)
	g, err := gossip.New(gossip.Config{
		Name: cfg.Name + "." + cfg.Region, BindAddr: cfg.BindAddr, BindPort: cfg.Ports.Gossip,
		AdvertiseAddr: host, AdvertisePort: cfg.Ports.Gossip,
		Tags: map[string]string{
			tagRole: "server", tagRegion: cfg.Region, tagDC: cfg.Datacenter, tagBuild: Version,
			tagPort: strconv.Itoa(cfg.Ports.Raft), tagID: s.RaftID(), tagRaftAddr: s.RaftAddr(),
			tagHTTPAddr: cfg.AdvertisedHTTP(), tagBootstrapExpect: strconv.Itoa(cfg.Server.BootstrapExpect),
			tagWANAddr: wanAddr,
		},
		Keys: keys, KeyringFile: keyringFile, Local: ip != nil && ip.IsLoopback(), Logger: a.base,
		Accept: a.lanAccept,
	})
	if err != nil {
		return err
	}
	a.gossip = g
	if cfg.Ports.Gossip == 0 {
		// memberlist picked a free port (TCP and UDP alike): report it.
		_, p, _ := net.SplitHostPort(g.Addr())
		cfg.Ports.Gossip, _ = strconv.Atoi(p)
	}
	s.SetMembership(gossipMembership{g})
	g.RetryJoin(cfg.Join, 2*time.Second, nil)
	a.joinRegionPeers()
	return nil
}

// gossipMembership adapts gossip to what the server needs.
type gossipMembership struct{ g *gossip.Gossip }

func (m gossipMembership) Changed() <-chan struct{} { return m.g.Changed() }

func (m gossipMembership) Members() []server.Member {
	var out []server.Member
	for _, mb := range m.g.Members() {
		if mb.Tags[tagRole] != "server" {
			continue
		}
		be, _ := strconv.Atoi(mb.Tags[tagBootstrapExpect])
		out = append(out, server.Member{
			Name: mb.Name, ID: mb.Tags[tagID], RaftAddr: mb.Tags[tagRaftAddr], HTTPAddr: mb.Tags[tagHTTPAddr],
			Region: mb.Tags[tagRegion], Datacenter: mb.Tags[tagDC], Status: mb.Status, BootstrapExpect: be,
		})
	}
	return out
}

// gossipMembers answers /v1/agent/members from the gossip pool.
func (a *Agent) gossipMembers() *api.ServerMembers {
	c := a.cfg
	out := &api.ServerMembers{ServerName: c.Name, ServerRegion: c.Region, ServerDC: c.Datacenter, Members: []*api.AgentMember{}}
	for _, m := range a.gossip.Members() {
		out.Members = append(out.Members, &api.AgentMember{
			Name: m.Name, Addr: m.Addr, Port: m.Port, Tags: m.Tags, Status: m.Status,
			ProtocolMin: m.ProtocolMin, ProtocolMax: m.ProtocolMax, ProtocolCur: m.ProtocolCur,
			DelegateMin: m.DelegateMin, DelegateMax: m.DelegateMax, DelegateCur: m.DelegateCur,
		})
	}
	out.Members = append(out.Members, a.wanMembers()...) // the other regions' servers
	return out
}

// KeyringOperation runs a gossip keyring operation on every server
// (install, use, remove a base64 key; list).
func (a *Agent) KeyringOperation(ctx context.Context, op, key string) (*api.KeyringResponse, error) {
	if a.gossip == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	var k []byte
	if op != gossip.KeyList {
		var err error
		if k, err = gossip.DecodeKey(key); err != nil {
			return nil, fmt.Errorf("%w", api.Errorf(api.ErrBadRequest, err.Error()))
		}
	}
	resp, err := a.gossip.KeyOperation(ctx, op, k)
	if resp == nil {
		if err != nil {
			return nil, fmt.Errorf("keyring %s: %w", op, api.Errorf(api.ErrBadRequest, err.Error()))
		}
		return nil, nil
	}
	out := &api.KeyringResponse{
		Messages: resp.Messages, Keys: resp.Keys, PrimaryKeys: resp.PrimaryKeys,
		NumNodes: resp.NumNodes, NumResp: resp.NumResp, NumErr: resp.NumErr,
	}
	if err != nil {
		return out, fmt.Errorf("keyring %s: %w", op, api.Errorf(api.ErrInternal, err.Error()))
	}
	return out, nil
}

// ForceLeave marks a failed server as left on every server: the leader
// removes it from Raft without waiting for the dead-server grace.
func (a *Agent) ForceLeave(ctx context.Context, node string) error {
	if a.gossip == nil {
		return api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	err := a.gossip.ForceLeave(ctx, node)
	if errors.Is(err, gossip.ErrNotFailed) {
		// Accept the bare name too, as `server members` shows name.region.
		if e2 := a.gossip.ForceLeave(ctx, node+"."+a.cfg.Region); e2 == nil {
			return nil
		}
		return fmt.Errorf("force-leave %s: %w", node, api.Errorf(api.ErrBadRequest, err.Error()))
	}
	if err != nil {
		return fmt.Errorf("force-leave %s: %w", node, api.Errorf(api.ErrInternal, err.Error()))
	}
	return nil
}
