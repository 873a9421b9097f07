package http

import (
	"context"
	"net"
	"sync"
	"time"
)

// drover's own traffic is HTTP too: followers forward requests (blocking
// queries included, one connection each) to the leader, and servers
// forward /v1/client/... requests to client nodes. Counted per client IP,
// a follower serving a few hundred clients would be refused by its
// leader. So the per-client limit does not count connections from the
// Raft peers of this server, nor from this agent's configured servers
// (Config.Servers); Nomad carries this traffic over RPC, outside its HTTP
// limit.

// The set of peer IPs is reused for peerRefresh, and fetched again on a
// miss at once when the Raft configuration changed since (a server that
// just joined, and the cluster a joining server just learned), else at
// most every peerMissRefresh.
const (
	peerRefresh     = 5 * time.Second
	peerMissRefresh = 500 * time.Millisecond
)

type peerIPs struct {
	s *HTTPServer

	mu      sync.Mutex
	ips     map[string]bool
	fetched time.Time
	index   uint64          // the Raft configuration's index when fetched
	servers map[string]bool // Config.Servers, resolved once at Start
}

// resolveServers looks up Config.Servers' hosts (a short, best-effort
// lookup; an IP literal needs none).
func (p *peerIPs) resolveServers(ctx context.Context) {
	out := map[string]bool{}
	for _, addr := range p.s.cfg.Servers {
		host := addr
		if h, _, err := net.SplitHostPort(hostOf(addr)); err == nil {
			host = h
		}
		if ip := net.ParseIP(host); ip != nil {
			out[ip.String()] = true
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ips, err := net.DefaultResolver.LookupIPAddr(lctx, host)
		cancel()
		if err != nil {
			p.s.log.Warn("http: cannot resolve server for the connection limit", "server", addr, "err", err)
			continue
		}
		for _, ip := range ips {
			out[ip.IP.String()] = true
		}
	}
	p.mu.Lock()
	p.servers = out
	p.mu.Unlock()
}

// hostOf strips a scheme ("http://h:p" → "h:p").
func hostOf(addr string) string {
	for i := 0; i+2 < len(addr); i++ {
		if addr[i:i+3] == "://" {
			return addr[i+3:]
		}
	}
	return addr
}

// exempt reports whether ip is another Raft peer's or a configured
// server's. (On a cluster of servers on one host, loopback is then not
// counted.)
func (p *peerIPs) exempt(ip string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.servers[ip] {
		return true
	}
	o := p.s.role.Raft
	if o == nil {
		return false
	}
	age := time.Since(p.fetched)
	stale := p.ips == nil || age > peerRefresh
	if !stale && !p.ips[ip] {
		stale = age > peerMissRefresh || p.configChanged()
	}
	if stale {
		p.fetched = time.Now()
		self := o.RaftID()
		if rc, err := o.RaftConfiguration(); err == nil {
			p.index = rc.Index
			p.ips = map[string]bool{}
			for _, srv := range rc.Servers {
				if srv.ID == self {
					continue // this server's own address: local processes
				}
				if h, _, err := net.SplitHostPort(srv.Address); err == nil {
					if a := net.ParseIP(h); a != nil {
						p.ips[a.String()] = true
					}
				}
			}
		}
	}
	return p.ips[ip]
}

// configChanged reports whether the Raft configuration moved past the one
// the set was built from (a cheap read).
func (p *peerIPs) configChanged() bool {
	return p.s.role.Raft.RaftConfigurationIndex() != p.index
}
