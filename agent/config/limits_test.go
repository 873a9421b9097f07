package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The limits block (Nomad's names where Nomad has them) reaches the
// config; defaults are 30s, 100 connections per client and 1 GiB; bad
// values are refused with the setting named.
func TestLimits(t *testing.T) {
	d := Default().Limits
	if d.HTTPReadTimeout != 30*time.Second || d.HTTPMaxConnsPerClient != 100 || d.SnapshotRestoreMaxBytes != 1<<30 {
		t.Errorf("default limits = %+v, want 30s, 100, 1 GiB", d)
	}
	if Dev().Limits != d {
		t.Errorf("dev limits = %+v, want the defaults %+v", Dev().Limits, d)
	}
	c, err := Parse([]byte("limits {\n  http_read_timeout = \"5s\"\n  http_max_conns_per_client = 0\n  snapshot_restore_max_bytes = 1048576\n}\n"), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Limits{HTTPReadTimeout: 5 * time.Second, SnapshotRestoreMaxBytes: 1 << 20}); c.Limits != want {
		t.Errorf("limits = %+v, want %+v", c.Limits, want)
	}
	c, err = Parse([]byte(`{"limits": {"http_max_conns_per_client": 7}}`), "agent.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.HTTPMaxConnsPerClient != 7 || c.Limits.HTTPReadTimeout != 30*time.Second {
		t.Errorf("JSON limits = %+v, want 7 connections and the default timeout", c.Limits)
	}
	for _, tc := range []struct{ src, want string }{
		{"limits {\n  http_read_timeout = \"soon\"\n}\n", "http_read_timeout"},
		{"limits {\n  http_read_timeout = \"0s\"\n}\n", "http_read_timeout"},
		{"limits {\n  http_max_conns_per_client = -1\n}\n", "http_max_conns_per_client"},
		{"limits {\n  snapshot_restore_max_bytes = 0\n}\n", "snapshot_restore_max_bytes"},
		{"limits {\n  http_max_body = 1\n}\n", "http_max_body"},
	} {
		_, err := Parse([]byte(tc.src), "agent.hcl", nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid naming %s", tc.src, err, tc.want)
		}
	}
}
