package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	nethttp "net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/agent/tlsutil"
	"github.com/drover/drover/api"
)

// Forwarding by region (federation, as Nomad's ?region=): a request whose
// "region" parameter names another region than this agent's is proxied,
// whole (method, path, query, body, the caller's token; responses
// streamed, so blocking queries, log follow and the event stream work),
// to a live server of that region, which serves it as any request of its
// own (a follower forwards it on to its leader). A client agent hands it
// to its servers, which forward it on. The remote region authenticates
// and authorises the caller itself: nothing is checked here first.

// RegionSource is what forwarding by region needs from the servers'
// federation (agent/federation.Federation implements it).
type RegionSource interface {
	// Regions lists the known regions, this one included, sorted.
	Regions() []string
	// RegionServers returns the HTTP addresses (host:port) of region's
	// live servers, and whether the region is known at all.
	RegionServers(region string) (addrs []string, known bool)
}

// headerRegionForwarded carries the region of the server that forwarded
// a request from another region: a server receiving it for a region
// that is not its own answers an error rather than forwarding again, and
// under TLS believes it only from a server certificate of that region.
const headerRegionForwarded = "X-Drover-Region-Forwarded"

// RegionDialTimeout bounds connecting to a server of another region
// (TCP and TLS handshake): a dead region fails in about this long at
// most, not after the caller's patience.
var RegionDialTimeout = 3 * time.Second

// regionOf is this agent's region.
func (s *HTTPServer) regionOf() string {
	if s.cfg.Region == "" {
		return "global"
	}
	return s.cfg.Region
}

// routeRegion forwards r when it is for another region and reports
// whether it did (an answer, or an error, is written). A request for
// this region, or naming none, is left to the routes.
func (s *HTTPServer) routeRegion(w nethttp.ResponseWriter, r *nethttp.Request) bool {
	want := r.URL.Query().Get("region")
	local := s.regionOf()
	from := r.Header.Get(headerRegionForwarded)
	// A follower of this region that passes such a request on to its
	// leader checked it first.
	if from != "" && s.cfg.TLS != nil && !certHoldsIn(r, from, tlsutil.RoleServer) && !certHoldsIn(r, local, tlsutil.RoleServer) {
		api.WriteError(w, api.Errorf(api.ErrPermissionDenied, fmt.Sprintf("a request forwarded from region %q needs a server certificate of that region", from)))
		return true
	}
	if want == "" || want == local {
		if auth := s.cfg.AuthoritativeRegion; auth != "" && auth != local && from == "" && s.cfg.Regions != nil {
			global, err := s.aclGlobalWrite(r)
			if err != nil {
				api.WriteError(w, api.AsError(err))
				return true
			}
			if global {
				r.Pattern = "forward authoritative region"
				s.forwardRegion(w, r, auth)
				return true
			}
		}
		return false
	}
	if from != "" {
		api.WriteError(w, api.Errorf(api.ErrRegionUnavailable, fmt.Sprintf("a request for region %q forwarded from region %q reached region %q; not forwarded again", want, from, local)))
		return true
	}
	r.Pattern = "forward region"
	switch {
	case s.cfg.Regions != nil:
		s.forwardRegion(w, r, want)
	case s.cfg.Server == nil && len(s.cfg.Servers) > 0:
		s.forwardRegionToServers(w, r)
	default:
		api.WriteError(w, api.Errorf(api.ErrUnknownRegion, fmt.Sprintf("unknown region %q: this agent serves region %q, not %q, and is federated with no other region", want, local, want)))
	}
	return true
}

// aclGlobalWrite reports whether r writes what the authoritative region
// holds (as Nomad): the ACL bootstrap, a policy, or a global token (one
// created with Global, or an existing one that is; a token this region
// does not know may be a global one not replicated yet). It may read
// and restore r's body (a token's Global field).
func (s *HTTPServer) aclGlobalWrite(r *nethttp.Request) (bool, error) {
	if r.Method == nethttp.MethodGet || r.Method == nethttp.MethodHead {
		return false, nil
	}
	p := r.URL.Path
	switch {
	case p == "/v1/acl/bootstrap", strings.HasPrefix(p, "/v1/acl/policy/"):
		return true, nil
	case p != "/v1/acl/token" && !strings.HasPrefix(p, "/v1/acl/token/"):
		return false, nil
	}
	if id := strings.TrimPrefix(strings.TrimPrefix(p, "/v1/acl/token"), "/"); id != "" && s.role.State != nil {
		t, err := s.state(nil).ACLTokenByAccessor(nil, id)
		if err != nil {
			return false, err
		}
		if t != nil || r.Method == nethttp.MethodDelete {
			return t == nil || t.Global, nil
		}
	}
	if r.Body == nil || r.Body == nethttp.NoBody {
		return false, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return false, bodyError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	var tok struct{ Global bool }
	_ = json.Unmarshal(b, &tok) // a malformed body is the handler's to refuse
	return tok.Global, nil
}

// certHoldsIn reports whether r's verified certificate holds one of
// roles' names in region.
func certHoldsIn(r *nethttp.Request, region string, roles ...string) bool {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return false
	}
	leaf := r.TLS.VerifiedChains[0][0]
	for _, role := range roles {
		if leaf.VerifyHostname(tlsutil.RoleName(role, region)) == nil {
			return true
		}
	}
	return false
}

// forwardRegion proxies r to a live server of region, trying them in a
// random order while a dial fails (the request was not sent); a region
// that is unknown is 400 unknown_region, one with no server that answers
// 503 region_unavailable.
func (s *HTTPServer) forwardRegion(w nethttp.ResponseWriter, r *nethttp.Request, region string) {
	addrs, known := s.cfg.Regions.RegionServers(region)
	if !known {
		api.WriteError(w, api.Errorf(api.ErrUnknownRegion, fmt.Sprintf("unknown region %q (known: %s)", region, strings.Join(s.cfg.Regions.Regions(), ", "))))
		return
	}
	if len(addrs) == 0 {
		api.WriteError(w, api.Errorf(api.ErrRegionUnavailable, fmt.Sprintf("region %q has no live server", region)))
		return
	}
	tr, err := s.regionTransport(region)
	if err != nil {
		api.WriteError(w, api.Errorf(api.ErrInternal, fmt.Sprintf("TLS to region %q: %v", region, err)))
		return
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	targets := make([]*url.URL, 0, len(addrs))
	for _, a := range addrs {
		if u, err := s.peerURL(a); err == nil {
			targets = append(targets, u)
		}
	}
	local := s.regionOf()
	s.proxyEach(w, r, targets, tr, func(h nethttp.Header) {
		// A header only servers of this region may set means nothing
		// there (and another region would not believe it anyway).
		for _, k := range []string{headerPeer, headerForwarded, headerLeaderForwarded, headerClientGrant, headerNotProcessed} {
			h.Del(k)
		}
		h.Set(headerRegionForwarded, local)
	}, func(u *url.URL, err error) *api.Error {
		return api.Errorf(api.ErrRegionUnavailable, fmt.Sprintf("region %q: server %s: %v", region, u.Host, err))
	})
}

// forwardRegionToServers is a client agent's part: its servers forward
// the request on to the region.
func (s *HTTPServer) forwardRegionToServers(w nethttp.ResponseWriter, r *nethttp.Request) {
	targets := make([]*url.URL, 0, len(s.cfg.Servers))
	for _, addr := range s.cfg.Servers {
		if u, err := s.peerURL(addr); err == nil {
			targets = append(targets, u)
		}
	}
	s.proxyEach(w, r, targets, s.peerTr, func(h nethttp.Header) { h.Set(headerForwarded, "1") },
		func(u *url.URL, err error) *api.Error {
			return api.Errorf(api.ErrUnavailable, fmt.Sprintf("forward to server %s: %v", u.Host, err))
		})
}

// proxyEach proxies r to the first of targets that takes the connection:
// a failed dial moves on to the next (the body is replayed), any other
// failure is answered with fail's error. Snapshot restores, whose body is
// not kept, get one try.
func (s *HTTPServer) proxyEach(w nethttp.ResponseWriter, r *nethttp.Request, targets []*url.URL, tr nethttp.RoundTripper,
	header func(nethttp.Header), fail func(*url.URL, error) *api.Error) {
	var body []byte
	replay := !isSnapshotRestore(r)
	if replay && r.Body != nil && r.Body != nethttp.NoBody {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			api.WriteError(w, api.AsError(bodyError(err)))
			return
		}
		body = b
	}
	var lastErr *api.Error
	for i, u := range targets {
		if i > 0 && !replay {
			break
		}
		if replay && body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		dialFailed := false
		proxy := &httputil.ReverseProxy{
			Transport: tr,
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				header(pr.Out.Header)
				pr.SetXForwarded()
			},
			FlushInterval: -1, // blocking queries, log follow, the event stream
			ErrorHandler: func(w nethttp.ResponseWriter, _ *nethttp.Request, err error) {
				lastErr = fail(u, err)
				if isDialError(err) {
					dialFailed = true
					return
				}
				api.WriteError(w, lastErr)
			},
		}
		proxy.ServeHTTP(w, r)
		if !dialFailed {
			return
		}
	}
	if lastErr == nil {
		lastErr = api.Errorf(api.ErrRegionUnavailable, "no server to forward to")
	}
	api.WriteError(w, lastErr)
}

// isDialError reports whether err happened before the request was sent:
// a refused or timed-out connection, or a failed TLS handshake.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var rec tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &rec) || errors.As(err, &cv) || errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nethttp.ErrHandlerTimeout)
}

// regionTransports caches one transport per region (each with its TLS
// that checks for that region's server certificate).
type regionTransports struct {
	mu sync.Mutex
	m  map[string]nethttp.RoundTripper
}

// regionTransport is the transport of requests to region's servers:
// bounded dials, HTTP/1.1 (forwarded exec sessions upgrade to a
// websocket), unbounded responses (blocking queries), and under TLS this
// server's certificate, accepting only server.<region>.drover.
func (s *HTTPServer) regionTransport(region string) (nethttp.RoundTripper, error) {
	s.regionTr.mu.Lock()
	defer s.regionTr.mu.Unlock()
	if tr, ok := s.regionTr.m[region]; ok {
		return tr, nil
	}
	tr := &nethttp.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: RegionDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: RegionDialTimeout,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	if s.cfg.PeerTLS != nil {
		if s.cfg.RegionTLS == nil {
			return nil, errors.New("no TLS configuration for other regions (Config.RegionTLS)")
		}
		tc, err := s.cfg.RegionTLS(region)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
	}
	if s.regionTr.m == nil {
		s.regionTr.m = map[string]nethttp.RoundTripper{}
	}
	s.regionTr.m[region] = tr
	return tr, nil
}

// regions answers GET /v1/regions: the known regions, sorted (a server
// without federation knows its own).
func (h *agentHandlers) regions(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if rs := h.s.cfg.Regions; rs != nil {
		return rs.Regions(), nil
	}
	return []string{h.s.regionOf()}, nil
}

// join answers PUT /v1/agent/join?address=A[&address=B][&wan=true|false]
// (Nomad's): this server joins the gossip addresses, in the WAN pool
// (servers of every region; the default) or its own region's LAN pool.
func (h *operatorHandlers) join(w nethttp.ResponseWriter, r *nethttp.Request) (any, error) {
	if h.s.cfg.Join == nil {
		return nil, api.Errorf(api.ErrBadRequest, "this agent does not gossip (not a server, or dev mode)")
	}
	addrs := r.URL.Query()["address"]
	if len(addrs) == 0 {
		return nil, api.Errorf(api.ErrBadRequest, "?address= (a server's gossip address, host:port) is required")
	}
	wan := true
	if r.URL.Query().Has("wan") {
		var err error
		if wan, err = boolParam(r, "wan"); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	n, err := h.s.cfg.Join(ctx, addrs, wan)
	if err != nil {
		return nil, err
	}
	return &api.AgentJoinResponse{NumJoined: n}, nil
}
