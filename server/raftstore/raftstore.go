package raftstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// Config says how to build the Raft node.
type Config struct {
	// DataDir holds raft/raft.db, raft/snapshots and node-id. Empty: the
	// in-memory mode (InmemStore, InmemSnapshotStore, InmemTransport).
	DataDir string
	// BindAddr and RaftPort are where the TCP transport listens (port 0:
	// any free port). RaftAddr (host:port) is advertised to peers; empty
	// means the listener's address (BindAddr must then be specific).
	BindAddr string
	RaftPort int
	RaftAddr string
	// Listener, when set, is the bound TCP listener the transport serves
	// (BindAddr and RaftPort are then unused). New owns it from the call
	// on: it is closed when New fails and on Shutdown.
	Listener net.Listener
	// TLS, when set, carries Raft over mutual TLS: Serve is the listener's
	// (it must require and check the peer's certificate), Dial the
	// outgoing connections' (tlsutil.Config.Raft).
	TLS *TLS
	// NodeID overrides the persisted server ID (tests).
	NodeID string
	// BootstrapExpect: with 1 (or 0 in the in-memory mode), a
	// single-server cluster is bootstrapped when there is no existing
	// state, and then the fast single-voter timeouts are used.
	BootstrapExpect int
	// FSM is the state machine (required).
	FSM raft.FSM
	// Logger receives raft's logs (nil: discarded).
	Logger *slog.Logger
	// Tune may adjust the raft config before use (optional).
	Tune func(*raft.Config)
}

// Raft is a running Raft node and the resources it owns.
type Raft struct {
	*raft.Raft
	ID        raft.ServerID
	Addr      raft.ServerAddress
	Transport raft.Transport

	closers []func() error
}

// Shutdown stops Raft (waiting until ctx is done at most) and closes the
// transport and stores.
func (r *Raft) Shutdown(ctx context.Context) error {
	f := r.Raft.Shutdown()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var errs []error
	select {
	case err := <-done:
		if err != nil {
			errs = append(errs, fmt.Errorf("raft shutdown: %w", err))
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("raft shutdown: %w", ctx.Err()))
	}
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// MultiServerHeartbeatTimeout is the Raft heartbeat, election and leader
// lease timeout of servers with peers (raft's default is 1 s).
const MultiServerHeartbeatTimeout = 500 * time.Millisecond

// New builds and starts the Raft node.
func New(cfg Config) (*Raft, error) {
	r := &Raft{}
	fail := func(err error) (*Raft, error) {
		for i := len(r.closers) - 1; i >= 0; i-- {
			_ = r.closers[i]()
		}
		return nil, err
	}
	if cfg.Listener != nil {
		// Ours from here on, whatever happens: closed on failure and on
		// Shutdown, once even though the transport closes it too.
		ln := &onceCloseListener{Listener: cfg.Listener}
		cfg.Listener = ln
		r.closers = append(r.closers, ln.Close)
	}
	if cfg.FSM == nil {
		return fail(errors.New("raftstore: FSM is required"))
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hl := NewHCLogger(logger.With("component", "raft"))

	conf := raft.DefaultConfig()
	conf.Logger = hl
	conf.SnapshotThreshold = 8192
	conf.SnapshotInterval = 2 * time.Minute
	conf.TrailingLogs = 10240
	// Several voters: a follower starts an election once it has heard
	// nothing for 1-2x HeartbeatTimeout (and the other follower votes only
	// once its own timer ran out too), so failover takes about 1.5x it
	// plus the election. Half of raft's 1 s defaults: leader failover on
	// loopback 2.1 s -> under 1 s median (agent/sim
	// BenchmarkLeaderFailover); the leader still heartbeats every 50 ms.
	conf.HeartbeatTimeout = MultiServerHeartbeatTimeout
	conf.ElectionTimeout = MultiServerHeartbeatTimeout
	conf.LeaderLeaseTimeout = MultiServerHeartbeatTimeout
	if cfg.BootstrapExpect == 1 || (cfg.DataDir == "" && cfg.BootstrapExpect == 0) {
		// One voter: nobody to wait for. Election after 50-100 ms. (A
		// server with BootstrapExpect 0 and a data dir joins a cluster:
		// it keeps the default, multi-server timeouts.)
		conf.HeartbeatTimeout = 50 * time.Millisecond
		conf.ElectionTimeout = 50 * time.Millisecond
		conf.LeaderLeaseTimeout = 50 * time.Millisecond
		conf.CommitTimeout = 5 * time.Millisecond
		if cfg.DataDir == "" {
			// In memory (dev agents, tests): an in-memory transport
			// can never gain peers, so elect at once (10-20 ms) rather
			// than after 50-100 ms of a start that is mostly waiting.
			conf.HeartbeatTimeout = 10 * time.Millisecond
			conf.ElectionTimeout = 10 * time.Millisecond
			conf.LeaderLeaseTimeout = 10 * time.Millisecond
		}
	}

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	id := cfg.NodeID
	if cfg.DataDir == "" {
		if id == "" {
			id = newUUID()
		}
		store := raft.NewInmemStore()
		logs, stable, snaps = store, store, raft.NewInmemSnapshotStore()
		addr, trans := raft.NewInmemTransport(raft.ServerAddress(id))
		r.Transport, r.Addr = trans, addr
		r.closers = append(r.closers, trans.Close)
	} else {
		var err error
		if id == "" {
			if id, err = NodeID(cfg.DataDir); err != nil {
				return nil, err
			}
		}
		dir := filepath.Join(cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("raftstore: %w", err)
		}
		bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
		if err != nil {
			return nil, fmt.Errorf("raftstore: open raft.db: %w", err)
		}
		r.closers = append(r.closers, bolt.Close)
		logs, stable = bolt, bolt
		if snaps, err = raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, "snapshots"), 2, hl); err != nil {
			return fail(fmt.Errorf("raftstore: snapshot store: %w", err))
		}
		trans, err := newTCPTransport(cfg, hl)
		if err != nil {
			return fail(err)
		}
		r.closers = append(r.closers, trans.Close)
		r.Transport, r.Addr = trans, trans.LocalAddr()
	}
	r.ID = raft.ServerID(id)
	conf.LocalID = r.ID
	if cfg.Tune != nil {
		cfg.Tune(conf)
	}
	if err := raft.ValidateConfig(conf); err != nil {
		return fail(fmt.Errorf("raftstore: %w", err))
	}

	if cfg.BootstrapExpect == 1 || (cfg.DataDir == "" && cfg.BootstrapExpect == 0) {
		has, err := raft.HasExistingState(logs, stable, snaps)
		if err != nil {
			return fail(fmt.Errorf("raftstore: check existing state: %w", err))
		}
		if !has {
			boot := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: r.ID, Address: r.Addr}}}
			if err := raft.BootstrapCluster(conf, logs, stable, snaps, r.Transport, boot); err != nil {
				return fail(fmt.Errorf("raftstore: bootstrap: %w", err))
			}
		}
	}
	ra, err := raft.NewRaft(conf, cfg.FSM, logs, stable, snaps, r.Transport)
	if err != nil {
		return fail(fmt.Errorf("raftstore: start raft: %w", err))
	}
	r.Raft = ra
	return r, nil
}

func newTCPTransport(cfg Config, hl *HCLogger) (*raft.NetworkTransport, error) {
	var adv net.Addr
	if cfg.RaftAddr != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
		if err != nil {
			return nil, fmt.Errorf("raftstore: advertise address %q: %w", cfg.RaftAddr, err)
		}
		adv = a
	}
	if cfg.Listener != nil {
		return newListenerTransport(cfg.Listener, adv, cfg.TLS, hl)
	}
	host := cfg.BindAddr
	if host == "" {
		host = "127.0.0.1"
	}
	bind := net.JoinHostPort(host, strconv.Itoa(cfg.RaftPort))
	if cfg.TLS != nil {
		ln, err := net.Listen("tcp", bind)
		if err != nil {
			return nil, fmt.Errorf("raftstore: listen on %s: %w", bind, err)
		}
		return newListenerTransport(ln, adv, cfg.TLS, hl)
	}
	trans, err := raft.NewTCPTransportWithLogger(bind, adv, 3, 10*time.Second, hl)
	if err != nil {
		return nil, fmt.Errorf("raftstore: listen on %s: %w", bind, err)
	}
	return trans, nil
}

// NodeID returns the server ID persisted in dataDir/node-id, creating it
// (a random UUID) on first use.
func NodeID(dataDir string) (string, error) {
	p := filepath.Join(dataDir, "node-id")
	b, err := os.ReadFile(p)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if id == "" {
			return "", fmt.Errorf("raftstore: %s is empty", p)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("raftstore: read node id: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("raftstore: %w", err)
	}
	id := newUUID()
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("raftstore: write node id: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", fmt.Errorf("raftstore: write node id: %w", err)
	}
	return id, nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
