package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/drover/drover/agent/logmon"
	"github.com/drover/drover/internal/clock"
	"log/slog"
	"net"
	nethttp "net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 8 << 20
	DefaultWait         = 5 * time.Minute
	MaxWait             = 10 * time.Minute
	DefaultHeartbeat    = 10 * time.Second
)

// Config wires the HTTP server to the roles this agent runs. Server is
// nil on a client-only agent; Client is nil on a server-only one.
type Config struct {
	// ACL resolves tokens and says whether ACLs are enforced (nil: not).
	ACL ACLResolver
	// Addr is the configured address (host:port), reported by Addr
	// until Start.
	Addr string
	// Listener is what Start serves (the agent binds it early, to learn
	// an ephemeral port before advertising it); Shutdown closes it.
	Listener net.Listener
	// Server is the server role: its state store and one backend per
	// resource (backend.go).
	Server *ServerRole
	Client ClientRole
	// Parse converts HCL for POST /v1/jobs/parse (default ParseHCL).
	Parse Parser
	// Servers are HTTP addresses (host:port) of servers; an agent without
	// the server role proxies server API requests to the first that answers.
	Servers []string
	// UI serves /ui/ (nil: a placeholder page).
	UI nethttp.Handler
	// Self answers /v1/agent/self; Members /v1/agent/members.
	Self    func() *api.AgentSelf
	Members func() *api.ServerMembers
	// Keyring runs gossip keyring operations (/v1/agent/keyring/...);
	// nil on agents that do not gossip.
	Keyring KeyringFunc
	// ForceLeave marks a failed server as left in gossip
	// (PUT /v1/agent/force-leave?node=); nil on agents that do not gossip.
	ForceLeave func(ctx context.Context, node string) error
	// Registry receives the HTTP metrics and is served at /v1/metrics.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	// Monitor serves GET /v1/agent/monitor (nil: 503).
	Monitor *logmon.Hub

	MaxBodyBytes int64 // default 8 MiB
	// SnapshotRestoreMaxBytes bounds a snapshot restore's body (default
	// DefaultSnapshotRestoreMaxBytes, 1 GiB).
	SnapshotRestoreMaxBytes int64
	MaxWait                 time.Duration // cap of ?wait= (default 10m)
	// ReadTimeout bounds reading a request, headers and body (default
	// DefaultReadTimeout); responses are not bounded (blocking queries,
	// streams, exec). A snapshot restore's body must instead arrive at 1
	// MiB per ReadTimeout.
	ReadTimeout time.Duration
	// MaxConnsPerClient bounds the open connections of one remote IP
	// (0: no limit); one over it is answered 429 and closed. Raft peers
	// and Config.Servers are not counted (connlimit_peers.go).
	MaxConnsPerClient int
	// UsagePrices is the price of one GPU hour per GPU model
	// ("nvidia/gpu/H100"), for the Cost of GET /v1/usage (showback).
	UsagePrices map[string]float64
	// EventHeartbeat is the interval of {} lines on the event stream (default 10s).
	EventHeartbeat time.Duration
	// TLS, when set, serves the API over TLS (its ClientAuth says whether
	// callers need a certificate); PeerTLS is the TLS of this agent's own
	// requests to other agents (forwarding), which then use https.
	TLS, PeerTLS *tls.Config
	// EnableDebug serves /debug/pprof/ (agent enable_debug).
	EnableDebug bool
	// Clock is the clock of grants to nodes (nil: clock.Real).
	Clock clock.Clock
	// Region is this agent's region (default "global"): the region of the
	// certificates it takes for agents'.
	Region string
	// Regions, on a federated server, finds the servers of other regions
	// that requests with ?region= are forwarded to (region.go); nil: this
	// agent knows no other region (a client agent hands such requests to
	// its servers). RegionTLS is the TLS of those requests under PeerTLS
	// (tlsutil.Config.RegionServer).
	Regions   RegionSource
	RegionTLS func(region string) (*tls.Config, error)
	// AuthoritativeRegion, when another region's, is where this server
	// forwards ACL policy, bootstrap and global token writes (region.go).
	AuthoritativeRegion string
	// Join joins gossip addresses (PUT /v1/agent/join): the WAN pool's
	// when wan, else the region's LAN pool; nil on agents that do not
	// gossip.
	Join func(ctx context.Context, addrs []string, wan bool) (int, error)
}

// HTTPServer is the agent's HTTP API server.
type HTTPServer struct {
	cfg Config
	// role is cfg.Server, or an empty one (every backend nil) on an agent
	// without the server role.
	role    *ServerRole
	log     *slog.Logger
	mux     *nethttp.ServeMux
	handler nethttp.Handler
	metrics *metrics
	// peerTr and leaderTr carry requests to other agents (peerTransports).
	peerTr, leaderTr nethttp.RoundTripper
	// peers are the other servers' addresses (connection limit, trusted
	// forwarders).
	peers *peerIPs
	// regionTr are the transports to other regions' servers (region.go).
	regionTr regionTransports

	mu         sync.Mutex
	baseCancel context.CancelFunc // ends in-flight blocking queries and streams
	srv        *nethttp.Server
	ln         net.Listener
	done       chan struct{}
}

// New builds the server and its routes; it does not listen yet.
func New(cfg Config) (*HTTPServer, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.SnapshotRestoreMaxBytes <= 0 {
		cfg.SnapshotRestoreMaxBytes = DefaultSnapshotRestoreMaxBytes
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = MaxWait
	}
	if cfg.EventHeartbeat <= 0 {
		cfg.EventHeartbeat = DefaultHeartbeat
	}
	if cfg.Parse == nil {
		cfg.Parse = ParseHCL
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &HTTPServer{cfg: cfg, role: cfg.Server, log: cfg.Logger.With("component", "http")}
	if s.role == nil {
		s.role = &ServerRole{}
	}
	s.peerTr, s.leaderTr = peerTransports(cfg.PeerTLS)
	s.peers = &peerIPs{s: s}
	s.mux = nethttp.NewServeMux()
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("http metrics: %w", err)
	}
	s.metrics = m
	s.register()
	var h nethttp.Handler = s.mux
	if cfg.Server != nil {
		h = s.forwardToLeader(h)
	}
	if cfg.Server == nil && len(cfg.Servers) > 0 {
		h = s.forwardToServers(h)
	}
	s.handler = s.middleware(h)
	return s, nil
}

// Handler is the full handler (routes + middleware), for tests and embedding.
func (s *HTTPServer) Handler() nethttp.Handler { return s.handler }

// Start serves cfg.Listener in one goroutine that Shutdown waits for.
func (s *HTTPServer) Start(ctx context.Context) error {
	ln := s.cfg.Listener
	if ln == nil {
		return errors.New("http: Start needs Config.Listener")
	}
	if s.cfg.MaxConnsPerClient > 0 {
		s.peers.resolveServers(ctx)
		ln = newConnLimitListener(ln, s.cfg.MaxConnsPerClient, s.peers.exempt, s.log)
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// No WriteTimeout: blocking queries, log follow, the event stream and
	// exec answer for as long as they need.
	srv := &nethttp.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: min(10*time.Second, s.cfg.ReadTimeout),
		ReadTimeout:       s.cfg.ReadTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
		// Cleartext HTTP/2 with prior knowledge too: the node simulator
		// (agent/sim) multiplexes thousands of nodes' long polls over a
		// few connections. HTTP/1.1 clients see no difference. At most
		// 250 streams a connection (Go's default; clients open more
		// connections, 40 for 10,000 simulated nodes, within the default
		// limits.http_max_conns_per_client): Go's HTTP/2 server looks
		// through every open stream of a connection for the next frame
		// to write, so the leader's CPU grows with the long polls parked
		// on one connection (BenchmarkPlacements10x10000's heartbeat CPU).
		Protocols: serverProtocols(),
		HTTP2:     &nethttp.HTTP2Config{MaxConcurrentStreams: 250},
		TLSConfig: s.cfg.TLS,
	}
	s.mu.Lock()
	s.srv, s.ln, s.done, s.baseCancel = srv, ln, make(chan struct{}), cancel
	done := s.done
	s.mu.Unlock()
	go func() {
		defer close(done)
		serve := srv.Serve
		if srv.TLSConfig != nil {
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			s.log.Error("http serve failed", "err", err)
		}
	}()
	s.log.Info("http listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address actually listened on (after Start).
func (s *HTTPServer) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return s.cfg.Addr
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting, ends blocking queries and event streams,
// waits for in-flight requests until ctx ends (then closes them) and for
// the serving goroutine.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv, done, cancel := s.srv, s.done, s.baseCancel
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	<-done
	if err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// serverProtocols are HTTP/1.1 and cleartext HTTP/2 (prior knowledge).
func serverProtocols() *nethttp.Protocols {
	var p nethttp.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	return &p
}
