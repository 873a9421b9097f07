package config

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Dev client i is a client-only agent of its own: name, data dir,
// ephemeral API port, the dev server as its server, and a simulated rack
// of two nodes unless a topology is configured.
func TestDevClient(t *testing.T) {
	c := Dev()
	c.DataDir, c.Client.DevClients, c.Client.DevGPUs = "/d", 3, "dgxh100"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, tc := range []struct {
		i          int
		rack, data string
	}{{1, "r1", "/d/dev-client-1"}, {2, "r1", "/d/dev-client-2"}, {3, "r2", "/d/dev-client-3"}} {
		n := c.DevClient(tc.i, "127.0.0.1:4646")
		if err := n.Validate(); err != nil {
			t.Errorf("dev client %d: Validate: %v", tc.i, err)
		}
		if n.Name != DevClientName(tc.i) || n.Server.Enabled || !n.Client.Enabled || n.Client.DevClients != 0 || n.DataDir != tc.data ||
			n.Ports.HTTP != 0 || n.Client.DevGPUs != "dgxh100" || !cmp.Equal(n.Client.Servers, []string{"127.0.0.1:4646"}) {
			t.Errorf("dev client %d: %+v", tc.i, n)
		}
		if want := fmt.Sprintf("127.0.0.%d", tc.i+1); runtime.GOOS == "linux" && n.BindAddr != want {
			t.Errorf("dev client %d binds %s, want its own loopback address %s", tc.i, n.BindAddr, want)
		}
		if diff := cmp.Diff(map[string]string{"rack": tc.rack, "block": "b1"}, n.Client.Topology); diff != "" {
			t.Errorf("dev client %d topology (-want +got):\n%s", tc.i, diff)
		}
	}
	if c.Server.Enabled != true || c.Client.Topology["rack"] != "" || c.Name != "" {
		t.Errorf("DevClient changed the agent's own config: %+v", c)
	}
	c.Client.Topology["rack"] = "mine"
	if got := c.DevClient(3, "x").Client.Topology; !cmp.Equal(got, map[string]string{"rack": "mine"}) {
		t.Errorf("configured topology: dev client has %v, want it kept", got)
	}
}

func TestDevClientsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Config)
	}{
		{"negative", func(c *Config) { c.Client.DevClients = -1 }},
		{"too many", func(c *Config) { c.Client.DevClients = MaxDevClients + 1 }},
		{"not dev", func(c *Config) { c.DevMode, c.DataDir, c.Server.Encrypt, c.Client.DevClients = false, "/d", testKey, 2 }},
		{"no server", func(c *Config) { c.Server.Enabled, c.Client.Servers, c.Client.DevClients = false, []string{"x:1"}, 2 }},
	} {
		c := Dev()
		tc.edit(c)
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", tc.name, err)
		}
	}
	c, err := Parse([]byte("client {\n  dev_clients = 4\n}\n"), "a.hcl", Dev())
	if err != nil || c.Client.DevClients != 4 {
		t.Errorf("dev_clients = 4: %v, %d", err, c.Client.DevClients)
	}
}
