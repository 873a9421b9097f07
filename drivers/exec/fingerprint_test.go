package exec

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/drover/drover/drivers"
)

func TestFingerprintUnhealthyWithoutExecutor(t *testing.T) {
	d, err := New(drivers.Options{Config: map[string]any{"executor_path": "/nonexistent/drover"}})
	if err != nil {
		t.Fatal(err)
	}
	fp := d.Fingerprint(context.Background())
	if fp.Health != drivers.HealthUnhealthy || !strings.Contains(fp.HealthDescription, "/nonexistent/drover") {
		t.Errorf("fingerprint = %+v, want unhealthy naming the missing binary", fp)
	}
	if _, ok := fp.Attributes["driver.exec"]; ok {
		t.Error("unhealthy driver advertises driver.exec")
	}
}

func TestPluginConfig(t *testing.T) {
	for _, cfg := range []map[string]any{{"bogus": 1}, {"executor_path": 3}, {"pids_limit": -1}, {"pids_limit": "many"}} {
		if _, err := New(drivers.Options{Config: cfg}); !errors.Is(err, drivers.ErrInvalidConfig) {
			t.Errorf("New(%v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if _, err := New(drivers.Options{Config: map[string]any{"pids_limit": 100, "executor_path": "/bin/true"}}); err != nil {
		t.Errorf("New(valid) = %v", err)
	}
}
