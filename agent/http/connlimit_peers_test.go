package http

import (
	"sync"
	"testing"

	"github.com/drover/drover/api"
)

// peerFake is a server whose Raft configuration the test changes.
type peerFake struct {
	mu sync.Mutex
	rc api.RaftConfiguration
}

func (f *peerFake) set(index uint64, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rc = api.RaftConfiguration{Index: index}
	for i, a := range addrs {
		f.rc.Servers = append(f.rc.Servers, &api.RaftServer{ID: string(rune('a' + i)), Address: a})
	}
}

func (f *peerFake) RaftConfiguration() (*api.RaftConfiguration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.rc
	return &c, nil
}

func (f *peerFake) RaftConfigurationIndex() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rc.Index
}

func (f *peerFake) RaftID() string { return "a" }

// TestPeerIPsFollowRaftConfiguration: a peer that joins is exempt from
// its first connection after the configuration changed, not only after
// the miss-refresh interval (a fresh cluster's forwarded requests were
// refused meanwhile); this server's own address never is.
func TestPeerIPsFollowRaftConfiguration(t *testing.T) {
	f := &peerFake{}
	f.set(1, "10.0.0.1:4647")
	p := &peerIPs{s: &HTTPServer{role: &ServerRole{Raft: f}}}
	if p.exempt("10.0.0.2") || p.exempt("10.0.0.1") {
		t.Fatal("exempt before 10.0.0.2 joined, or this server's own address")
	}
	f.set(2, "10.0.0.1:4647", "10.0.0.2:4647")
	if !p.exempt("10.0.0.2") {
		t.Error("a peer that joined is not exempt right after the configuration changed")
	}
	if p.exempt("10.0.0.3") {
		t.Error("a client address is exempt")
	}
}
