package http

import (
	"crypto/tls"
	nethttp "net/http"
	"net/url"
	"strings"
)

// peerURL is another agent's HTTP API address as a URL: https when this
// agent speaks TLS to its peers (Config.PeerTLS), else http.
func (s *HTTPServer) peerURL(addr string) (*url.URL, error) {
	if !strings.Contains(addr, "://") {
		scheme := "http://"
		if s.cfg.PeerTLS != nil {
			scheme = "https://"
		}
		addr = scheme + addr
	}
	return url.Parse(addr)
}

// peerTransports are the transports of requests to other agents: pooled
// (to nodes and servers) and the leader forwarder's fresh-connection one,
// both presenting this agent's certificate when PeerTLS is set.
func peerTransports(t *tls.Config) (pooled, leader nethttp.RoundTripper) {
	if t == nil {
		return nethttp.DefaultTransport, leaderTransport
	}
	l := leaderTransport.Clone()
	l.TLSClientConfig = t.Clone()
	return PeerTransport(t), l
}

// PeerTransport is the pooled transport of an agent's requests to other
// agents under mutual TLS t: HTTP/1.1 as without TLS, since forwarded
// exec sessions upgrade to a websocket, which HTTP/2 cannot carry.
func PeerTransport(t *tls.Config) *nethttp.Transport {
	p := nethttp.DefaultTransport.(*nethttp.Transport).Clone()
	p.TLSClientConfig = t.Clone()
	p.ForceAttemptHTTP2 = false
	return p
}
