package testcluster

import (
	"context"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/internal/testproc"
	"github.com/drover/drover/server"
)

// Timeout bounds every wait of this package.
const Timeout = 20 * time.Second

// Logger is the tests' logger: discarded unless DROVER_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("DROVER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Server starts a dev-mode server (in-memory Raft on 127.0.0.1, one
// scheduler worker, Logger, unless cfg says otherwise), shuts it down at
// the test's end and waits until it is Ready.
func Server(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	cfg.DevMode = true
	if cfg.BindAddr == "" {
		cfg.BindAddr = "127.0.0.1"
	}
	if cfg.NumSchedulers == 0 {
		cfg.NumSchedulers = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "test"
	}
	s, err := server.New(&cfg)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
	})
	WaitReady(t, s)
	return s
}

// WaitReady waits until s leads with its leader duties running.
func WaitReady(t testing.TB, s *server.Server) {
	t.Helper()
	select {
	case <-s.Ready():
	case <-time.After(Timeout):
		t.Fatalf("server %s not ready (leading, duties running) within %s", s.RaftAddr(), Timeout)
	}
}

// WaitIdle waits on s's broker idle signal: every eval enqueued so far was
// acked (its plan and status applied) or waits on the clock. Call it after
// the write whose evals it should cover.
func WaitIdle(t testing.TB, s *server.Server) {
	t.Helper()
	select {
	case <-s.BrokerIdle():
	case <-time.After(Timeout):
		t.Fatalf("eval broker of %s not idle within %s", s.RaftAddr(), Timeout)
	}
}

// WaitState waits up to timeout until cond holds, checking it now and
// after every change of s's state (a memdb watch on the latest applied
// index; a snapshot restore counts), so cond should read what the state
// holds: the state directly, or s's HTTP API in the same process.
func WaitState(t testing.TB, s *server.Server, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		st := s.State()
		ws := memdb.NewWatchSet()
		st.LatestIndexWatch(ws) // taken before cond looks: no change is missed
		ws.Add(st.AbandonCh())
		if cond() {
			return
		}
		if err := ws.WatchCtx(ctx); err != nil {
			t.Fatalf("waiting for %s: not within %s", what, timeout)
		}
	}
}

// Leader waits up to timeout until one of servers is Ready and every
// server names it as the leader, woken by their leadership signals, and
// returns its index.
func Leader(t testing.TB, timeout time.Duration, servers []*server.Server) int {
	t.Helper()
	deadline := time.After(timeout)
	for {
		// Signals first, then the look: no change between them is missed.
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)}}
		for _, s := range servers {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.LeaderChanged())})
			if r := s.Ready(); !closed(r) {
				cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(r)})
			}
		}
		if i := agreedLeader(servers); i >= 0 {
			return i
		}
		if chosen, _, _ := reflect.Select(cases); chosen == 0 {
			var names []string
			for _, s := range servers {
				names = append(names, s.RaftAddr()+" -> "+s.Leader())
			}
			t.Fatalf("no leader all servers agree on within %s: %v", timeout, names)
		}
	}
}

// agreedLeader is the index of the Ready server every server names as
// the leader, or -1.
func agreedLeader(servers []*server.Server) int {
	for i, s := range servers {
		if !closed(s.Ready()) {
			continue
		}
		for _, o := range servers {
			if o.Leader() != s.RaftAddr() {
				return -1
			}
		}
		return i
	}
	return -1
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Agent starts an in-process agent with cfg (bound to 127.0.0.1 unless
// cfg says otherwise; set cfg.Ports to 0 for ephemeral ports), shuts it
// down at the test's end, and waits until its roles are ready: its server Ready when
// it runs one alone (BootstrapExpect <= 1: a server that waits for peers
// is waited on with Leader), its client registered when it runs one.
func Agent(t testing.TB, cfg *config.Config) *agent.Agent {
	t.Helper()
	a := StartAgent(t, cfg)
	if s := a.Server(); s != nil && cfg.Server.BootstrapExpect <= 1 {
		WaitReady(t, s)
	}
	if reg := a.ClientRegistered(); reg != nil {
		select {
		case <-reg:
		case <-time.After(Timeout):
			t.Fatalf("agent %s: client not registered within %s", cfg.Name, Timeout)
		}
	}
	return a
}

// StartAgent starts an agent as Agent does, without waiting for its roles.
func StartAgent(t testing.TB, cfg *config.Config) *agent.Agent {
	t.Helper()
	if cfg.BindAddr == "" {
		cfg.BindAddr = "127.0.0.1"
	}
	a, err := agent.New(cfg, Logger().With("agent", cfg.Name))
	if err != nil {
		t.Fatalf("agent.New(%s): %v", cfg.Name, err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("start agent %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("agent %s shutdown: %v", cfg.Name, err)
		}
		// A client with a data dir of its own leaves its tasks running
		// for a restarted agent to reattach: none will.
		if cfg.Client.Enabled && cfg.DataDir != "" {
			if killed := testproc.Reap(nil, cfg.DataDir); len(killed) > 0 {
				t.Logf("agent %s left %d processes running; killed: %s", cfg.Name, len(killed), strings.Join(killed, "; "))
			}
		}
	})
	return a
}
