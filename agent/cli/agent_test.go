package cli

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/agent/config"
)

// TestAgentFlagsOverConfigFile: defaults < -dev < -config file < flags that were set.
func TestAgentFlagsOverConfigFile(t *testing.T) {
	p := writeFile(t, t.TempDir(), "agent.hcl", `
datacenter = "file-dc"
region     = "file-region"
ports {
  http = 5000
}
client {
  node_class = "file-class"
  meta {
    rack = "r9"
  }
}
`)
	cmd := newAgentCmd()
	if err := cmd.ParseFlags([]string{"--dev", "--config", p, "--dc", "flag-dc", "--raft-port", "6000"}); err != nil {
		t.Fatal(err)
	}
	var f agentFlags
	f.dev, _ = cmd.Flags().GetBool("dev")
	f.config, _ = cmd.Flags().GetString("config")
	f.dc, _ = cmd.Flags().GetString("dc")
	f.raftPort, _ = cmd.Flags().GetInt("raft-port")
	cfg, err := f.build(cmd)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	if !cfg.DevMode || !cfg.Server.Enabled || !cfg.Client.Enabled {
		t.Errorf("dev roles lost: %+v", cfg)
	}
	for _, c := range []struct{ name, got, want string }{
		{"datacenter (flag over file)", cfg.Datacenter, "flag-dc"},
		{"region (file)", cfg.Region, "file-region"},
		{"node class (file)", cfg.Client.NodeClass, "file-class"},
		{"meta (file)", cfg.Client.Meta["rack"], "r9"},
		{"bind (dev)", cfg.BindAddr, "127.0.0.1"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if cfg.Ports.HTTP != 5000 || cfg.Ports.Raft != 6000 || cfg.Ports.Gossip != config.DefaultGossipPort {
		t.Errorf("ports = %+v, want http 5000 (file), raft 6000 (flag), gossip default", cfg.Ports)
	}
}

// TestAgentTopologyFlag: -topology adds to the config file's topology block.
func TestAgentTopologyFlag(t *testing.T) {
	p := writeFile(t, t.TempDir(), "agent.hcl", "client {\n  topology {\n    block = \"b1\"\n    rack = \"r0\"\n  }\n}\n")
	cmd := newAgentCmd()
	if err := cmd.ParseFlags([]string{"--dev", "--config", p, "--topology", "rack=r7,pod=p2"}); err != nil {
		t.Fatal(err)
	}
	f := agentFlags{dev: true, config: p}
	f.topology, _ = cmd.Flags().GetStringToString("topology")
	cfg, err := f.build(cmd)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	want := map[string]string{"topology.block": "b1", "topology.rack": "r7", "topology.pod": "p2"}
	if diff := cmp.Diff(want, cfg.Client.NodeMeta()); diff != "" {
		t.Errorf("node meta (-want +got):\n%s", diff)
	}
}

const gossipKey = "KYED7/CBebtGgPJzlH4od8NnEqi7sp1yHIgRgYtuAOo="

// TestAgentInsecureFlag: -insecure (or acl_enabled) lets an agent bind every interface.
func TestAgentInsecureFlag(t *testing.T) {
	for _, args := range [][]string{
		{"--server", "--data-dir", t.TempDir(), "--bind", "0.0.0.0", "--insecure", "--encrypt", gossipKey},
		{"--server", "--data-dir", t.TempDir(), "--bind", "0.0.0.0", "--acl-enabled", "--encrypt", gossipKey},
	} {
		cmd := newAgentCmd()
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		var f agentFlags
		f.server, f.bind = true, "0.0.0.0"
		f.dataDir, _ = cmd.Flags().GetString("data-dir")
		f.encrypt, _ = cmd.Flags().GetString("encrypt")
		f.insecure, _ = cmd.Flags().GetBool("insecure")
		f.aclEnabled, _ = cmd.Flags().GetBool("acl-enabled")
		cfg, err := f.build(cmd)
		if err != nil {
			t.Fatalf("build %v: %v", args, err)
		}
		if cfg.BindAddr != "0.0.0.0" || cfg.Insecure != f.insecure {
			t.Errorf("build %v: bind %q insecure %v", args, cfg.BindAddr, cfg.Insecure)
		}
	}
}

// TestTuneGC: an agent running a server collects at serverGCPercent
// unless GOGC is set; a client alone keeps the runtime's percent.
func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	cases := []struct {
		name   string
		gogc   string // "-": unset
		server bool
		want   int
	}{
		{"server", "-", true, serverGCPercent},
		{"server with GOGC", "100", true, 100},
		{"client only", "-", false, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOGC", c.gogc)
			if c.gogc == "-" {
				os.Unsetenv("GOGC")
			}
			debug.SetGCPercent(100)
			cfg := &config.Config{}
			cfg.Server.Enabled = c.server
			tuneGC(cfg)
			if got := debug.SetGCPercent(100); got != c.want {
				t.Errorf("GC percent %d, want %d", got, c.want)
			}
		})
	}
}
