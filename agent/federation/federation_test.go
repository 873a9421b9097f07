package federation

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/drover/drover/agent/gossip"
	"github.com/drover/drover/internal/testproc"
)

func startFed(t *testing.T, name, region string) *Federation {
	t.Helper()
	f, err := New(Config{Name: name, Region: region, Datacenter: "dc1", HTTPAddr: "127.0.0.1:1" + name[len(name)-1:],
		BindAddr: "127.0.0.1", Local: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = f.Shutdown(ctx)
	})
	return f
}

// TestRegionsAndServers: servers of two regions joined in the WAN pool
// see both regions and each region's live HTTP addresses; a second
// server of a region joins the pool through JoinPeers (its region peer's
// WAN address, as the LAN pool gives it), and a region whose only server
// stops stays known with no live server.
func TestRegionsAndServers(t *testing.T) {
	eu1, us1, eu2 := startFed(t, "s1", "eu"), startFed(t, "s2", "us"), startFed(t, "s3", "eu")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := eu1.Join(ctx, []string{us1.Addr()}); err != nil {
		t.Fatalf("join: %v", err)
	}
	peers := make(chan struct{}, 1)
	eu2.JoinPeers(peers, func() []string { return []string{eu1.Addr()} })
	testproc.Eventually(t, 10*time.Second, "three servers in every member's pool", func() bool {
		return len(eu1.Servers()) == 3 && len(us1.Servers()) == 3 && len(eu2.Servers()) == 3
	})
	for _, f := range []*Federation{eu1, us1, eu2} {
		if got, want := f.Regions(), []string{"eu", "us"}; !slices.Equal(got, want) {
			t.Errorf("%s Regions() = %v, want %v", f.cfg.Name, got, want)
		}
	}
	addrs, known := us1.RegionServers("eu")
	slices.Sort(addrs)
	if want := []string{"127.0.0.1:11", "127.0.0.1:13"}; !known || !slices.Equal(addrs, want) {
		t.Errorf("RegionServers(eu) = %v %v, want %v true", addrs, known, want)
	}
	if addrs, known := us1.RegionServers("asia"); known || len(addrs) > 0 {
		t.Errorf("RegionServers(asia) = %v %v, want unknown", addrs, known)
	}

	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := us1.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	testproc.Eventually(t, 20*time.Second, "us known with no live server", func() bool {
		addrs, known := eu1.RegionServers("us")
		return known && len(addrs) == 0
	})
	if got := eu1.Regions(); !slices.Contains(got, "us") {
		t.Errorf("Regions() after us failed = %v, want us still listed", got)
	}
}

// TestAcceptRefusesLANMembers: the WAN pool refuses a member without the
// WAN pool tag (a LAN gossip port joined by mistake) both ways.
func TestAcceptRefusesLANMembers(t *testing.T) {
	f := startFed(t, "s1", "eu")
	lan, err := gossip.New(gossip.Config{Name: "s9.eu", BindAddr: "127.0.0.1", Local: true,
		Tags: map[string]string{"role": "server", "region": "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lan.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := f.Join(ctx, []string{lan.Addr()}); err == nil {
		t.Fatalf("the WAN pool joined a LAN member (%d answered), want refused", n)
	}
	_, _ = lan.Join(ctx, []string{f.Addr()})
	for _, s := range f.Servers() {
		if s.Name != "s1.eu" {
			t.Errorf("WAN pool lists %s: %+v", s.Name, s)
		}
	}
	if err := Accept(gossip.Member{Name: "x", Tags: map[string]string{TagRole: "server", TagPool: PoolWAN, TagRegion: "eu"}}); err != nil {
		t.Errorf("Accept(WAN server) = %v", err)
	}
}
