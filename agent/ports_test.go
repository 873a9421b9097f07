package agent_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/api"
)

// Ports given as 0 are bound by the agent before it advertises them, and
// /v1/agent/self reports the ports it got; the API, Raft and gossip really
// listen there.
func TestAgentEphemeralPorts(t *testing.T) {
	s := startClusterServer(t, "ports", t.TempDir(), config.Ports{}, nil, func(c *config.Config) {
		c.Server.BootstrapExpect = 1
	})
	var self api.AgentSelf
	if code, _ := getJSON(s.base+"/v1/agent/self", &self); code != 200 {
		t.Fatalf("GET /v1/agent/self = %d", code)
	}
	ports, _ := self.Config["Ports"].(map[string]any)
	for _, name := range []string{"HTTP", "Raft", "Gossip"} {
		p, _ := ports[name].(float64)
		if p == 0 {
			t.Fatalf("agent self Ports[%s] = %v, want the bound port (all: %v)", name, ports[name], ports)
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p))), 5*time.Second)
		if err != nil {
			t.Errorf("%s port %d reported but not listening: %v", name, int(p), err)
			continue
		}
		_ = c.Close()
	}
	if want := "127.0.0.1:" + strconv.Itoa(int(ports["HTTP"].(float64))); s.a.HTTPAddr() != want {
		t.Errorf("HTTPAddr %s, want %s", s.a.HTTPAddr(), want)
	}
}

// A taken HTTP port fails the start at once, with the address in the error.
func TestAgentHTTPPortInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg := config.Default()
	cfg.Name, cfg.BindAddr, cfg.DataDir = "busy", "127.0.0.1", t.TempDir()
	cfg.Ports.HTTP = busy.Addr().(*net.TCPAddr).Port
	cfg.Server.Enabled, cfg.Server.BootstrapExpect, cfg.Server.Encrypt = true, 1, testGossipKey
	a, err := agent.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), busy.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start with the HTTP port taken: %v", err)
	}
}
