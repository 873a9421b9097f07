package http

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"time"

	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
)

// The caller of a request, as the first server it reached saw it. A
// follower forwards writes to the leader, which then sees the follower's
// connection: the follower says who its caller was in headerPeer, and the
// leader believes that header only from another server (a server
// certificate of the region under TLS; a Raft peer's or configured
// server's address without), never from anyone else.

// headerPeer carries the original caller: "ip=<addr>" and, when its
// certificate holds an agent role of the region, ";certified".
const headerPeer = "X-Drover-Peer"

// peer is a request's original caller.
type peer struct {
	ip        string
	certified bool // its verified certificate holds client.<region> or server.<region>
}

func (p peer) String() string {
	v := "ip=" + p.ip
	if p.certified {
		v += ";certified"
	}
	return v
}

func parsePeer(v string) (peer, bool) {
	var p peer
	for _, f := range strings.Split(v, ";") {
		switch k, val, _ := strings.Cut(strings.TrimSpace(f), "="); k {
		case "ip":
			if net.ParseIP(val) == nil {
				return p, false
			}
			p.ip = val
		case "certified":
			p.certified = true
		}
	}
	return p, p.ip != ""
}

// peerOf is r's original caller: the connection's, or what a trusted
// forwarding server said.
func (s *HTTPServer) peerOf(r *nethttp.Request) peer {
	if v := r.Header.Get(headerPeer); v != "" && s.fromServer(r) {
		if p, ok := parsePeer(v); ok {
			return p
		}
	}
	return peer{ip: requestIP(r), certified: s.certHolds(r, tlsutil.RoleClient, tlsutil.RoleServer)}
}

// fromServer reports whether r's connection comes from another server of
// the region: its verified certificate says so under TLS; without TLS,
// its address is a Raft peer's or a configured server's.
func (s *HTTPServer) fromServer(r *nethttp.Request) bool {
	if s.cfg.TLS != nil {
		return s.certHolds(r, tlsutil.RoleServer)
	}
	return s.peers.exempt(requestIP(r))
}

// certHolds reports whether the connection's verified certificate holds
// one of roles' names in this agent's region.
func (s *HTTPServer) certHolds(r *nethttp.Request, roles ...string) bool {
	return certHoldsIn(r, s.regionOf(), roles...)
}

// requestIP is the IP of r's connection.
func requestIP(r *nethttp.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// strictNodes reports whether nodes must prove who they are: ACLs are on
// or the API speaks TLS.
func (s *HTTPServer) strictNodes() bool {
	return s.cfg.TLS != nil || (s.cfg.ACL != nil && s.cfg.ACL.ACLEnabled())
}

// checkNodeAddr validates a registering node's HTTP address, which
// servers forward users' /v1/client/ requests to: a host:port (a scheme,
// if given, must be this cluster's: https under TLS) whose host, where
// nodes must prove who they are, is the address the node registers from
// (an IP, or a name resolving to it).
func (s *HTTPServer) checkNodeAddr(ctx context.Context, r *nethttp.Request, n *api.Node) error {
	if n.HTTPAddr == "" {
		return nil
	}
	bad := func(why string) error {
		return api.Errorf(api.ErrBadRequest, fmt.Sprintf("node %s HTTPAddr %q: %s", n.ID, n.HTTPAddr, why))
	}
	addr := n.HTTPAddr
	if scheme, rest, ok := strings.Cut(addr, "://"); ok {
		want := "http"
		if s.cfg.TLS != nil {
			want = "https"
		}
		if scheme != want {
			return bad("this cluster's nodes serve " + want)
		}
		addr = rest
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return bad("want host:port")
	}
	if u, err := url.Parse("http://" + addr); err != nil || u.Host != addr || u.Path != "" {
		return bad("want host:port")
	}
	if !s.strictNodes() {
		return nil
	}
	from := s.peerOf(r).ip
	if ip := net.ParseIP(host); ip != nil {
		if from := net.ParseIP(from); from != nil && ip.Equal(from) {
			return nil
		}
		return bad("its host must be the address the node registers from, " + from)
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(lctx, host)
	if err != nil {
		return bad(fmt.Sprintf("cannot resolve its host: %v", err))
	}
	for _, ip := range ips {
		if ip.IP.Equal(net.ParseIP(from)) {
			return nil
		}
	}
	return bad("its host does not resolve to the address the node registers from, " + from)
}
