package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drover/drover/server/autoscale"
)

func loadAutoscale(t *testing.T, src string) (*Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.hcl")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadFile(p, Default())
}

func TestAutoscaleBlock(t *testing.T) {
	c, err := loadAutoscale(t, `
server {
  enabled = true
  autoscale {
    interval = "5s"
    provider "cloud" {
      type = "external"
      command = ["/usr/local/bin/drover-cloud", "-region", "eu"]
      timeout = "30s"
    }
    pool "gpu" {
      min = 1
      max = 16
      provider = "cloud"
      cooldown = "1m"
      node_shape {
        gpu_model = "H100"
        gpus = 8
        cpu = 96000
        memory = 393216
        spot = true
        price = 24.5
      }
      scale_in {
        strategy = "least_busy"
        idle = "15m"
      }
    }
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Server.Autoscale
	if a.Interval != 5*time.Second || len(a.Providers) != 1 || a.Providers[0].Timeout != 30*time.Second ||
		strings.Join(a.Providers[0].Command, " ") != "/usr/local/bin/drover-cloud -region eu" {
		t.Errorf("providers: %+v, interval %v", a.Providers, a.Interval)
	}
	if len(a.Policies) != 1 {
		t.Fatalf("policies: %+v", a.Policies)
	}
	p := a.Policies[0]
	want := autoscale.Shape{Datacenter: "dc1", GPUModel: "H100", GPUs: 8, CPU: 96000, MemoryMB: 393216, Spot: true, Price: 24.5}
	if p.Pool != "gpu" || p.Min != 1 || p.Max != 16 || p.Cooldown != time.Minute || p.ScaleIn.Strategy != autoscale.StrategyLeastBusy ||
		p.ScaleIn.Idle != 15*time.Minute || p.ScaleIn.DrainDeadline != autoscale.DefaultDrainTimeout ||
		p.Shape.GPUModel != want.GPUModel || p.Shape.GPUs != 8 || !p.Shape.Spot || p.Shape.Price != 24.5 || p.Shape.Datacenter != "dc1" {
		t.Errorf("policy: %+v", p)
	}
}

func TestAutoscaleBlockErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`provider "x" { type = "cloud" }`, `type "cloud"`},
		{`provider "x" { type = "external" }`, "needs a command"},
		{pool("nope", 0, 2, ""), `no provider "nope"`},
		{`provider "x" { type = "local" }` + "\n" + pool("x", 3, 2, ""), "min 3 and max 2"},
		{`provider "x" { type = "local" }` + "\n" + pool("x", 0, 2, "random"), "strategy"},
		{`interval = "soon"`, "interval"},
	} {
		_, err := loadAutoscale(t, "server {\n  autoscale {\n"+c.src+"\n  }\n}\n")
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.src, err, c.want)
		}
	}
}

// pool is a pool block on provider with min, max and a scale_in strategy.
func pool(provider string, min, max int, strategy string) string {
	s := fmt.Sprintf("pool \"gpu\" {\n  min = %d\n  max = %d\n  provider = %q\n  node_shape {\n    cpu = 1\n    memory = 1\n  }\n", min, max, provider)
	if strategy != "" {
		s += fmt.Sprintf("  scale_in {\n    strategy = %q\n  }\n", strategy)
	}
	return s + "}\n"
}
