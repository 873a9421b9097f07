package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/internal/codec"
)

// Config is one simulator run.
type Config struct {
	// Servers are the servers' HTTP addresses ("http://127.0.0.1:4646");
	// calls go to the first and fail over to the next.
	Servers []string
	// Nodes is how many nodes to simulate.
	Nodes int
	// GPUs, when set, is an nvidia simulated server shape ("dgxh100",
	// "dgxa100:mig", as -dev-gpus) every node carries.
	GPUs string
	// Datacenters are assigned round-robin (default ["dc1"]).
	Datacenters []string
	// NodePool and NodeClass of every node (pool default DefaultNodePool,
	// which Start creates when missing).
	NodePool, NodeClass string
	// NamePrefix prefixes the node names (default "sim-"): "sim-0" ...
	NamePrefix string
	// Meta is added to every node's meta (topology.* come from the name).
	Meta map[string]string
	// Cores, CoreMHz, MemoryMB, DiskMB size each node (defaults above).
	Cores, CoreMHz   int
	MemoryMB, DiskMB int64

	// RunDelay is how long after a node first sees an alloc it reports it
	// running (0: at once).
	RunDelay time.Duration
	// CompleteAfter, when set, ends each running alloc that long after it
	// started: failed with probability FailRate, else complete. Without
	// it allocs run until the server stops them; FailRate then fails that
	// share of allocs instead of starting them.
	CompleteAfter time.Duration
	FailRate      float64

	// Seed makes node IDs, jitter and failures reproducible (default 1).
	Seed uint64
	// Workers bounds the requests in flight for registers and status
	// updates, and separately for heartbeats (default 64 each).
	Workers int
	// UpdateCoalesce is how long status changes gather before a node
	// sends them in one batch (default 200ms, as the real client).
	UpdateCoalesce time.Duration
	// AllocWait is the blocking-read wait (default 5m; the server caps it).
	AllocWait time.Duration
	// HTTP1 uses HTTP/1.1 (one connection per long poll) instead of
	// cleartext HTTP/2; the server's per-client connection limit then
	// caps the nodes.
	HTTP1 bool
	// HTTPClient overrides the shared client (tests).
	HTTPClient *http.Client
	// Logger (default discard).
	Logger *slog.Logger
}

func (c *Config) defaults() error {
	if len(c.Servers) == 0 {
		return errors.New("sim: no servers")
	}
	if c.Nodes <= 0 {
		return fmt.Errorf("sim: nodes = %d: want 1 or more", c.Nodes)
	}
	if c.FailRate < 0 || c.FailRate > 1 {
		return fmt.Errorf("sim: fail rate %g: want 0 to 1", c.FailRate)
	}
	if c.RunDelay < 0 || c.CompleteAfter < 0 {
		return errors.New("sim: run delay and complete-after must not be negative")
	}
	for i, s := range c.Servers {
		s = strings.TrimRight(strings.TrimSpace(s), "/")
		if !strings.Contains(s, "://") {
			s = "http://" + s
		}
		c.Servers[i] = s
	}
	if len(c.Datacenters) == 0 {
		c.Datacenters = []string{"dc1"}
	}
	if c.NodePool == "" {
		c.NodePool = DefaultNodePool
	}
	if c.NamePrefix == "" {
		c.NamePrefix = "sim-"
	}
	if c.Cores <= 0 {
		c.Cores = DefaultCores
	}
	if c.CoreMHz <= 0 {
		c.CoreMHz = DefaultCoreMHz
	}
	if c.MemoryMB <= 0 {
		c.MemoryMB = DefaultMemoryMB
	}
	if c.DiskMB <= 0 {
		c.DiskMB = DefaultDiskMB
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Workers <= 0 {
		c.Workers = 64
	}
	if c.UpdateCoalesce <= 0 {
		c.UpdateCoalesce = 200 * time.Millisecond
	}
	if c.AllocWait <= 0 {
		c.AllocWait = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// DefaultNodePool is the node pool of simulated nodes unless
// Config.NodePool names another. Simulated nodes run nothing, so they get
// a pool of their own: only jobs that ask for it (node_pool = "sim", or
// "all") are placed on them, never a job meant for the real nodes of the
// same cluster. Every simulated node is also marked by its attribute
// drover.sim = "true" and version "sim".
const DefaultNodePool = "sim"

// ensurePool creates the nodes' pool when it is not a built-in one and
// does not exist yet: the servers refuse a job in a pool that does not
// exist, and do not create the pools nodes name. A pool that exists is
// left as it is. Creating one needs a management token where ACLs are
// on, which the simulator does not hold: then it says so and goes on.
func (s *Sim) ensurePool(ctx context.Context) {
	name := s.cfg.NodePool
	if api.IsBuiltinNodePool(name) {
		return
	}
	err := s.do(ctx, "", func(c *api.Client) error {
		var p api.NodePool
		_, err := c.Query(ctx, "/v1/node/pool/"+url.PathEscape(name), &p, nil)
		var ae *api.Error
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return c.Write(ctx, "PUT", "/v1/node/pools", &api.NodePool{Name: name,
				Description: "Simulated nodes (drover sim): they run nothing."}, nil, nil)
		}
		return err
	})
	if err != nil {
		s.log.Warn("could not create the simulated nodes' node pool: jobs cannot ask for it until it exists (drover node pool apply)",
			"pool", name, "error", err)
	}
}

// Stats are the simulator's counters; Running is a gauge, the rest count
// since Start.
type Stats struct {
	Nodes, Registered int
	// Running allocs now; Started, Completed and Failed ever reported.
	Running, Started, Completed, Failed int64
	// Heartbeats sent, HeartbeatErrors among them, and MissedHeartbeats:
	// heartbeats that succeeded later than the TTL after the previous one.
	Heartbeats, HeartbeatErrors, MissedHeartbeats int64
	// AllocReads answered, UpdateBatches sent and UpdateErrors.
	AllocReads, UpdateBatches, UpdateErrors int64
}

// Sim is a running simulator.
type Sim struct {
	cfg    Config
	log    *slog.Logger
	http   *http.Client
	nodes  []*simNode
	timers *timerHeap
	work   chan func() // registers and status updates
	hbWork chan func() // heartbeats: never queued behind slow updates

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	dirtyMu sync.Mutex
	dirty   map[*simNode]struct{}

	cur atomic.Int32 // index of the server calls go to

	running, started, completed, failed     atomic.Int64
	heartbeats, heartbeatErrors, missed     atomic.Int64
	allocReads, updateBatches, updateErrors atomic.Int64
	registered                              atomic.Int64
}

// Start registers cfg.Nodes nodes (Workers at a time) and returns once
// all are registered, with their heartbeats, alloc watches and status
// updates running until Stop or ctx ends.
func Start(ctx context.Context, cfg Config) (*Sim, error) {
	cfg.Servers = append([]string(nil), cfg.Servers...)
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, log: cfg.Logger.With("component", "sim"), timers: newTimerHeap(),
		work: make(chan func()), hbWork: make(chan func()), dirty: map[*simNode]struct{}{}}
	s.http = cfg.HTTPClient
	if s.http == nil {
		s.http = newHTTPClient(cfg.HTTP1)
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.nodes = make([]*simNode, cfg.Nodes)
	for i := range s.nodes {
		n, err := buildNode(&s.cfg, i)
		if err != nil {
			return nil, err
		}
		s.nodes[i] = newSimNode(s, i, n)
	}
	for range cfg.Workers {
		s.wg.Add(1)
		go s.worker(s.work)
	}
	for range cfg.Workers { // heartbeats: a pool of their own, as wide
		s.wg.Add(1)
		go s.worker(s.hbWork)
	}
	s.wg.Add(2)
	go s.timerLoop()
	go s.flushLoop()
	s.ensurePool(ctx)
	if err := s.registerAll(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	for _, n := range s.nodes {
		s.wg.Add(1)
		go n.watchLoop()
	}
	s.log.Info("simulated nodes registered", "nodes", len(s.nodes), "gpus", cfg.GPUs)
	return s, nil
}

// registerAll registers every node, Workers at a time; the first error
// that is not retried away within the node's attempts ends it.
func (s *Sim) registerAll(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	for _, n := range s.nodes {
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		ok := s.submit(func() {
			defer wg.Done()
			if err := n.register(ctx, 10); err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
		if !ok {
			wg.Done()
		}
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sim: register nodes: %w", err)
	}
	return nil
}

// submit hands fn to a worker (blocking while all are busy); false when
// the simulator stopped first.
func (s *Sim) submit(fn func()) bool {
	select {
	case s.work <- fn:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// submitHB hands fn to a heartbeat worker.
func (s *Sim) submitHB(fn func()) {
	select {
	case s.hbWork <- fn:
	case <-s.ctx.Done():
	}
}

func (s *Sim) worker(work <-chan func()) {
	defer s.wg.Done()
	for {
		select {
		case fn := <-work:
			fn()
		case <-s.ctx.Done():
			return
		}
	}
}

// Stop ends every loop and waits for them. Nodes are not deregistered:
// the servers see them miss their heartbeats, as with real clients that
// vanish.
func (s *Sim) Stop() {
	s.cancel()
	s.timers.nudge()
	s.wg.Wait()
	if s.cfg.HTTPClient == nil {
		s.http.CloseIdleConnections()
	}
}

// Stats returns the counters now.
func (s *Sim) Stats() Stats {
	return Stats{Nodes: len(s.nodes), Registered: int(s.registered.Load()),
		Running: s.running.Load(), Started: s.started.Load(), Completed: s.completed.Load(), Failed: s.failed.Load(),
		Heartbeats: s.heartbeats.Load(), HeartbeatErrors: s.heartbeatErrors.Load(), MissedHeartbeats: s.missed.Load(),
		AllocReads: s.allocReads.Load(), UpdateBatches: s.updateBatches.Load(), UpdateErrors: s.updateErrors.Load()}
}

// NodeIDs are the simulated nodes' IDs, in node order.
func (s *Sim) NodeIDs() []string {
	ids := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		ids[i] = n.node.ID
	}
	return ids
}

// Kill stops simulating the given nodes (by index): they stop
// heartbeating and watching, as if the hosts died, so the servers mark
// them down when their TTLs run out.
func (s *Sim) Kill(idx ...int) {
	for _, i := range idx {
		if i >= 0 && i < len(s.nodes) {
			s.nodes[i].kill()
		}
	}
}

// client is an API client for the current server carrying secret.
func (s *Sim) client(secret string) (*api.Client, string) {
	i := int(s.cur.Load()) % len(s.cfg.Servers)
	addr := s.cfg.Servers[i]
	c := api.NewClient(addr)
	c.HTTP = s.http
	c.JSON = codec.API
	if secret != "" {
		c.Headers = http.Header{api.NodeSecretHeader: []string{secret}}
	}
	return c, addr
}

// do calls fn against the current server, failing over to the next ones
// on transport errors and 5xx answers (as agent/client does).
func (s *Sim) do(ctx context.Context, secret string, fn func(*api.Client) error) error {
	var errs []error
	for range s.cfg.Servers {
		c, addr := s.client(secret)
		err := fn(c)
		if err == nil || ctx.Err() != nil || !retryable(err) {
			return err
		}
		errs = append(errs, err)
		for i, a := range s.cfg.Servers {
			if a == addr {
				s.cur.CompareAndSwap(int32(i), int32((i+1)%len(s.cfg.Servers)))
			}
		}
	}
	return errors.Join(errs...)
}

func retryable(err error) bool {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status >= 500
	}
	return true
}

// newHTTPClient is the transport all nodes share: cleartext HTTP/2 with
// prior knowledge (many streams per connection), or HTTP/1.1.
func newHTTPClient(http1 bool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.MaxIdleConns = 1024
	if !http1 {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
		tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerConnection: 4 << 20}
		// The transport dials for every request that finds no
		// connection with a free stream: 10,000 nodes starting their
		// long polls at once dialed ~25,000 connections, nearly all
		// closed again at once. 96 connections of 250 streams (the
		// servers' limit) carry 24,000 requests, within the servers'
		// default limits.http_max_conns_per_client (100).
		tr.MaxConnsPerHost = 96
	}
	return &http.Client{Transport: tr}
}
