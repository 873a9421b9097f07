package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/clock"
	"github.com/drover/drover/server/broker"
	"github.com/drover/drover/server/fairshare"
	"github.com/drover/drover/server/raftstore"
	"github.com/drover/drover/server/scheduler"
	"github.com/drover/drover/server/state"
)

// Config configures a server.
type Config struct {
	// ACLEnabled turns ACL enforcement on (agent acl { enabled = true }).
	ACLEnabled bool
	// ACLReplication, in a region that is not the authoritative one, is
	// where this region's leader copies ACL policies and global tokens
	// from (acl_replication.go); nil: nothing is replicated.
	ACLReplication ACLSource
	// Regions reaches the other regions of a federation (regions.go; nil:
	// not federated): spill-over (spill.go) and multiregion jobs use it.
	Regions Regions
	// RequireNodeIntro makes a node that registers for the first time, or
	// into another node pool, show an introduction (node_intro.go); the
	// agent sets it when ACLs are on or the API verifies client
	// certificates.
	RequireNodeIntro bool
	// OIDCIssuer is the iss claim of workload identities and the issuer
	// of the OIDC discovery document (Nomad's oidc_issuer; "" = none).
	OIDCIssuer string
	NodeName   string
	Region     string
	Datacenter string
	// DataDir holds Raft's log, stable store and snapshots. Empty with
	// DevMode: in-memory Raft (nothing survives a restart).
	DataDir string
	// BindAddr and RaftPort are where Raft listens; RaftAddr is the
	// advertised host:port (default BindAddr:RaftPort).
	BindAddr string
	RaftPort int
	RaftAddr string
	// RaftListener, when set, is a bound listener Raft serves instead of
	// listening on BindAddr:RaftPort itself; New owns it from the call on
	// (closed on failure and on Shutdown).
	RaftListener net.Listener
	// HTTPAddr is the advertised HTTP address (returned to clients).
	HTTPAddr        string
	BootstrapExpect int
	DevMode         bool
	// NumSchedulers is the number of scheduler workers on the leader
	// (default runtime.NumCPU()).
	NumSchedulers int
	// Autoscale is the cluster autoscaler leader duty (autoscaler.go;
	// off without policies).
	Autoscale AutoscaleConfig
	// Defrag is the optional defragmentation leader duty (defrag.go;
	// agent server { defrag { enabled, interval } }, off by default).
	Defrag DefragConfig
	// JobMaxGroupCount bounds a task group's count (agent server {
	// job_max_group_count }; default scheduler.DefaultMaxGroupCount):
	// register, plan, scale, revert and dispatch refuse a job above it
	// (400 invalid_job), and the scheduler leaves alone a stored group
	// above it (scheduler.Options.MaxGroupCount). Nomad's job_max_count
	// bounds the sum over a job's groups instead.
	JobMaxGroupCount int
	// HeartbeatTTLMin is the smallest node heartbeat TTL (default 10 s);
	// HeartbeatGrace is added to the TTL on the server side, and after a
	// leader election to the longest TTL handed out for the node count
	// (default 10 s).
	HeartbeatTTLMin time.Duration
	HeartbeatGrace  time.Duration
	// MaxHeartbeatsPerSecond caps the heartbeat rate across nodes: the TTL
	// grows with the node count (default 50).
	MaxHeartbeatsPerSecond float64
	// NackTimeout and DeliveryLimit tune the eval broker (defaults 60 s, 3).
	// A nacked eval is redelivered after 1 s, later ones after 20 s.
	NackTimeout   time.Duration
	DeliveryLimit int
	// EvalGCInterval is how often finished evals are collected (default
	// 5 min); EvalGCThreshold how long they are kept (default 1 h).
	EvalGCInterval  time.Duration
	EvalGCThreshold time.Duration
	// FairShare tunes the queues' fair shares (usage half-life, entry
	// penalty; server/fairshare's defaults when zero).
	FairShare fairshare.Config
	// RaftApplyTimeout bounds every Raft apply (default 30 s).
	RaftApplyTimeout time.Duration
	// DeadServerGrace is how long the leader keeps a failed server in the
	// Raft configuration before removing it (default 2 min);
	// ServerStabilization how long a new server stays a non-voter before
	// promotion (default 3 s); MaxTrailingLogs how far behind it may be
	// then (default 500). See autopilot.go.
	DeadServerGrace     time.Duration
	ServerStabilization time.Duration
	MaxTrailingLogs     int
	Logger              *slog.Logger
	// Clock drives the broker, heartbeats and drains (default the wall
	// clock); tests inject clock.NewFake.
	Clock clock.Clock
	// RaftTLS carries Raft over mutual TLS between servers (nil: plain TCP).
	RaftTLS *raftstore.TLS
	// PeerClient makes the API client of another server's HTTP address
	// (host:port), for bootstrap and autopilot checks (nil: api.NewClient;
	// the agent's adds https and its certificate under mutual TLS).
	PeerClient func(addr string) *api.Client
	// Registry receives the server's Prometheus metrics (nil: not exported).
	Registry prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.NumSchedulers <= 0 {
		c.NumSchedulers = runtime.NumCPU()
	}
	if c.JobMaxGroupCount <= 0 {
		c.JobMaxGroupCount = scheduler.DefaultMaxGroupCount
	}
	if c.HeartbeatTTLMin <= 0 {
		c.HeartbeatTTLMin = 10 * time.Second
	}
	if c.HeartbeatGrace <= 0 {
		c.HeartbeatGrace = 10 * time.Second
	}
	if c.MaxHeartbeatsPerSecond <= 0 {
		c.MaxHeartbeatsPerSecond = 50
	}
	if c.EvalGCInterval <= 0 {
		c.EvalGCInterval = 5 * time.Minute
	}
	if c.EvalGCThreshold <= 0 {
		c.EvalGCThreshold = time.Hour
	}
	if c.RaftApplyTimeout <= 0 {
		c.RaftApplyTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Region == "" {
		c.Region = "global"
	}
	if c.Datacenter == "" {
		c.Datacenter = "dc1"
	}
	if c.NodeName == "" {
		c.NodeName = "server"
	}
	if c.PeerClient == nil {
		c.PeerClient = api.NewClient
	}
	if c.BindAddr == "" {
		c.BindAddr = "127.0.0.1"
	}
}

// Server is one server process's share of the cluster: a shell that owns
// the lifecycle (New, Shutdown), Raft and leadership (raft.go, leader.go,
// membership.go), and hands out the components that do the work (Jobs,
// Nodes, ACL ...). See doc.go for who owns what.
type Server struct {
	cfg  Config
	core serverCore  // what every component and duty gets a copy of (core.go)
	rs   *raftSystem // raft + fsm (raft.go)

	// The components (accessors below).
	jobs        *Jobs
	nodes       *Nodes
	allocs      *Allocs
	deployments *Deployments
	acl         *ACL
	sso         *SSO
	keyring     *Keyring
	variables   *Variables
	tenancy     *Tenancy
	services    *Services
	operator    *Operator

	// leaderChanges wakes requests held for a leader, ready is closed
	// while leader duties run (leader_changes.go).
	leaderChanges leaderChanges
	ready         readiness

	// The leader's machinery, enabled while this server leads.
	broker    *broker.EvalBroker
	blocked   *broker.BlockedEvals
	planQueue *broker.PlanQueue
	fair      *fairShares           // the queues' fair shares (fair.go)
	workload  *scheduler.Workload   // the expected GPU asks (workload.go)
	usage     *scheduler.UsageCache // nodes' usage between the workers' passes
	reactor   *commitReactor        // the FSM's hooks (reactions.go)
	hb        *heartbeats
	reap      evalStatusQueue
	metrics   *metrics
	// queueStatus feeds the per-queue allocated/guaranteed/fair-share
	// gauges (metrics_queue.go); nil: the state's QueueStatuses.
	queueStatus QueueStatusFunc

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // leader loop, leader-change watch, bootstrap

	leaderMu     sync.Mutex
	leaderCancel context.CancelFunc
	leaderWG     sync.WaitGroup // goroutines of one leadership term

	shutdownOnce sync.Once

	// planHook, when set (tests only), is called by the plan applier with
	// each plan before it is verified.
	planHook atomic.Pointer[func(*api.Plan)]

	// cluster is gossip membership and the leader loop's requests
	// (membership.go).
	cluster cluster
}

// New starts a server: Raft (bootstrapping a single-server cluster in dev
// mode or when BootstrapExpect is 1) and the leader loop.
func New(cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	c := *cfg
	c.setDefaults()
	s := &Server{cfg: c}
	s.core = serverCore{
		current: func() *state.StateStore { return s.rs.state() }, isLeader: s.IsLeader,
		commit: s.raftApply, clock: c.Clock, log: c.Logger.With("component", "server"), timeout: c.RaftApplyTimeout,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.reap.notify = make(chan struct{}, 1)
	s.cluster.init()
	s.fair = newFairShares(c.FairShare, nil)
	s.workload = scheduler.NewWorkload(0)
	s.usage = scheduler.NewUsageCache()
	s.broker = broker.NewEvalBroker(broker.Config{
		NackTimeout: c.NackTimeout, DeliveryLimit: c.DeliveryLimit, Clock: c.Clock,
		InitialNackDelay: time.Second, SubsequentNackDelay: 20 * time.Second,
		OnFailed: s.reap.failed, QueueDeficit: s.fair.deficits,
	})
	s.blocked = broker.NewBlockedEvals(s.broker.Enqueue, s.reap.superseded)
	s.fair.blocked = s.blocked
	s.planQueue = broker.NewPlanQueue()
	s.metrics = newMetrics(s)
	s.hb = newHeartbeats(&c, s.core, s.metrics.heartbeatMisses)
	if c.Registry != nil {
		if err := s.metrics.register(c.Registry); err != nil {
			s.cancel()
			if c.RaftListener != nil {
				_ = c.RaftListener.Close() // New owns it, even on failure
			}
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	s.reactor = &commitReactor{evals: s.broker, blocked: s.blocked, obsolete: s.reap.superseded}
	rs, err := newRaftSystem(&s.cfg, s.core.log, s.reactor)
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.rs = rs
	s.newComponents()
	s.leaderChanges.watch(s.ctx, &s.wg, rs.raft)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.monitorLeadership()
	}()
	return s, nil
}

// newComponents builds the components, each with a copy of the core and
// only the parts of the server it needs.
func (s *Server) newComponents() {
	c, core := &s.cfg, s.core
	s.keyring = &Keyring{serverCore: core, region: c.Region, issuer: c.OIDCIssuer}
	s.jobs = &Jobs{serverCore: core, region: c.Region, maxGroupCount: c.JobMaxGroupCount, workload: s.workload, regions: c.Regions}
	s.nodes = &Nodes{serverCore: core, requireIntro: c.RequireNodeIntro, grace: c.HeartbeatGrace, hb: s.hb,
		intro: &nodeIntros{serverCore: core, keys: s.keyring}, servers: s, beats: s.metrics.heartbeats}
	s.nodes.allocUpdates.apply = core.applyAllocClientUpdate
	s.hb.expired, s.hb.windowLeft = s.nodes.expired, s.nodes.disconnectLeft
	s.allocs = &Allocs{serverCore: core}
	s.deployments = &Deployments{serverCore: core}
	s.acl = &ACL{serverCore: core, enabled: c.ACLEnabled, keys: s.keyring}
	s.variables = &Variables{serverCore: core, keys: s.keyring}
	s.sso = &SSO{serverCore: core}
	s.tenancy = &Tenancy{serverCore: core, fair: s.fair}
	s.services = &Services{serverCore: core}
	s.operator = &Operator{serverCore: core, rs: s.rs, peers: s.RaftConfiguration, pause: s.withLeaderDutiesPaused,
		blocked: s.blocked, gc: &evalGC{serverCore: core.named("evalgc")}, defragQueueBudget: s.cfg.Defrag.PerQueue}
}

// Jobs registers, stops, plans and evaluates jobs and runs their verbs.
func (s *Server) Jobs() *Jobs { return s.jobs }

// Nodes registers client nodes and takes their heartbeats and updates.
func (s *Server) Nodes() *Nodes { return s.nodes }

// Allocs stops single allocations.
func (s *Server) Allocs() *Allocs { return s.allocs }

// Deployments promotes, fails and pauses deployments.
func (s *Server) Deployments() *Deployments { return s.deployments }

// ACL writes tokens, policies and roles and resolves secrets.
func (s *Server) ACL() *ACL { return s.acl }

// SSO writes auth methods and binding rules and runs OIDC logins.
func (s *Server) SSO() *SSO { return s.sso }

// Keyring signs workload identities and publishes the public keys.
func (s *Server) Keyring() *Keyring { return s.keyring }

// Variables stores Nomad Variables, sealed with the keyring.
func (s *Server) Variables() *Variables { return s.variables }

// Tenancy writes namespaces, node pools and queues.
func (s *Server) Tenancy() *Tenancy { return s.tenancy }

// Services writes native service registrations.
func (s *Server) Services() *Services { return s.services }

// Operator runs the operator's cluster-wide actions (Raft peers,
// snapshots, scheduler configuration, GC, eval delete).
func (s *Server) Operator() *Operator { return s.operator }

// State returns the current state store (it changes after a snapshot
// restore, so call it for each read).
func (s *Server) State() *state.StateStore { return s.core.state() }

// Shutdown stops leader duties, then Raft. It is idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.shutdownOnce.Do(func() {
		s.cancel()
		done := make(chan struct{})
		go func() {
			s.wg.Wait()
			s.revokeLeadership()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("shutdown leader duties: %w", ctx.Err())
			return
		}
		if e := s.rs.shutdown(ctx); e != nil {
			err = fmt.Errorf("shutdown raft: %w", e)
		}
	})
	return err
}

// Stats returns "raft", "broker" and "runtime" sections for /v1/agent/self.
func (s *Server) Stats() map[string]map[string]string {
	bs := s.broker.Stats()
	bl := s.blocked.Stats()
	return map[string]map[string]string{
		"raft": s.rs.raft.Stats(),
		"broker": {
			"total_ready": fmt.Sprint(bs.TotalReady), "total_unacked": fmt.Sprint(bs.TotalUnacked),
			"total_pending": fmt.Sprint(bs.TotalPending), "total_delayed": fmt.Sprint(bs.TotalDelayed),
			"total_blocked": fmt.Sprint(bl.TotalBlocked), "total_escaped": fmt.Sprint(bl.TotalEscaped),
			"plan_queue_depth": fmt.Sprint(s.planQueue.Depth()),
		},
		"runtime": {
			"goroutines": fmt.Sprint(runtime.NumGoroutine()), "cpu_count": fmt.Sprint(runtime.NumCPU()),
			"version": runtime.Version(),
		},
		"server": {"leader": fmt.Sprint(s.IsLeader()), "schedulers": fmt.Sprint(s.cfg.NumSchedulers),
			"known_nodes": fmt.Sprint(s.hb.count())},
	}
}

// newID returns a random UUID.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
