package raftstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// kvFSM is a tiny real state machine: each command appends its bytes.
type kvFSM struct {
	mu   sync.Mutex
	cmds []string
}

func (f *kvFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	return len(f.cmds)
}

func (f *kvFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	var buf bytes.Buffer
	for _, c := range f.list() {
		buf.WriteString(c + "\n")
	}
	return snap(buf.Bytes()), nil
}

func (f *kvFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = nil
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			f.cmds = append(f.cmds, string(l))
		}
	}
	return nil
}

type snap []byte

func (s snap) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}
func (s snap) Release() {}

func waitLeader(t *testing.T, r *Raft) {
	t.Helper()
	select {
	case <-leaderCh(r):
	case <-time.After(10 * time.Second):
		t.Fatalf("no leader; state %v", r.State())
	}
}

// leaderCh closes when r becomes leader (observed, not polled).
func leaderCh(r *Raft) <-chan struct{} {
	done := make(chan struct{})
	if r.State() == raft.Leader {
		close(done)
		return done
	}
	obs := make(chan raft.Observation, 8)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(o)
	go func() {
		defer r.DeregisterObserver(o)
		for {
			if r.State() == raft.Leader {
				close(done)
				return
			}
			select {
			case <-obs:
			case <-time.After(10 * time.Second):
				return
			}
		}
	}()
	return done
}

func apply(t *testing.T, r *Raft, cmd string) {
	t.Helper()
	if err := r.Apply([]byte(cmd), 5*time.Second).Error(); err != nil {
		t.Fatalf("apply %q: %v", cmd, err)
	}
}

func shutdown(t *testing.T, r *Raft) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSingleServerSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func(fsm raft.FSM) *Raft {
		r, err := New(Config{DataDir: dir, BindAddr: "127.0.0.1", RaftPort: 0, BootstrapExpect: 1,
			FSM: fsm, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fsm1 := &kvFSM{}
	r := open(fsm1)
	waitLeader(t, r)
	id1 := r.ID
	for i := 0; i < 5; i++ {
		apply(t, r, "cmd"+strconv.Itoa(i))
	}
	if err := r.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	apply(t, r, "after-snapshot")
	shutdown(t, r)

	for _, p := range []string{"node-id", "raft/raft.db", "raft/snapshots"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	fsm2 := &kvFSM{}
	r2 := open(fsm2) // existing state: no second bootstrap
	defer shutdown(t, r2)
	if r2.ID != id1 {
		t.Errorf("server ID changed across restart: %s -> %s", id1, r2.ID)
	}
	waitLeader(t, r2)
	// A barrier makes the new leader apply every committed entry.
	if err := r2.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	want := []string{"cmd0", "cmd1", "cmd2", "cmd3", "cmd4", "after-snapshot"}
	got := fsm2.list()
	if len(got) != len(want) {
		t.Fatalf("after restart: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("after restart: got %v, want %v", got, want)
		}
	}
}

func TestInmemModeElects(t *testing.T) {
	fsm := &kvFSM{}
	r, err := New(Config{FSM: fsm})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, r)
	waitLeader(t, r)
	apply(t, r, "x")
	if got := fsm.list(); len(got) != 1 || got[0] != "x" {
		t.Errorf("got %v", got)
	}
}

func TestNodeIDPersisted(t *testing.T) {
	dir := t.TempDir()
	a, err := NodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NodeID(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || len(a) != 36 {
		t.Errorf("got %q then %q", a, b)
	}
	if err := os.WriteFile(filepath.Join(dir, "node-id"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NodeID(dir); err == nil {
		t.Error("empty node-id file accepted")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("missing FSM accepted")
	}
	if _, err := New(Config{FSM: &kvFSM{}, DataDir: t.TempDir(), RaftAddr: "not an address"}); err == nil {
		t.Error("bad advertise address accepted")
	}
}

// BenchmarkSingleServerElection measures New to leadership of a fresh
// single server (the dev agent's path), in memory and with a data dir.
func BenchmarkSingleServerElection(b *testing.B) {
	b.Run("inmem", func(b *testing.B) { benchElection(b, func() Config { return Config{FSM: &kvFSM{}} }) })
	b.Run("datadir", func(b *testing.B) {
		benchElection(b, func() Config {
			return Config{FSM: &kvFSM{}, DataDir: b.TempDir(), BindAddr: "127.0.0.1", BootstrapExpect: 1}
		})
	})
}

func benchElection(b *testing.B, cfg func() Config) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := cfg()
		b.StartTimer()
		r, err := New(c)
		if err != nil {
			b.Fatal(err)
		}
		<-leaderCh(r)
		b.StopTimer()
		_ = r.Shutdown(context.Background())
		b.StartTimer()
	}
}

// A listener bound by the caller (the agent binds port 0 to learn its port
// before advertising it) is what the transport serves and advertises; the
// node elects itself over it, and Shutdown frees the port.
func TestCallerBoundListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	fsm := &kvFSM{}
	r, err := New(Config{DataDir: t.TempDir(), Listener: ln, BootstrapExpect: 1, FSM: fsm})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Addr) != addr {
		t.Errorf("advertised %s, want the listener's %s", r.Addr, addr)
	}
	waitLeader(t, r)
	apply(t, r, "x")
	shutdown(t, r)
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("port still held after Shutdown: %v", err)
	}
	_ = again.Close()
}

// A listener New cannot use (unspecified address, nothing to advertise)
// is an error, and New closes the listener it was given.
func TestCallerBoundListenerRejected(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{DataDir: t.TempDir(), Listener: ln, BootstrapExpect: 1, FSM: &kvFSM{}}); err == nil || !strings.Contains(err.Error(), "advertisable") {
		t.Fatalf("New with an unadvertisable listener: %v", err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("listener not closed after the failed New: Accept = %v", err)
	}
}
