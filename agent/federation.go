package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"github.com/drover/drover/agent/federation"
	"github.com/drover/drover/agent/gossip"
	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// tagWANAddr is the LAN tag with a server's WAN gossip address: the other
// servers of its region join it there (federation.JoinPeers).
const tagWANAddr = "wan_addr"

// lanAccept keeps the LAN pool to servers of this region: a join to (or
// from) another region's LAN port fails, so Raft clusters never mix.
func (a *Agent) lanAccept(m gossip.Member) error {
	if m.Tags[tagRole] != "server" || m.Tags[tagRegion] != a.cfg.Region {
		return fmt.Errorf("member %s is a %q of region %q, not a server of region %q (servers of other regions federate over the WAN pool: ports { serf_wan })",
			m.Name, m.Tags[tagRole], m.Tags[tagRegion], a.cfg.Region)
	}
	if m.Tags[federation.TagPool] == federation.PoolWAN {
		return fmt.Errorf("member %s is of the WAN pool, not the LAN one", m.Name)
	}
	return nil
}

// startFederation starts the server's WAN pool when ports.serf_wan is
// set, joins cfg.JoinWAN in the background, and returns the WAN address
// ("" without a WAN pool).
func (a *Agent) startFederation(s *server.Server, keys [][]byte) (string, error) {
	cfg := a.cfg
	if cfg.Ports.WAN <= 0 {
		return "", nil
	}
	keyringFile := ""
	if cfg.DataDir != "" {
		keyringFile = filepath.Join(cfg.DataDir, "server", "keyring-wan")
	}
	host := a.advertiseHost()
	ip := net.ParseIP(host)
	f, err := federation.New(federation.Config{
		Name: cfg.Name, Region: cfg.Region, Datacenter: cfg.Datacenter, Build: Version,
		ID: s.RaftID(), RaftAddr: s.RaftAddr(), HTTPAddr: cfg.AdvertisedHTTP(), TLS: cfg.TLS.HTTP,
		BindAddr: cfg.BindAddr, BindPort: cfg.Ports.WAN, AdvertiseAddr: host,
		Keys: keys, KeyringFile: keyringFile, Local: ip != nil && ip.IsLoopback(), Logger: a.base,
	})
	if err != nil {
		return "", err
	}
	a.fed = f
	f.RetryJoin(cfg.JoinWAN, 5*time.Second)
	return f.Addr(), nil
}

// joinRegionPeers has the WAN pool join the WAN addresses of this
// region's other servers, as the LAN pool learns them.
func (a *Agent) joinRegionPeers() {
	if a.fed == nil || a.gossip == nil {
		return
	}
	a.fed.JoinPeers(a.gossip.Changed(), func() []string {
		var out []string
		for _, m := range a.gossip.Members() {
			if m.Status == gossip.StatusAlive && m.Tags[tagWANAddr] != "" {
				out = append(out, m.Tags[tagWANAddr])
			}
		}
		return out
	})
}

// join answers PUT /v1/agent/join: gossip addresses joined in the WAN
// pool (wan) or this region's LAN pool.
func (a *Agent) join(ctx context.Context, addrs []string, wan bool) (int, error) {
	if !wan {
		n, err := a.gossip.Join(ctx, addrs)
		if err != nil {
			return 0, fmt.Errorf("join %v: %w", addrs, api.Errorf(api.ErrBadRequest, err.Error()))
		}
		return n, nil
	}
	if a.fed == nil {
		return 0, api.Errorf(api.ErrBadRequest, "this server has no WAN pool: set ports { serf_wan = PORT } to federate regions")
	}
	n, err := a.fed.Join(ctx, addrs)
	if err != nil {
		return 0, fmt.Errorf("join %v: %w", addrs, api.Errorf(api.ErrBadRequest, err.Error()+
			" (a server's WAN gossip address is wanted: its ports { serf_wan })"))
	}
	return n, nil
}

// regionTLS is the TLS of requests to another region's servers: this
// server's certificate, accepting only server.<region>.drover.
func (a *Agent) regionTLS(region string) (*tls.Config, error) {
	t := a.cfg.TLS
	tc := &tlsutil.Config{HTTP: t.HTTP, CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, Region: a.cfg.Region}
	return tc.RegionServer(region)
}

// wanMembers are the servers of other regions, as /v1/agent/members
// lists them after this region's (its own come from the LAN pool).
func (a *Agent) wanMembers() []*api.AgentMember {
	if a.fed == nil {
		return nil
	}
	var out []*api.AgentMember
	for _, s := range a.fed.Servers() {
		if s.Region == a.cfg.Region {
			continue
		}
		tags := map[string]string{}
		for k, v := range s.Tags {
			tags[k] = v
		}
		if _, p, err := net.SplitHostPort(s.RaftAddr); err == nil {
			tags[tagPort] = p
		}
		out = append(out, &api.AgentMember{Name: s.Name, Addr: s.Addr, Port: s.Port, Tags: tags, Status: s.Status})
	}
	return out
}

// aclReplication is the source a non-authoritative region's leader
// copies ACL policies and global tokens from: the authoritative region's
// API, reached through this server's own (which forwards by region),
// with the replication token. nil where nothing is replicated: ACLs off,
// no authoritative_region, or this region is it.
func (a *Agent) aclReplication() server.ACLSource {
	cfg := a.cfg
	auth := cfg.Server.AuthoritativeRegion
	if !cfg.ACLEnabled || auth == "" || auth == cfg.Region {
		return nil
	}
	if cfg.ACLReplicationToken == "" {
		a.log.Warn("acl replication off: authoritative_region is another region but acl { replication_token } is unset", "authoritative_region", auth)
		return nil
	}
	return &aclSource{c: a.regionAPI(auth, cfg.ACLReplicationToken), tokens: map[string]*api.ACLToken{}}
}

// regionAPI is an API client of this server's own HTTP API acting on
// region with token: requests go out with ?region=, so the API forwards
// them to a live server of that region (agent/http region.go), under TLS
// with this server's certificate. What a server asks of other regions
// (ACL replication; multi-region jobs, spill-over) goes through it, so
// there is one path between regions, with one set of errors
// (unknown_region, region_unavailable).
func (a *Agent) regionAPI(region, token string) *api.Client {
	c := a.tls.apiClient(a.cfg.AdvertisedHTTP())
	c.Region, c.Token = region, token
	return c
}

// aclReplicationWait is how long one replication read blocks at most.
const aclReplicationWait = 30 * time.Second

// aclSource reads the authoritative region's ACLs over its HTTP API
// (blocking queries on the lists, then each policy and each changed
// global token in full). It is used by one replicator loop per method.
type aclSource struct {
	c      *api.Client
	mu     sync.Mutex
	tokens map[string]*api.ACLToken // by accessor, as last read in full
}

func (s *aclSource) Policies(ctx context.Context, index uint64) ([]*api.ACLPolicy, uint64, error) {
	var stubs []*api.ACLPolicyListStub
	meta, err := s.c.Query(ctx, "/v1/acl/policies", &stubs, &api.QueryOptions{WaitIndex: index, WaitTime: aclReplicationWait})
	if err != nil {
		return nil, index, fmt.Errorf("list the authoritative region's policies: %w", err)
	}
	out := make([]*api.ACLPolicy, 0, len(stubs))
	for _, st := range stubs {
		var p api.ACLPolicy
		if _, err := s.c.Query(ctx, "/v1/acl/policy/"+url.PathEscape(st.Name), &p, nil); err != nil {
			return nil, index, fmt.Errorf("read policy %q of the authoritative region: %w", st.Name, err)
		}
		out = append(out, &p)
	}
	return out, meta.LastIndex, nil
}

func (s *aclSource) Tokens(ctx context.Context, index uint64) ([]*api.ACLToken, uint64, error) {
	var stubs []*api.ACLToken
	meta, err := s.c.Query(ctx, "/v1/acl/tokens", &stubs, &api.QueryOptions{WaitIndex: index, WaitTime: aclReplicationWait})
	if err != nil {
		return nil, index, fmt.Errorf("list the authoritative region's tokens: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	out := make([]*api.ACLToken, 0, len(stubs))
	for _, st := range stubs {
		if !st.Global {
			continue
		}
		seen[st.AccessorID] = true
		t := s.tokens[st.AccessorID]
		if t == nil || t.ModifyIndex != st.ModifyIndex {
			var full api.ACLToken
			if _, err := s.c.Query(ctx, "/v1/acl/token/"+url.PathEscape(st.AccessorID), &full, nil); err != nil {
				return nil, index, fmt.Errorf("read token %s of the authoritative region: %w", st.AccessorID, err)
			}
			t = &full
			s.tokens[st.AccessorID] = t
		}
		out = append(out, t)
	}
	for id := range s.tokens {
		if !seen[id] {
			delete(s.tokens, id)
		}
	}
	return out, meta.LastIndex, nil
}
