package gossip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Member statuses, as Nomad's `server members` shows them.
const (
	StatusAlive   = "alive"
	StatusLeaving = "leaving"
	StatusLeft    = "left"
	StatusFailed  = "failed"
)

// ErrTagsTooLarge is returned when the encoded tags exceed memberlist's
// node metadata limit (512 bytes).
var ErrTagsTooLarge = errors.New("gossip: encoded tags exceed 512 bytes")

// Config configures a gossip member.
type Config struct {
	// Name is unique in the cluster (the agent uses "name.region").
	Name string
	// BindAddr and BindPort are where gossip listens (UDP and TCP). Port 0
	// picks a free port (see Addr).
	BindAddr string
	BindPort int
	// AdvertiseAddr/Port are what other members dial (default: bind).
	AdvertiseAddr string
	AdvertisePort int
	// Tags are gossiped with the member (see SetTags).
	Tags map[string]string
	// Keys are gossip encryption keys (16, 24 or 32 bytes); the first is
	// the primary one. None: gossip is not encrypted.
	Keys [][]byte
	// KeyringFile, when set, persists the keyring after every change and
	// is loaded at start (it then wins over Keys), so a rotated key
	// survives a restart.
	KeyringFile string
	// Local selects memberlist's fast loopback timings (tests, one host);
	// WAN its timings for members far apart (the servers' pool across
	// regions). Neither: LAN timings.
	Local bool
	WAN   bool
	// Accept, when set, decides which members may be in the pool: a
	// member it refuses is never added, and a join whose answer holds one
	// fails (memberlist's alive and merge delegates). The agent refuses
	// servers of another region in its LAN pool, and LAN members in its
	// WAN pool, so two pools never merge by a join to the wrong port.
	Accept func(Member) error
	// ReconnectInterval is how often a failed member is dialled again
	// (default 30 s); ReconnectTimeout how long a failed member is kept
	// before it is reaped (default 72 h); LeftTimeout how long a member
	// that left is listed (default 5 min).
	ReconnectInterval time.Duration
	ReconnectTimeout  time.Duration
	LeftTimeout       time.Duration
	Logger            *slog.Logger
	// tune adjusts memberlist's config (tests).
	tune func(*memberlist.Config)
}

// Member is one member of the gossip pool.
type Member struct {
	Name   string
	Addr   string
	Port   uint16
	Tags   map[string]string
	Status string
	// Protocol versions (memberlist's and the delegate's).
	ProtocolMin, ProtocolMax, ProtocolCur uint8
	DelegateMin, DelegateMax, DelegateCur uint8
}

// Address is host:port of the member's gossip endpoint.
func (m Member) Address() string { return net.JoinHostPort(m.Addr, strconv.Itoa(int(m.Port))) }

type memberState struct {
	Member
	since time.Time // of the last status change
}

// Gossip is this process's membership in the gossip pool.
type Gossip struct {
	cfg  Config
	log  *slog.Logger
	ml   *memberlist.Memberlist
	keys *memberlist.Keyring // nil without encryption

	mu      sync.Mutex
	tags    map[string]string
	members map[string]*memberState
	subs    []chan struct{}
	leaving bool
	// nameConflicts counts members seen with this pool's names at other
	// addresses (see conflicts).
	nameConflicts int
	// leaveIntents names members that announced they leave.
	leaveIntents map[string]bool

	keyOps keyOps
	addr   string // advertised host:port

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	shutdownOnce sync.Once
}

// New starts memberlist on the configured address. It does not join
// anyone: call Join or RetryJoin.
func New(cfg Config) (*Gossip, error) {
	if cfg.Name == "" {
		return nil, errors.New("gossip: a node name is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReconnectInterval <= 0 {
		cfg.ReconnectInterval = 30 * time.Second
	}
	if cfg.ReconnectTimeout <= 0 {
		cfg.ReconnectTimeout = 72 * time.Hour
	}
	if cfg.LeftTimeout <= 0 {
		cfg.LeftTimeout = 5 * time.Minute
	}
	g := &Gossip{
		cfg: cfg, log: cfg.Logger.With("component", "gossip"),
		tags: maps.Clone(cfg.Tags), members: map[string]*memberState{},
		leaveIntents: map[string]bool{},
	}
	if g.tags == nil {
		g.tags = map[string]string{}
	}
	if _, err := encodeTags(g.tags); err != nil {
		return nil, err
	}
	g.keyOps.init()
	kr, err := g.loadKeyring()
	if err != nil {
		return nil, err
	}
	g.keys = kr

	mc := memberlist.DefaultLANConfig()
	if cfg.WAN {
		mc = memberlist.DefaultWANConfig()
	}
	if cfg.Local {
		mc = memberlist.DefaultLocalConfig()
	}
	mc.Name = cfg.Name
	mc.BindAddr = cfg.BindAddr
	if mc.BindAddr == "" {
		mc.BindAddr = "0.0.0.0"
	}
	mc.BindPort = cfg.BindPort
	mc.AdvertiseAddr = cfg.AdvertiseAddr
	mc.AdvertisePort = cfg.AdvertisePort
	if mc.AdvertisePort == 0 {
		mc.AdvertisePort = cfg.BindPort
	}
	// A restarted member may come back on another address under its name.
	mc.DeadNodeReclaimTime = 10 * time.Second
	mc.Delegate = &delegate{g: g}
	mc.Events = &events{g: g}
	mc.Conflict = &conflicts{g: g}
	if cfg.Accept != nil {
		mc.Alive = &acceptor{accept: cfg.Accept}
		mc.Merge = &acceptor{accept: cfg.Accept}
	}
	mc.Logger = newStdLogger(g.log)
	if kr != nil {
		mc.Keyring = kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	if cfg.tune != nil {
		cfg.tune(mc)
	}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	ml, err := memberlist.Create(mc)
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("gossip: start memberlist on %s:%d: %w", mc.BindAddr, cfg.BindPort, err)
	}
	g.ml = ml
	// memberlist's nodes change under its own lock: read ours once, now.
	ln := ml.LocalNode()
	g.addr = net.JoinHostPort(ln.Addr.String(), strconv.Itoa(int(ln.Port)))
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		g.maintain()
	}()
	go func() {
		defer g.wg.Done()
		g.keyWorker()
	}()
	return g, nil
}

// Addr is the advertised gossip address (host:port) of this member.
func (g *Gossip) Addr() string {
	return g.addr
}

// NameConflicts reports how many times a member was seen under a name
// already known at another address.
func (g *Gossip) NameConflicts() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nameConflicts
}

// Name is this member's name.
func (g *Gossip) Name() string { return g.cfg.Name }

// Join contacts the given gossip addresses (host:port) and returns how
// many answered; it fails only when none did.
func (g *Gossip) Join(ctx context.Context, addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, nil
	}
	type result struct {
		n   int
		err error
	}
	ch := make(chan result, 1)
	// memberlist.Join has no context; its dials are bounded by TCPTimeout.
	go func() {
		n, err := g.ml.Join(addrs)
		ch <- result{n, err}
	}()
	select {
	case r := <-ch:
		if r.n == 0 && r.err != nil {
			return 0, fmt.Errorf("gossip: join %v: %w", addrs, r.err)
		}
		if r.err != nil {
			g.log.Warn("some join addresses did not answer", "joined", r.n, "err", r.err)
		}
		return r.n, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("gossip: join %v: %w", addrs, ctx.Err())
	}
}

// joinTargets drops our own address: it would "answer" a join and end
// the retries with nobody else met.
func (g *Gossip) joinTargets(addrs []string) []string {
	return slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == g.addr })
}

// RetryJoin joins addrs in the background, retrying every interval until
// at least one answers or Gossip shuts down. done (optional) is called
// once with the number joined.
func (g *Gossip) RetryJoin(addrs []string, interval time.Duration, done func(n int)) {
	addrs = g.joinTargets(addrs)
	if len(addrs) == 0 {
		return
	}
	if interval <= 0 {
		interval = 2 * time.Second
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
			n, err := g.Join(ctx, addrs)
			cancel()
			if err == nil && n > 0 {
				g.log.Info("joined gossip pool", "addrs", addrs, "answered", n)
				if done != nil {
					done(n)
				}
				return
			}
			g.log.Warn("gossip join failed, retrying", "addrs", addrs, "attempt", attempt, "err", err, "retry_in", interval)
			select {
			case <-g.ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
}

// Members returns every known member (alive, leaving, failed and left
// ones until they are reaped), sorted by name. The caller may keep it.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	out := make([]Member, 0, len(g.members))
	for _, m := range g.members {
		c := m.Member
		c.Tags = maps.Clone(m.Tags)
		out = append(out, c)
	}
	g.mu.Unlock()
	slices.SortFunc(out, func(a, b Member) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// LocalMember is this member as the pool sees it.
func (g *Gossip) LocalMember() Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	var m Member
	if st, ok := g.members[g.cfg.Name]; ok {
		m = st.Member
		m.Tags = maps.Clone(st.Tags)
	} else {
		host, port, _ := net.SplitHostPort(g.addr)
		p, _ := strconv.Atoi(port)
		m = Member{Name: g.cfg.Name, Addr: host, Port: uint16(p), Status: StatusAlive, Tags: maps.Clone(g.tags)}
	}
	if g.leaving {
		m.Status = StatusLeaving
	}
	return m
}

// Changed returns a channel that receives (without ever blocking the
// sender; changes coalesce) after any member joins, changes tags, fails,
// leaves or is reaped. Each call creates a new subscription.
func (g *Gossip) Changed() <-chan struct{} {
	ch := make(chan struct{}, 1)
	g.mu.Lock()
	g.subs = append(g.subs, ch)
	g.mu.Unlock()
	return ch
}

func (g *Gossip) notifyLocked() {
	for _, ch := range g.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// SetTags replaces this member's tags and gossips them.
func (g *Gossip) SetTags(tags map[string]string) error {
	if _, err := encodeTags(tags); err != nil {
		return err
	}
	g.mu.Lock()
	g.tags = maps.Clone(tags)
	g.mu.Unlock()
	if err := g.ml.UpdateNode(5 * time.Second); err != nil {
		return fmt.Errorf("gossip: update tags: %w", err)
	}
	return nil
}

// Tags returns this member's current tags.
func (g *Gossip) Tags() map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.tags)
}

// Leave announces that this member leaves for good (others mark it
// "left" rather than "failed") and waits until ctx ends at most.
func (g *Gossip) Leave(ctx context.Context) error {
	g.mu.Lock()
	g.leaving = true
	g.mu.Unlock()
	timeout := 5 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	// Tell every member first (reliably, over TCP), so they record "left"
	// and not "failed" when memberlist reports us gone.
	intent := append([]byte{msgLeaveIntent}, g.cfg.Name...)
	for _, n := range g.aliveNodes() {
		if n.Name == g.cfg.Name || ctx.Err() != nil {
			continue
		}
		if err := g.ml.SendReliable(n, intent); err != nil {
			g.log.Warn("send leave intent", "to", n.Name, "err", err)
		}
	}
	if err := g.ml.Leave(timeout); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip without a leave message (others see a failure)
// and waits for Gossip's goroutines. It is idempotent.
func (g *Gossip) Shutdown(ctx context.Context) error {
	var err error
	g.shutdownOnce.Do(func() {
		g.cancel()
		if e := g.ml.Shutdown(); e != nil {
			err = fmt.Errorf("gossip: shutdown: %w", e)
		}
		done := make(chan struct{})
		go func() {
			g.wg.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			err = errors.Join(err, fmt.Errorf("gossip: shutdown: %w", ctx.Err()))
		}
	})
	return err
}

// maintain reaps members that left or failed long ago and dials a random
// failed member every ReconnectInterval.
func (g *Gossip) maintain() {
	tick := g.cfg.ReconnectInterval
	if g.cfg.LeftTimeout < tick {
		tick = g.cfg.LeftTimeout
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		g.reap(time.Now())
		if m, ok := g.pickFailed(); ok {
			ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
			if _, err := g.Join(ctx, []string{m.Address()}); err == nil {
				g.log.Info("reconnected to failed member", "member", m.Name)
			}
			cancel()
		}
	}
}

func (g *Gossip) reap(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	changed := false
	for name, m := range g.members {
		if (m.Status == StatusLeft && now.Sub(m.since) >= g.cfg.LeftTimeout) ||
			(m.Status == StatusFailed && now.Sub(m.since) >= g.cfg.ReconnectTimeout) {
			delete(g.members, name)
			changed = true
			g.log.Info("reaped member", "member", name, "status", m.Status)
		}
	}
	if changed {
		g.notifyLocked()
	}
}

func (g *Gossip) pickFailed() (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var failed []Member
	for _, m := range g.members {
		if m.Status == StatusFailed {
			failed = append(failed, m.Member)
		}
	}
	if len(failed) == 0 {
		return Member{}, false
	}
	return failed[rand.IntN(len(failed))], true
}

// ForceLeave marks a failed member as left on every alive member
// (Nomad's force-leave): the leader then removes it from Raft at once
// instead of after the dead-server grace, and nobody dials it again.
func (g *Gossip) ForceLeave(ctx context.Context, name string) error {
	if err := g.RemoveFailed(name); err != nil {
		return err
	}
	msg := append([]byte{msgForceLeave}, name...)
	var errs []error
	for _, n := range g.aliveNodes() {
		if n.Name == g.cfg.Name || ctx.Err() != nil {
			continue
		}
		if err := g.ml.SendReliable(n, msg); err != nil {
			errs = append(errs, fmt.Errorf("tell %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ErrNotFailed is returned by RemoveFailed and ForceLeave for a member
// that is unknown or not failed.
var ErrNotFailed = errors.New("gossip: not a failed member")

// RemoveFailed marks a failed member as left (locally), so it is reaped
// after LeftTimeout and not dialled again.
func (g *Gossip) RemoveFailed(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[name]
	if !ok {
		return fmt.Errorf("no member %q: %w", name, ErrNotFailed)
	}
	if m.Status != StatusFailed {
		return fmt.Errorf("member %q is %s: %w", name, m.Status, ErrNotFailed)
	}
	m.Status, m.since = StatusLeft, time.Now()
	g.notifyLocked()
	return nil
}

func encodeTags(tags map[string]string) ([]byte, error) {
	b, err := json.Marshal(tags)
	if err != nil {
		return nil, fmt.Errorf("gossip: encode tags: %w", err)
	}
	if len(b) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTagsTooLarge, len(b))
	}
	return b, nil
}

func toMember(n *memberlist.Node) Member {
	m := Member{
		Name: n.Name, Addr: n.Addr.String(), Port: n.Port, Status: StatusAlive, Tags: map[string]string{},
		ProtocolMin: n.PMin, ProtocolMax: n.PMax, ProtocolCur: n.PCur,
		DelegateMin: n.DMin, DelegateMax: n.DMax, DelegateCur: n.DCur,
	}
	if len(n.Meta) > 0 {
		_ = json.Unmarshal(n.Meta, &m.Tags) // a malformed peer keeps no tags
	}
	return m
}

// aliveNodes returns addressable copies of the alive members from our own
// table (memberlist's *Node values change under its lock, so they are
// never read outside its callbacks).
func (g *Gossip) aliveNodes() []*memberlist.Node {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*memberlist.Node
	for _, m := range g.members {
		if m.Status == StatusAlive {
			out = append(out, &memberlist.Node{Name: m.Name, Addr: net.ParseIP(m.Addr), Port: m.Port})
		}
	}
	return out
}
