package gossip

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/drover/drover/internal/testproc"
)

// fast makes failure detection quick on loopback (about 1.5 s), yet
// tolerant of a loaded test machine: a member that misses its probe
// deadline for a moment is suspected, not declared failed before it can
// say it is leaving.
func fast(c *memberlist.Config) {
	c.ProbeInterval = 500 * time.Millisecond
	c.ProbeTimeout = 250 * time.Millisecond
	c.SuspicionMult = 2
	c.GossipInterval = 20 * time.Millisecond
	c.PushPullInterval = time.Second
}

func start(t *testing.T, name string, keys [][]byte, mod func(*Config)) *Gossip {
	t.Helper()
	cfg := Config{
		Name: name, BindAddr: "127.0.0.1", BindPort: 0, Local: true, Keys: keys,
		Tags: map[string]string{"role": "server", "id": name}, tune: fast,
	}
	if mod != nil {
		mod(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown(%s): %v", name, err)
		}
	})
	return g
}

// waitMembers waits until cond holds for g's members, checked now and
// at each change g signals (Changed: joins, tags, failures, leaves, reaps).
func waitMembers(t *testing.T, g *Gossip, d time.Duration, what string, cond func([]Member) (bool, string)) {
	t.Helper()
	changed := g.Changed() // subscribed before the first look: no change is missed
	deadline := time.After(d)
	for {
		ok, last := cond(g.Members())
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s; last: %s", d, what, last)
		}
	}
}

func statuses(g *Gossip) map[string]string {
	out := map[string]string{}
	for _, m := range g.Members() {
		out[m.Name] = m.Status
	}
	return out
}

func wantStatuses(t *testing.T, g *Gossip, want map[string]string) {
	t.Helper()
	waitMembers(t, g, 10*time.Second, fmt.Sprintf("%s to see %v", g.Name(), want), func([]Member) (bool, string) {
		got := statuses(g)
		if len(got) != len(want) {
			return false, fmt.Sprint(got)
		}
		for k, v := range want {
			if got[k] != v {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
}

func joinAll(t *testing.T, gs ...*Gossip) {
	t.Helper()
	for _, g := range gs[1:] {
		n, err := g.Join(context.Background(), []string{gs[0].Addr()})
		if err != nil || n != 1 {
			t.Fatalf("%s join %s: n=%d err=%v", g.Name(), gs[0].Addr(), n, err)
		}
	}
}

func TestMembersTagsFailLeave(t *testing.T) {
	a, b, c := start(t, "a", nil, nil), start(t, "b", nil, nil), start(t, "c", nil, nil)
	changed := a.Changed()
	joinAll(t, a, b, c)
	alive := map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusAlive}
	for _, g := range []*Gossip{a, b, c} {
		wantStatuses(t, g, alive)
	}
	select {
	case <-changed:
	default:
		t.Fatal("Changed() did not signal after joins")
	}
	for _, m := range c.Members() {
		if got, want := m.Tags["id"], m.Name; got != want {
			t.Errorf("member %s tag id = %q, want %q", m.Name, got, want)
		}
		if m.Port == 0 || m.Addr != "127.0.0.1" {
			t.Errorf("member %s address %s", m.Name, m.Address())
		}
	}

	if err := b.SetTags(map[string]string{"role": "server", "id": "b", "http_addr": "127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	waitMembers(t, a, 10*time.Second, "b's new tag on a", func(members []Member) (bool, string) {
		for _, m := range members {
			if m.Name == "b" {
				return m.Tags["http_addr"] == "127.0.0.1:1", fmt.Sprint(m.Tags)
			}
		}
		return false, "no b"
	})
	big := map[string]string{"x": string(make([]byte, 600))}
	if err := b.SetTags(big); !errors.Is(err, ErrTagsTooLarge) {
		t.Errorf("SetTags(600 bytes) = %v, want ErrTagsTooLarge", err)
	}

	// c leaves gracefully: "left"; b stops without a word: "failed".
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusLeft})
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusFailed, "c": StatusLeft})
	if err := a.RemoveFailed("b"); err != nil {
		t.Fatalf("RemoveFailed(b): %v", err)
	}
	if err := a.RemoveFailed("a"); err == nil {
		t.Error("RemoveFailed(alive member) succeeded, want an error")
	}
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusLeft, "c": StatusLeft})
}

func TestReapLeft(t *testing.T) {
	a := start(t, "a", nil, func(c *Config) { c.LeftTimeout = 200 * time.Millisecond })
	b := start(t, "b", nil, nil)
	joinAll(t, a, b)
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusAlive})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	_ = b.Shutdown(ctx)
	// "left" first (maybe briefly), then reaped.
	wantStatuses(t, a, map[string]string{"a": StatusAlive})
}

func TestRetryJoin(t *testing.T) {
	a := start(t, "a", nil, nil)
	b := start(t, "b", nil, nil)
	joined := make(chan int, 1)
	// First address refuses (nobody listens there), the second answers.
	b.RetryJoin([]string{"127.0.0.1:1", a.Addr()}, 50*time.Millisecond, func(n int) { joined <- n })
	select {
	case n := <-joined:
		if n != 1 {
			t.Errorf("joined %d, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RetryJoin never joined")
	}
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusAlive})
}

func TestEncryption(t *testing.T) {
	k1, k2 := key(t), key(t)
	a := start(t, "a", [][]byte{k1}, nil)
	b := start(t, "b", [][]byte{k1}, nil)
	joinAll(t, a, b)
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusAlive})

	// A member with another key cannot join; nor can a plaintext one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	x := start(t, "x", [][]byte{k2}, nil)
	if n, err := x.Join(ctx, []string{a.Addr()}); err == nil {
		t.Errorf("join with the wrong key: n=%d, want an error", n)
	}
	p := start(t, "p", nil, nil)
	if n, err := p.Join(ctx, []string{a.Addr()}); err == nil {
		t.Errorf("join without a key: n=%d, want an error", n)
	}
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusAlive})
}

func TestKeyRotation(t *testing.T) {
	old, nw := key(t), key(t)
	dir := t.TempDir()
	kf := func(n string) func(*Config) {
		return func(c *Config) { c.KeyringFile = filepath.Join(dir, n, "keyring") }
	}
	a := start(t, "a", [][]byte{old}, kf("a"))
	b := start(t, "b", [][]byte{old}, kf("b"))
	c := start(t, "c", [][]byte{old}, kf("c"))
	joinAll(t, a, b, c)
	all := map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusAlive}
	for _, g := range []*Gossip{a, b, c} {
		wantStatuses(t, g, all)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	enc := base64.StdEncoding.EncodeToString
	if _, err := b.KeyOperation(ctx, KeyRemove, old); err == nil {
		t.Error("removing the primary key succeeded, want an error")
	}
	for _, step := range []struct {
		op  string
		key []byte
	}{{KeyInstall, nw}, {KeyUse, nw}, {KeyRemove, old}} {
		resp, err := b.KeyOperation(ctx, step.op, step.key)
		if err != nil {
			t.Fatalf("key %s: %v (%+v)", step.op, err, resp)
		}
		if resp.NumNodes != 3 || resp.NumResp != 3 || resp.NumErr != 0 {
			t.Fatalf("key %s: %+v, want 3 answers without errors", step.op, resp)
		}
		// Every step keeps everybody alive: no flapping.
		for _, g := range []*Gossip{a, b, c} {
			for name, st := range statuses(g) {
				if st != StatusAlive {
					t.Fatalf("after key %s, %s sees %s as %s", step.op, g.Name(), name, st)
				}
			}
		}
	}
	resp, err := a.KeyOperation(ctx, KeyList, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Keys; len(got) != 1 || got[enc(nw)] != 3 || resp.PrimaryKeys[enc(nw)] != 3 {
		t.Fatalf("keys after rotation: %+v, want only the new key on 3 members", resp)
	}
	// Gossip still flows with the new key: a new member holding only it joins.
	d := start(t, "d", [][]byte{nw}, nil)
	if _, err := d.Join(ctx, []string{c.Addr()}); err != nil {
		t.Fatalf("join with the rotated key: %v", err)
	}
	wantStatuses(t, a, map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusAlive, "d": StatusAlive})

	// The keyring file holds the rotated key and wins over -encrypt on restart.
	raw, err := os.ReadFile(filepath.Join(dir, "a", "keyring"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `["`+enc(nw)+`"]`; got != want {
		t.Errorf("keyring file = %s, want %s", got, want)
	}
	e := start(t, "a2", [][]byte{old}, kf("a"))
	if got := e.LocalKeys(); len(got) != 1 || got[0] != enc(nw) {
		t.Errorf("restarted keys = %v, want the rotated key only", got)
	}
}

func TestKeyErrors(t *testing.T) {
	if _, err := DecodeKey("not base64!"); !errors.Is(err, ErrBadKey) {
		t.Errorf("DecodeKey(garbage) = %v, want ErrBadKey", err)
	}
	if _, err := DecodeKey(base64.StdEncoding.EncodeToString([]byte("short"))); !errors.Is(err, ErrBadKey) {
		t.Errorf("DecodeKey(5 bytes) = %v, want ErrBadKey", err)
	}
	a := start(t, "a", nil, nil)
	if _, err := a.KeyOperation(context.Background(), KeyList, nil); !errors.Is(err, ErrNoKeyring) {
		t.Errorf("KeyOperation without encryption = %v, want ErrNoKeyring", err)
	}
	if _, err := New(Config{Name: "z", BindAddr: "127.0.0.1", Keys: [][]byte{[]byte("short")}}); !errors.Is(err, ErrBadKey) {
		t.Errorf("New with a 5-byte key = %v, want ErrBadKey", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without a name succeeded")
	}
}

func key(t *testing.T) []byte {
	t.Helper()
	s, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := DecodeKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestForceLeave(t *testing.T) {
	a, b, c := start(t, "a", nil, nil), start(t, "b", nil, nil), start(t, "c", nil, nil)
	joinAll(t, a, b, c)
	for _, g := range []*Gossip{a, b} {
		wantStatuses(t, g, map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusAlive})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.ForceLeave(ctx, "b"); !errors.Is(err, ErrNotFailed) {
		t.Errorf("ForceLeave(alive member) = %v, want ErrNotFailed", err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Gossip{a, b} {
		wantStatuses(t, g, map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusFailed})
	}
	if err := a.ForceLeave(ctx, "c"); err != nil {
		t.Fatalf("ForceLeave(c): %v", err)
	}
	// Every member, not just a, now lists c as left.
	for _, g := range []*Gossip{a, b} {
		wantStatuses(t, g, map[string]string{"a": StatusAlive, "b": StatusAlive, "c": StatusLeft})
	}
}

func TestRetryJoinSkipsSelf(t *testing.T) {
	a := start(t, "a", nil, nil)
	got := a.joinTargets([]string{a.Addr(), "127.0.0.1:1", a.Addr()})
	if len(got) != 1 || got[0] != "127.0.0.1:1" {
		t.Errorf("joinTargets = %v, want only the other address", got)
	}
}

// TestNameConflictReported: two servers started with the same name (the
// default node name is the hostname) cannot see each other; the clash is
// reported instead of passing silently.
func TestNameConflictReported(t *testing.T) {
	a := start(t, "same", nil, nil)
	b := start(t, "same", nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = b.Join(ctx, []string{a.Addr()})
	// Conflicts are counted, not signalled: poll.
	testproc.Eventually(t, 10*time.Second, "a name conflict to be reported", func() bool {
		return a.NameConflicts()+b.NameConflicts() > 0
	})
}
