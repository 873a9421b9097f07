package gossip

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestAcceptRefusesMembers: a pool whose Accept refuses members of
// another region neither joins one nor is joined by one, and its members
// never list it; a member it accepts joins as usual.
func TestAcceptRefusesMembers(t *testing.T) {
	regionOnly := func(region string) func(*Config) {
		return func(c *Config) {
			c.Tags["region"] = region
			c.Accept = func(m Member) error {
				if m.Tags["region"] != region {
					return fmt.Errorf("member %s is of region %q, not %q", m.Name, m.Tags["region"], region)
				}
				return nil
			}
		}
	}
	a := start(t, "a.eu", nil, regionOnly("eu"))
	b := start(t, "b.us", nil, regionOnly("us"))
	c := start(t, "c.eu", nil, regionOnly("eu"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n, err := a.Join(ctx, []string{b.Addr()}); err == nil {
		t.Fatalf("a.eu joined b.us (%d answered), want the join refused", n)
	}
	if n, err := b.Join(ctx, []string{a.Addr()}); err == nil {
		t.Fatalf("b.us joined a.eu (%d answered), want the join refused", n)
	}
	if _, err := c.Join(ctx, []string{a.Addr()}); err != nil {
		t.Fatalf("c.eu joins a.eu: %v", err)
	}
	waitMembers(t, a, 10*time.Second, "a.eu sees c.eu", func(ms []Member) (bool, string) {
		return len(ms) == 2, fmt.Sprint(statuses(a))
	})
	for _, g := range []*Gossip{a, c} {
		if _, ok := statuses(g)["b.us"]; ok {
			t.Errorf("%s lists b.us: %v", g.Name(), statuses(g))
		}
	}
	if got := statuses(b); len(got) != 1 {
		t.Errorf("b.us members = %v, want itself only", got)
	}
}
