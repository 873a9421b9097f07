package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTopologyBlock(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      map[string]string
	}{
		{"block", `client {
  enabled = true
  meta {
    team = "ml"
  }
  topology {
    rack  = "r1"
    block = "b0"
  }
}`, map[string]string{"team": "ml", "topology.rack": "r1", "topology.block": "b0"}},
		{"map attribute", `client {
  topology = { rack = "r2" }
}`, map[string]string{"topology.rack": "r2"}},
		{"plain meta", `client {
  meta = { "topology.rack" = "r3", "topology.block" = "b1" }
}`, map[string]string{"topology.rack": "r3", "topology.block": "b1"}},
		{"meta and block agree", `client {
  meta = { "topology.rack" = "r4" }
  topology {
    rack = "r4"
    pod  = "p1"
  }
}`, map[string]string{"topology.rack": "r4", "topology.pod": "p1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.src), "agent.hcl", Dev())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if diff := cmp.Diff(c.want, cfg.Client.NodeMeta()); diff != "" {
				t.Errorf("node meta (-want +got):\n%s", diff)
			}
			if !cfg.Client.HasTopology() {
				t.Error("HasTopology = false, want true")
			}
		})
	}
	if Dev().Client.HasTopology() {
		t.Error("dev config without topology: HasTopology = true, want false")
	}
}

func TestTopologyInvalid(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"conflicts with meta", `client {
  meta = { "topology.rack" = "r1" }
  topology {
    rack = "r2"
  }
}`, `topology level "rack" is "r2" but meta topology.rack is "r1"`},
		{"empty domain", `client {
  topology {
    rack = ""
  }
}`, `topology level "rack" has no domain`},
		{"dotted level", `client {
  topology = { "a.b" = "x" }
}`, `topology level "a.b"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.src), "agent.hcl", Dev())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = cfg.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate = %v, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
	if _, err := Parse([]byte("client {\n  topology {\n    rack = [\"x\"]\n  }\n}\n"), "agent.hcl", Dev()); !errors.Is(err, ErrInvalid) {
		t.Errorf("non-string domain: %v, want ErrInvalid", err)
	}
}
