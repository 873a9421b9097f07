package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/drover/drover/agent/gossip"
)

// Tags every member of the WAN pool carries.
const (
	TagRole     = "role"      // always "server"
	TagPool     = "pool"      // always PoolWAN: a LAN member is refused
	TagRegion   = "region"    // the member's region
	TagDC       = "dc"        // its datacenter
	TagBuild    = "build"     // its drover version
	TagID       = "id"        // its Raft server ID
	TagRaftAddr = "raft_addr" // its Raft address (host:port)
	TagHTTPAddr = "http_addr" // its HTTP API address (host:port)
	TagTLS      = "tls"       // "1" when its HTTP API speaks TLS
)

// PoolWAN is the TagPool value of the WAN pool.
const PoolWAN = "wan"

// ErrNotServer is Accept's answer to a member that is not a WAN server.
var ErrNotServer = errors.New("federation: not a server of the WAN pool")

// Config configures this server's membership of the WAN pool.
type Config struct {
	// Name is the server's node name; its member is "Name.Region".
	Name       string
	Region     string
	Datacenter string
	Build      string
	// ID, RaftAddr and HTTPAddr are the server's (HTTPAddr host:port,
	// what servers of other regions forward requests to); TLS says
	// whether that API speaks TLS.
	ID, RaftAddr, HTTPAddr string
	TLS                    bool
	// BindAddr, BindPort and AdvertiseAddr are the WAN gossip address
	// (port 0: a free one, see Addr).
	BindAddr      string
	BindPort      int
	AdvertiseAddr string
	// Keys and KeyringFile are the gossip encryption keys (the same key
	// as the LAN pool's; see gossip.Config).
	Keys        [][]byte
	KeyringFile string
	// Local selects loopback timings (tests, one host); otherwise WAN ones.
	Local  bool
	Logger *slog.Logger
}

// Server is one member of the WAN pool.
type Server struct {
	Name       string // "node.region"
	Region     string
	Datacenter string
	Build      string
	ID         string
	RaftAddr   string
	HTTPAddr   string
	TLS        bool
	// Addr and Port are its WAN gossip address.
	Addr string
	Port uint16
	// Status is gossip's: alive, leaving, left or failed.
	Status string
	Tags   map[string]string
}

// Federation is this server's membership of the WAN pool.
type Federation struct {
	cfg Config
	g   *gossip.Gossip
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Accept admits only WAN servers (a join to a LAN port fails instead of
// merging the pools).
func Accept(m gossip.Member) error {
	if m.Tags[TagRole] != "server" || m.Tags[TagPool] != PoolWAN || m.Tags[TagRegion] == "" {
		return fmt.Errorf("member %s (role %q, pool %q, region %q): %w",
			m.Name, m.Tags[TagRole], m.Tags[TagPool], m.Tags[TagRegion], ErrNotServer)
	}
	return nil
}

// New starts this server's WAN gossip; it joins nobody (Join, RetryJoin,
// JoinPeers).
func New(cfg Config) (*Federation, error) {
	if cfg.Name == "" || cfg.Region == "" {
		return nil, errors.New("federation: a node name and a region are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tls := ""
	if cfg.TLS {
		tls = "1"
	}
	g, err := gossip.New(gossip.Config{
		Name: cfg.Name + "." + cfg.Region, BindAddr: cfg.BindAddr, BindPort: cfg.BindPort,
		AdvertiseAddr: cfg.AdvertiseAddr, AdvertisePort: cfg.BindPort,
		Tags: map[string]string{
			TagRole: "server", TagPool: PoolWAN, TagRegion: cfg.Region, TagDC: cfg.Datacenter, TagBuild: cfg.Build,
			TagID: cfg.ID, TagRaftAddr: cfg.RaftAddr, TagHTTPAddr: cfg.HTTPAddr, TagTLS: tls,
		},
		Keys: cfg.Keys, KeyringFile: cfg.KeyringFile, Local: cfg.Local, WAN: true,
		Accept: Accept, Logger: cfg.Logger.With("pool", "wan"),
	})
	if err != nil {
		return nil, fmt.Errorf("federation: %w", err)
	}
	f := &Federation{cfg: cfg, g: g, log: cfg.Logger.With("component", "federation")}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f, nil
}

// Region is this server's region.
func (f *Federation) Region() string { return f.cfg.Region }

// Addr is this server's advertised WAN gossip address (host:port).
func (f *Federation) Addr() string { return f.g.Addr() }

// Join contacts WAN gossip addresses (host:port) of servers, of any
// region, and returns how many answered; it fails only when none did
// (or when what answered is not a WAN pool: a LAN gossip port).
func (f *Federation) Join(ctx context.Context, addrs []string) (int, error) {
	return f.g.Join(ctx, addrs)
}

// RetryJoin joins addrs in the background until one answers.
func (f *Federation) RetryJoin(addrs []string, interval time.Duration) {
	f.g.RetryJoin(addrs, interval, nil)
}

// Changed signals (coalesced, never blocking) after any WAN member
// joins, changes, fails, leaves or is reaped.
func (f *Federation) Changed() <-chan struct{} { return f.g.Changed() }

// Servers lists every member of the WAN pool, every status, sorted by
// name (this server included).
func (f *Federation) Servers() []Server {
	ms := f.g.Members()
	out := make([]Server, 0, len(ms))
	for _, m := range ms {
		out = append(out, toServer(m))
	}
	return out
}

func toServer(m gossip.Member) Server {
	t := m.Tags
	return Server{
		Name: m.Name, Region: t[TagRegion], Datacenter: t[TagDC], Build: t[TagBuild], ID: t[TagID],
		RaftAddr: t[TagRaftAddr], HTTPAddr: t[TagHTTPAddr], TLS: t[TagTLS] == "1",
		Addr: m.Addr, Port: m.Port, Status: m.Status, Tags: t,
	}
}

// Regions lists the known regions, sorted: this server's and every
// region with a member in the pool (alive or not: a region whose servers
// all failed is still known, and unavailable, until they are reaped).
func (f *Federation) Regions() []string {
	out := []string{f.cfg.Region}
	for _, s := range f.Servers() {
		if s.Status != gossip.StatusLeft && !slices.Contains(out, s.Region) {
			out = append(out, s.Region)
		}
	}
	slices.Sort(out)
	return out
}

// RegionServers returns the HTTP addresses (host:port) of region's alive
// servers, and whether the region is known at all: known with no
// address means every server of it is down or leaving.
func (f *Federation) RegionServers(region string) (addrs []string, known bool) {
	known = region == f.cfg.Region
	for _, s := range f.Servers() {
		if s.Region != region || s.Status == gossip.StatusLeft {
			continue
		}
		known = true
		if s.Status == gossip.StatusAlive && s.HTTPAddr != "" {
			addrs = append(addrs, s.HTTPAddr)
		}
	}
	return addrs, known
}

// JoinPeers joins, each time changed signals (and once at once), the WAN
// addresses peers returns that are not yet alive in the pool: the agent
// feeds it its LAN pool's servers, so servers of one region federate
// together when any one of them joins another region. It runs until
// Shutdown.
func (f *Federation) JoinPeers(changed <-chan struct{}, peers func() []string) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			if missing := f.missing(peers()); len(missing) > 0 {
				ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
				if n, err := f.g.Join(ctx, missing); err != nil {
					f.log.Debug("join region peers in the WAN pool", "addrs", missing, "err", err)
				} else {
					f.log.Info("joined region peers in the WAN pool", "addrs", missing, "answered", n)
				}
				cancel()
			}
			select {
			case <-f.ctx.Done():
				return
			case <-changed:
			}
		}
	}()
}

// missing is the addresses of addrs no alive member of the pool has.
func (f *Federation) missing(addrs []string) []string {
	alive := map[string]bool{f.g.Addr(): true}
	for _, m := range f.g.Members() {
		if m.Status == gossip.StatusAlive {
			alive[m.Address()] = true
		}
	}
	var out []string
	for _, a := range addrs {
		if a != "" && !alive[a] && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Leave announces that this server leaves the WAN pool for good.
func (f *Federation) Leave(ctx context.Context) error { return f.g.Leave(ctx) }

// Shutdown stops the WAN gossip (others see this server fail) and waits
// for Federation's goroutines. It is idempotent.
func (f *Federation) Shutdown(ctx context.Context) error {
	var err error
	f.once.Do(func() {
		f.cancel()
		err = f.g.Shutdown(ctx)
		done := make(chan struct{})
		go func() {
			f.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = errors.Join(err, fmt.Errorf("federation: shutdown: %w", ctx.Err()))
		}
	})
	return err
}
