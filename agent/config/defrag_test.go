package config

import (
	"errors"
	"testing"
	"time"
)

// TestDefragBlock: server defrag { enabled, interval } reaches the
// config; it is off by default and a bad interval is refused.
func TestDefragBlock(t *testing.T) {
	c, err := Parse([]byte("server {\n  enabled = true\n}\n"), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Defrag.Enabled {
		t.Error("defrag on by default")
	}
	c, err = Parse([]byte("server {\n  defrag {\n    enabled = true\n    interval = \"5m\"\n    max_disruption_per_queue = 3\n  }\n}\n"), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Server.Defrag.Enabled || c.Server.Defrag.Interval != 5*time.Minute || c.Server.Defrag.PerQueue != 3 {
		t.Errorf("defrag = %+v, want enabled every 5m", c.Server.Defrag)
	}
	if _, err := Parse([]byte("server {\n  defrag {\n    interval = \"often\"\n  }\n}\n"), "agent.hcl", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad interval: %v, want ErrInvalid", err)
	}
}
