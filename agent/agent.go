package agent

import (
	"context"
	"errors"
	"fmt"
	"github.com/drover/drover/agent/logmon"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/agent/federation"
	"github.com/drover/drover/agent/gossip"
	agenthttp "github.com/drover/drover/agent/http"
	"github.com/drover/drover/agent/http/serverstate"
	"github.com/drover/drover/api"
	"github.com/drover/drover/server"
)

// Agent is one drover process: the server role, the client role or both,
// behind one HTTP API.
type Agent struct {
	cfg      *config.Config
	base     *slog.Logger // handed to the roles, which add their component
	log      *slog.Logger
	registry *prometheus.Registry

	server *server.Server
	// gossip is the servers' membership pool (nil: dev mode, client only).
	gossip *gossip.Gossip
	// fed is the servers' WAN pool across regions (nil: ports.serf_wan
	// unset, dev mode, client only).
	fed    *federation.Federation
	client clientRole
	http   *agenthttp.HTTPServer
	// httpLn and raftLn are bound in Start, before their ports are
	// advertised; each is owned by the agent until its role takes it.
	httpLn, raftLn net.Listener
	// tmpDir is the dev-mode data dir this agent created (removed on Shutdown).
	tmpDir string
	// monitor fans log records out to `drover monitor`.
	monitor *logmon.Hub
	// tls is the mutual TLS of the API and of requests to other agents.
	tls *peerTLS
	// regions is the server's server.Regions (regions.go; nil: no WAN pool).
	regions *regions
	// aclWatch stops (and aclWatchDone says it ended) a client-only
	// agent's watch of its servers' ACLs (RemoteACL.Watch).
	aclWatch     context.CancelFunc
	aclWatchDone chan struct{}
	// devClients are the client-only agents of -dev-clients (started
	// after this agent's API, shut down before it); devServer is, in such
	// a dev client, the server of the agent that runs it.
	devClients []*Agent
	devServer  *server.Server
	// autoscaleClosers are the autoscaler's providers with processes
	// (autoscale.go), closed after the server on Shutdown.
	autoscaleClosers []io.Closer
}

// New validates cfg and prepares the agent; Start starts it.
func New(cfg *config.Config, logger *slog.Logger) (*Agent, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every record also reaches the live monitors (GET /v1/agent/monitor).
	hub := logmon.NewHub()
	logger = slog.New(hub.Handler(logger.Handler()))
	return &Agent{cfg: cfg, base: logger, log: logger.With("component", "agent"), registry: prometheus.NewRegistry(), monitor: hub}, nil
}

// Start brings up the server role, the client role and the HTTP API, in
// that order; on failure everything started so far is shut down.
func (a *Agent) Start(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = a.Shutdown(sctx)
		}
	}()
	cfg := a.cfg
	if cfg.Name == "" {
		if h, herr := os.Hostname(); herr == nil {
			cfg.Name = h
		} else {
			cfg.Name = "drover"
		}
	}
	// Bind the API first: a port in use fails the start before anything
	// else runs, and an ephemeral port (0) is known before it is advertised.
	if a.httpLn, err = listen(ctx, cfg.BindAddr, &cfg.Ports.HTTP); err != nil {
		return fmt.Errorf("http %w", err)
	}
	if cfg.Server.Enabled && !cfg.DevMode {
		if a.raftLn, err = listen(ctx, cfg.BindAddr, &cfg.Ports.Raft); err != nil {
			return fmt.Errorf("raft %w", err)
		}
	}
	if a.tls, err = newPeerTLS(a); err != nil {
		return err
	}
	if err := a.registry.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("register go metrics: %w", err)
	}
	hcfg := agenthttp.Config{
		Addr: cfg.HTTPAddr(), Listener: a.httpLn, Registry: a.registry, Logger: a.base,
		Self: a.self, Members: a.members, Monitor: a.monitor,
		ReadTimeout: cfg.Limits.HTTPReadTimeout, MaxConnsPerClient: cfg.Limits.HTTPMaxConnsPerClient,
		SnapshotRestoreMaxBytes: cfg.Limits.SnapshotRestoreMaxBytes, UsagePrices: cfg.Server.UsagePrices,
		TLS: a.tls.serve, PeerTLS: a.tls.dial, EnableDebug: cfg.EnableDebug, Region: cfg.Region,
	}
	if cfg.Server.Enabled {
		dataDir := cfg.DataDir
		if dataDir != "" {
			dataDir = filepath.Join(dataDir, "server")
		}
		ascfg, err := a.autoscaleConfig(cfg)
		if err != nil {
			return err
		}
		s, serr := server.New(&server.Config{
			NodeName: cfg.Name, Region: cfg.Region, Datacenter: cfg.Datacenter, DataDir: dataDir,
			BindAddr: cfg.BindAddr, RaftPort: cfg.Ports.Raft, RaftAddr: a.raftAdvertise(), HTTPAddr: cfg.AdvertisedHTTP(),
			BootstrapExpect: cfg.Server.BootstrapExpect, DevMode: cfg.DevMode,
			NumSchedulers: cfg.Server.NumSchedulers, JobMaxGroupCount: cfg.Server.JobMaxGroupCount, Logger: a.base,
			DeadServerGrace: cfg.Server.DeadServerGrace, ServerStabilization: cfg.Server.ServerStabilization,
			HeartbeatTTLMin: cfg.Server.MinHeartbeatTTL, HeartbeatGrace: cfg.Server.HeartbeatGrace,
			MaxHeartbeatsPerSecond: cfg.Server.MaxHeartbeatsPerSecond, OIDCIssuer: cfg.Server.OIDCIssuer, ACLEnabled: cfg.ACLEnabled,
			RequireNodeIntro: a.requireNodeIntro(),
			ACLReplication:   a.aclReplication(),
			Regions:          a.serverRegions(),
			Registry:         a.registry, RaftListener: a.raftLn, PeerClient: a.tls.apiClient, RaftTLS: a.tls.raft,
			Defrag: server.DefragConfig{Enabled: cfg.Server.Defrag.Enabled, Interval: cfg.Server.Defrag.Interval, PerQueue: cfg.Server.Defrag.PerQueue}, Autoscale: ascfg,
		})
		a.raftLn = nil // raft owns it now, even when New failed
		if serr != nil {
			return fmt.Errorf("start server: %w", serr)
		}
		a.server = s
		if a.gossipEnabled() {
			if err := a.startGossip(s); err != nil {
				return fmt.Errorf("start gossip: %w", err)
			}
			hcfg.Keyring, hcfg.ForceLeave, hcfg.Join = a.KeyringOperation, a.ForceLeave, a.join
			if a.fed != nil {
				a.regions.started(a.fed)
				hcfg.Regions, hcfg.RegionTLS = a.fed, a.regionTLS
				hcfg.AuthoritativeRegion = cfg.Server.AuthoritativeRegion
			}
		}
		hcfg.Server = serverstate.Bind(s)
		hcfg.ACL = s.ACL()
	}
	var remote *agenthttp.RemoteACL
	if !cfg.Server.Enabled {
		hcfg.Servers = a.tls.addrs(cfg.Client.Servers)
		if cfg.ACLEnabled {
			// A client-only agent serves /v1/client/* itself: it asks its
			// servers what each token may do.
			remote = &agenthttp.RemoteACL{Servers: hcfg.Servers, HTTP: a.tls.client}
			hcfg.ACL = remote
		}
	}
	if cfg.Client.Enabled && !a.devClientsEnabled() {
		c, cerr := a.newClient()
		if cerr != nil {
			return fmt.Errorf("start client: %w", cerr)
		}
		a.client = c
		hcfg.Client = c
	}
	hcfg.UI = uiHandler()
	h, herr := agenthttp.New(hcfg)
	if herr != nil {
		return herr
	}
	// The API listens before the client starts: in-process, the client
	// registers with this agent's own server through it.
	a.httpLn = nil // the HTTP server owns it now
	a.http = h
	if err := h.Start(ctx); err != nil {
		return err
	}
	if a.client != nil {
		if err := a.client.Start(ctx); err != nil {
			return fmt.Errorf("start client: %w", err)
		}
	}
	if a.devClientsEnabled() {
		if err := a.startDevClients(ctx); err != nil {
			return err
		}
	}
	if sec, ok := a.client.(interface{ NodeSecret() string }); ok && remote != nil {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.aclWatch, a.aclWatchDone = cancel, make(chan struct{})
		go func() {
			defer close(a.aclWatchDone)
			remote.Watch(wctx, sec.NodeSecret, nil)
		}()
	}
	return nil
}

// requireNodeIntro: nodes join with an introduction token or a client
// certificate wherever the cluster authenticates anyone (ACLs on, or the
// API verifying client certificates).
func (a *Agent) requireNodeIntro() bool {
	return a.cfg.ACLEnabled || a.cfg.TLS.HTTP && a.cfg.TLS.VerifyHTTPSClient
}

// HTTPAddr is the address the API listens on.
func (a *Agent) HTTPAddr() string {
	if a.http == nil {
		return a.cfg.HTTPAddr()
	}
	return a.http.Addr()
}

// Server is the agent's server role (nil when it runs none): tests wait on
// its signals (Ready, LeaderChanged, BrokerIdle) and read its state.
func (a *Agent) Server() *server.Server { return a.server }

// ClientRegistered returns a channel closed once the agent's client
// registered its node (nil when it runs no client role of its own, as a
// -dev-clients agent, whose clients are agents of their own).
func (a *Agent) ClientRegistered() <-chan struct{} {
	if a.client == nil {
		return nil
	}
	return a.client.Registered()
}

// Shutdown stops the client (in dev mode it stops its tasks and reports
// them through the API), then the HTTP API, then the server.
func (a *Agent) Shutdown(ctx context.Context) error {
	var errs []error
	if a.aclWatch != nil {
		a.aclWatch()
		<-a.aclWatchDone
	}
	if err := a.shutdownDevClients(ctx); err != nil {
		errs = append(errs, err)
	}
	if a.client != nil {
		if err := a.client.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("client shutdown: %w", err))
		}
	}
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.server != nil && a.gossip != nil {
		// Hand leadership over first: the others need no election timeout.
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := a.server.TransferLeadership(tctx); err != nil {
			a.log.Warn("leadership transfer before shutdown failed", "err", err)
		}
		cancel()
		if a.cfg.Server.LeaveOnTerminate {
			if err := a.gossip.Leave(ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if a.server != nil {
		if err := a.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("server shutdown: %w", err))
		}
	}
	if err := a.closeAutoscale(ctx); err != nil {
		errs = append(errs, fmt.Errorf("autoscale providers: %w", err))
	}
	if a.gossip != nil {
		if err := a.gossip.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.fed != nil {
		if a.cfg.Server.LeaveOnTerminate {
			if err := a.fed.Leave(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		if err := a.fed.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ln := range []net.Listener{a.httpLn, a.raftLn} {
		if ln != nil {
			_ = ln.Close() // Start failed before a role took it
		}
	}
	if a.tmpDir != "" {
		_ = os.RemoveAll(a.tmpDir)
	}
	return errors.Join(errs...)
}

// self answers /v1/agent/self.
func (a *Agent) self() *api.AgentSelf {
	c := a.cfg
	out := &api.AgentSelf{
		Config: map[string]any{
			"Name": c.Name, "Region": c.Region, "Datacenter": c.Datacenter, "DataDir": c.DataDir,
			"BindAddr": c.BindAddr, "DevMode": c.DevMode, "Version": Version,
			"Ports":  map[string]int{"HTTP": c.Ports.HTTP, "Raft": c.Ports.Raft, "Gossip": c.Ports.Gossip},
			"Server": map[string]any{"Enabled": c.Server.Enabled, "BootstrapExpect": c.Server.BootstrapExpect},
			"Client": map[string]any{"Enabled": c.Client.Enabled, "Servers": c.Client.Servers,
				"NodeClass": c.Client.NodeClass, "NodePool": c.Client.NodePool, "DevClients": a.DevClients()},
		},
		Member: a.selfMember(),
	}
	if a.server != nil {
		out.Stats = a.server.Stats()
	}
	return out
}

func (a *Agent) selfMember() *api.AgentMember {
	c := a.cfg
	role := "client"
	if c.Server.Enabled {
		role = "server"
	}
	host := c.BindAddr
	if host == "0.0.0.0" || host == "" {
		host = "127.0.0.1"
	}
	return &api.AgentMember{
		Name: c.Name + "." + c.Region, Addr: host, Port: uint16(c.Ports.Gossip), Status: "alive",
		Tags: map[string]string{
			"role": role, "region": c.Region, "dc": c.Datacenter, "build": Version,
			"port": strconv.Itoa(c.Ports.Raft), "raft_addr": net.JoinHostPort(host, strconv.Itoa(c.Ports.Raft)),
			"http_addr": c.AdvertisedHTTP(), "bootstrap_expect": strconv.Itoa(c.Server.BootstrapExpect),
		},
		ProtocolMin: 1, ProtocolMax: 1, ProtocolCur: 1,
	}
}

// members answers /v1/agent/members. Until gossip joins servers, a server
// knows itself only.
func (a *Agent) members() *api.ServerMembers {
	c := a.cfg
	if a.gossip != nil {
		return a.gossipMembers()
	}
	out := &api.ServerMembers{ServerName: c.Name, ServerRegion: c.Region, ServerDC: c.Datacenter, Members: []*api.AgentMember{}}
	if c.Server.Enabled {
		out.Members = append(out.Members, a.selfMember())
	}
	return out
}

// Version of the agent (set by the CLI from its build version).
var Version = "0.1.0-dev"

// listen binds host:*port; a port of 0 (any free port) is set to the
// port it got.
func listen(ctx context.Context, host string, port *int) (net.Listener, error) {
	var lc net.ListenConfig
	addr := net.JoinHostPort(host, strconv.Itoa(*port))
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	*port = ln.Addr().(*net.TCPAddr).Port
	return ln, nil
}
