package config

import (
	"errors"
	"testing"
	"time"
)

// TestHeartbeatSettings: Nomad's server min_heartbeat_ttl and
// heartbeat_grace reach the config; a bad duration is rejected.
func TestHeartbeatSettings(t *testing.T) {
	c, err := Parse([]byte("server {\n  enabled = true\n  min_heartbeat_ttl = \"2s\"\n  heartbeat_grace = \"3s\"\n}\n"), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.MinHeartbeatTTL != 2*time.Second || c.Server.HeartbeatGrace != 3*time.Second {
		t.Errorf("min_heartbeat_ttl, heartbeat_grace = %v, %v; want 2s, 3s", c.Server.MinHeartbeatTTL, c.Server.HeartbeatGrace)
	}
	if _, err := Parse([]byte("server {\n  heartbeat_grace = \"soon\"\n}\n"), "agent.hcl", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("heartbeat_grace = soon: %v, want ErrInvalid", err)
	}
}

// TestMaxHeartbeatsPerSecond: Nomad's server max_heartbeats_per_second
// reaches the config; zero or less is rejected.
func TestMaxHeartbeatsPerSecond(t *testing.T) {
	c, err := Parse([]byte("server {\n  max_heartbeats_per_second = 500\n}\n"), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.MaxHeartbeatsPerSecond != 500 {
		t.Errorf("max_heartbeats_per_second = %v, want 500", c.Server.MaxHeartbeatsPerSecond)
	}
	if _, err := Parse([]byte("server {\n  max_heartbeats_per_second = 0\n}\n"), "agent.hcl", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("max_heartbeats_per_second = 0: %v, want ErrInvalid", err)
	}
}
