package client

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/drover/drover/agent/allocrunner"
	"github.com/drover/drover/agent/clientstate"
	"github.com/drover/drover/agent/fingerprint"
	"github.com/drover/drover/agent/gpushare"
	"github.com/drover/drover/agent/network"
	"github.com/drover/drover/agent/services"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// Client is the client role.
type Client struct {
	cfg     Config
	log     *slog.Logger
	db      *clientstate.DB
	servers *servers
	drivers map[string]drivers.Driver
	devices DeviceSource // nil without device fingerprinting
	handler http.Handler

	mu        sync.Mutex
	node      *api.Node
	runners   map[string]*allocrunner.AllocRunner
	seenIndex map[string]uint64 // alloc ID -> AllocModifyIndex last applied

	dirtyMu sync.Mutex
	dirty   map[string]bool
	// failedAllocs have no runner (failed setup, stopped before they
	// ran); each status is reported once.
	failedAllocs []*api.Allocation
	dirtyCh      chan struct{}

	// gpuUsage is each running alloc's GPU usage last queued to send
	// (gpuusage.go), under gpuMu.
	gpuMu    sync.Mutex
	gpuUsage map[string]*api.GPUUsage

	// Last successful heartbeat and its TTL (disconnect.go); hbCh is
	// signalled after each.
	hbMu   sync.Mutex
	hbLast time.Time
	hbTTL  time.Duration
	hbCh   chan struct{}
	// awayStopped: allocs this client stopped while cut off (under mu).
	awayStopped map[string]bool

	// dynMeta is the dynamic node metadata (nodemeta.go; under mu);
	// metaMu serialises applying it.
	dynMeta map[string]*string
	metaMu  sync.Mutex

	// registrar keeps the servers' service registrations of this node.
	registrar *services.Registrar
	// network builds the allocs' bridge networks.
	network *network.Manager
	// mps runs the MPS daemons of GPUs shared in MPS mode.
	mps *gpushare.Manager

	registerCh   chan struct{} // node changed: re-register
	registeredCh chan struct{} // closed after the first registration
	regOnce      sync.Once

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // loops
	arWG   sync.WaitGroup // alloc runners
}

// New opens the client state, loads or creates the node identity, builds
// the drivers and fingerprints the node. Start runs it.
func New(cfg *Config) (*Client, error) {
	if cfg == nil || cfg.DataDir == "" {
		return nil, fmt.Errorf("client config: %w", api.Errorf(api.ErrBadRequest, "data dir is required"))
	}
	c := &Client{cfg: *cfg}
	c.cfg.defaults()
	c.log = c.cfg.Logger.With("component", "client")
	if err := os.MkdirAll(filepath.Join(c.cfg.DataDir, "alloc"), 0o755); err != nil {
		return nil, fmt.Errorf("client data dir: %w", err)
	}
	db, err := clientstate.Open(c.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	c.db = db
	id, err := db.Identity()
	if errors.Is(err, clientstate.ErrNotFound) {
		id = &clientstate.Identity{NodeID: newUUID(), SecretID: newUUID()}
		if err := db.PutIdentity(id); err != nil {
			db.Close()
			return nil, fmt.Errorf("persist node identity: %w", err)
		}
	} else if err != nil {
		db.Close()
		return nil, err
	}
	c.network = network.New(filepath.Join(c.cfg.DataDir, "network"), nil)
	c.mps = gpushare.New(gpushare.Config{Dir: filepath.Join(c.cfg.DataDir, "mps"), Logger: c.cfg.Logger})
	c.servers = newServers(c.cfg.ServerScheme, c.cfg.Servers)
	c.registrar = services.NewRegistrar(func(ctx context.Context, req *api.NodeServicesRequest) error {
		return c.servers.do(ctx, func(cl *api.Client) error {
			_, err := cl.UpdateNodeServices(ctx, id.NodeID, req)
			return err
		})
	}, c.cfg.Clock, c.cfg.Logger)
	c.servers.http = c.cfg.HTTPClient
	c.servers.setSecret(id.SecretID)
	c.drivers = map[string]drivers.Driver{}
	for name, f := range c.cfg.Drivers {
		if name == "raw_exec" && !c.cfg.DevMode && !truthy(c.cfg.Options["driver.raw_exec.enable"]) {
			continue
		}
		d, err := f(drivers.Options{Logger: c.cfg.Logger.With("driver", name), Config: c.cfg.PluginConfig[name],
			DataDir: filepath.Join(c.cfg.DataDir, "drivers", name), DevMode: c.cfg.DevMode, ClientOptions: c.cfg.Options})
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("driver %q: %w", name, err)
		}
		c.drivers[name] = d
	}
	if c.cfg.Devices != nil {
		ds, err := c.cfg.Devices(id.NodeID)
		if err != nil {
			c.closeDrivers()
			db.Close()
			return nil, fmt.Errorf("device fingerprint: %w", err)
		}
		c.devices = ds
	}
	if c.dynMeta, err = db.NodeMeta(); err != nil {
		c.closeDrivers()
		c.closeDevices()
		db.Close()
		return nil, err
	}
	node, err := c.buildNode(context.Background(), id)
	if err != nil {
		c.closeDrivers()
		c.closeDevices()
		db.Close()
		return nil, err
	}
	c.node = node
	c.runners = map[string]*allocrunner.AllocRunner{}
	c.seenIndex = map[string]uint64{}
	c.awayStopped = map[string]bool{}
	c.hbCh = make(chan struct{}, 1)
	c.dirty = map[string]bool{}
	c.dirtyCh = make(chan struct{}, 1)
	c.gpuUsage = map[string]*api.GPUUsage{}
	c.registerCh = make(chan struct{}, 1)
	c.registeredCh = make(chan struct{})
	c.handler = c.routes()
	c.hookDriverEvents()
	return c, nil
}

func truthy(s string) bool {
	b, err := strconv.ParseBool(s)
	return err == nil && b
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (c *Client) buildNode(ctx context.Context, id *clientstate.Identity) (*api.Node, error) {
	host, err := c.fingerprintHost()
	if err != nil {
		return nil, err
	}
	infos, dattrs := fingerprint.FingerprintDrivers(ctx, c.drivers, c.cfg.Clock.Now())
	name := c.cfg.NodeName
	if name == "" {
		name = host.Attributes["unique.hostname"]
	}
	attrs := host.Attributes
	maps.Copy(attrs, dattrs)
	attrs["unique.name"] = name
	if os.Geteuid() == 0 && network.Available(nil) == nil {
		attrs[api.AttrBridgeNetwork] = "true" // Nomad names it plugins.cni.version.bridge
	}
	var gpus []*api.NodeGPU
	if c.devices != nil {
		host.Resources.Devices = c.devices.Devices()
		if m, ok := c.devices.(MIGApplier); ok {
			gpus = m.GPUs()
		}
	}
	return &api.Node{
		ID: id.NodeID, SecretID: id.SecretID, Datacenter: c.cfg.Datacenter, Name: name, HTTPAddr: c.cfg.HTTPAddr,
		Attributes: attrs, NodeResources: host.Resources, Meta: mergeMeta(c.cfg.Meta, c.dynMeta), NodeClass: c.cfg.NodeClass,
		NodePool: c.cfg.NodePool, SchedulingEligibility: api.NodeSchedulingEligible, Status: api.NodeStatusReady,
		Drivers: infos, HostVolumes: maps.Clone(c.cfg.HostVolumes), GPUs: gpus,
	}, nil
}

// fingerprintHost reads the host, as Config.Host adjusts it.
func (c *Client) fingerprintHost() (*fingerprint.Host, error) {
	h, err := fingerprint.FingerprintHost(fingerprint.HostConfig{DataDir: c.cfg.DataDir, BindAddr: c.cfg.BindAddr, DevMode: c.cfg.DevMode})
	if err == nil && c.cfg.Host != nil {
		c.cfg.Host(h)
	}
	return h, err
}

// NodeID is this node's ID (stable across restarts).
func (c *Client) NodeID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node.ID
}

// Node returns a copy of the node as last fingerprinted.
func (c *Client) Node() *api.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node.Copy()
}

// Registered returns a channel closed once the node first registered
// with a server (after Start).
func (c *Client) Registered() <-chan struct{} { return c.registeredCh }

// HasAlloc reports whether this client runs (or ran) the allocation.
func (c *Client) HasAlloc(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.runners[id]
	return ok
}

// AllocNamespace is the namespace of an allocation this client holds
// (ok false for one it does not): its agent checks a caller's capability
// there, whatever namespace the request names.
func (c *Client) AllocNamespace(id string) (string, bool) {
	c.mu.Lock()
	r := c.runners[id]
	c.mu.Unlock()
	if r == nil {
		return "", false
	}
	ns := r.Alloc().Namespace
	if ns == "" {
		ns = api.DefaultNamespace
	}
	return ns, true
}

// NodeSecret is this node's secret, the key of the grants its servers
// send with the requests they forward (agent/http).
func (c *Client) NodeSecret() string {
	_, _, secret := c.servers.snapshot()
	return secret
}

// Handler serves /v1/client/....
func (c *Client) Handler() http.Handler { return c.handler }

// Start restores allocations from the state file and starts the loops.
func (c *Client) Start(ctx context.Context) error {
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	allocs, err := c.db.Allocs()
	if err != nil {
		return fmt.Errorf("restore allocations: %w", err)
	}
	c.reportLeftovers(c.ctx, allocs)
	c.restoreMPS(c.ctx, allocs)
	for _, a := range allocs {
		if err := c.startRunner(a, true); err != nil {
			c.log.Error("restore allocation", "alloc_id", a.ID, "error", err)
		}
	}
	loops := []func(context.Context){c.registerLoop, c.watchLoop, c.updateLoop, c.fingerprintLoop, c.disconnectLoop, c.registrar.Run}
	if c.devices != nil {
		loops = append(loops, c.deviceLoop, c.gpuLoop)
	}
	if _, ok := migCapable(c.devices); ok {
		loops = append(loops, c.migLoop)
	}
	for _, loop := range loops {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			loop(c.ctx)
		}()
	}
	return nil
}

// Shutdown stops the loops and alloc runners. Tasks keep running so the
// next agent reattaches, unless Config.StopAllocsOnShutdown is set (a dev
// agent with a temporary data dir), where every alloc is stopped first.
func (c *Client) Shutdown(ctx context.Context) error {
	if c.cancel == nil {
		c.closeDrivers()
		c.closeDevices()
		return c.db.Close()
	}
	if c.cfg.StopAllocsOnShutdown {
		c.mu.Lock()
		rs := make([]*allocrunner.AllocRunner, 0, len(c.runners))
		for _, r := range c.runners {
			rs = append(rs, r)
		}
		c.mu.Unlock()
		for _, r := range rs {
			r.Kill()
		}
		for _, r := range rs {
			select {
			case <-r.WaitCh():
			case <-ctx.Done():
			}
		}
	}
	c.cancel()
	c.unhookDriverEvents()
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		c.arWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("client shutdown: %w", ctx.Err())
	}
	// Runners are stopped or detached: drivers may let go of their
	// connections and goroutines (their tasks keep running).
	c.closeDrivers()
	c.closeDevices()
	return c.db.Close()
}

// lookupService reads a native service from the servers for templates
// (a blocking query when index > 0).
func (c *Client) lookupService(ctx context.Context, ns, name string, index uint64, wait time.Duration) ([]*api.ServiceRegistration, uint64, error) {
	var regs []*api.ServiceRegistration
	var qm *api.QueryMeta
	err := c.servers.do(ctx, func(cl *api.Client) error {
		var err error
		regs, qm, err = cl.Service(ctx, name, &api.QueryOptions{Namespace: ns, WaitIndex: index, WaitTime: wait})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return regs, qm.LastIndex, nil
}

// signIdentities asks the servers for a task's workload identities.
func (c *Client) signIdentities(ctx context.Context, allocID, task string) (*api.TaskIdentityResponse, error) {
	var out *api.TaskIdentityResponse
	err := c.servers.do(ctx, func(cl *api.Client) error {
		var err error
		out, err = cl.SignIdentities(ctx, c.NodeID(), &api.TaskIdentityRequest{AllocID: allocID, Task: task})
		return err
	})
	return out, err
}

// startRunner creates and runs an alloc runner.
func (c *Client) startRunner(a *api.Allocation, restore bool) error {
	c.mu.Lock()
	node := c.node.Copy()
	c.mu.Unlock()
	ar, err := allocrunner.New(allocrunner.Config{
		Alloc: a, AllocDir: filepath.Join(c.cfg.DataDir, "alloc", a.ID), Node: node, Region: c.cfg.Region,
		Drivers: c.drivers, Clock: c.cfg.Clock, Logger: c.cfg.Logger, Store: c.db, Restore: restore,
		OnUpdate: c.markDirty, Services: c.registrar, ServiceLookup: c.lookupService, Variables: varReader{c},
		Identities: c.signIdentities, Network: c.network, MPS: c.mps,
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.runners[a.ID] = ar
	c.seenIndex[a.ID] = a.AllocModifyIndex
	c.mu.Unlock()
	c.arWG.Add(1)
	go func() {
		defer c.arWG.Done()
		ar.Run(c.ctx)
	}()
	c.markDirty(a.ID)
	return nil
}

func (c *Client) markDirty(id string) {
	c.dirtyMu.Lock()
	c.dirty[id] = true
	c.dirtyMu.Unlock()
	select {
	case c.dirtyCh <- struct{}{}:
	default:
	}
}

func (c *Client) runner(id string) (*allocrunner.AllocRunner, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ar, ok := c.runners[id]; ok {
		return ar, nil
	}
	return nil, fmt.Errorf("allocation %q: %w", id, api.ErrAllocNotFound)
}

// closeDrivers calls Close on each driver that has one (containerd's
// connection, qemu's monitors). Drivers must not stop tasks on Close.
func (c *Client) closeDrivers() {
	for name, d := range c.drivers {
		if cl, ok := d.(io.Closer); ok {
			if err := cl.Close(); err != nil {
				c.log.Warn("close driver", "driver", name, "error", err)
			}
		}
	}
}

func (c *Client) closeDevices() {
	if cl, ok := c.devices.(io.Closer); ok {
		if err := cl.Close(); err != nil {
			c.log.Warn("close device fingerprinter", "error", err)
		}
	}
}
