package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFull(t *testing.T) {
	src := `
name       = "n1"
region     = "eu"
datacenter = "dc2"
data_dir   = "/var/lib/drover"
bind_addr  = "10.0.0.2"
insecure   = true
enable_debug = true
ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}
server {
  enabled          = true
  bootstrap_expect = 3
  num_schedulers   = 2
  encrypt          = "KYED7/CBebtGgPJzlH4od8NnEqi7sp1yHIgRgYtuAOo="
  server_join {
    retry_join = ["10.0.0.1:4648"]
  }
}
client {
  enabled    = true
  servers    = ["10.0.0.1:4646"]
  node_class = "gpu"
  node_pool  = "batch"
  meta {
    rack = "r1"
  }
  options = {
    "driver.allowlist" = "exec"
  }
}
plugin "raw_exec" {
  config {
    enabled = true
    volumes = ["a", "b"]
  }
}
tls {
  http                   = true
  ca_file                = "/etc/drover/ca.pem"
  cert_file              = "/etc/drover/server.pem"
  key_file               = "/etc/drover/server-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
}
`
	got, err := Parse([]byte(src), "agent.hcl", nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Default()
	want.Name, want.Region, want.Datacenter, want.DataDir, want.BindAddr = "n1", "eu", "dc2", "/var/lib/drover", "10.0.0.2"
	want.Insecure, want.EnableDebug = true, true
	want.Ports = Ports{HTTP: 5646, Raft: 5647, Gossip: 5648}
	want.Server = Server{Enabled: true, BootstrapExpect: 3, NumSchedulers: 2, Encrypt: testKey}
	want.Join = []string{"10.0.0.1:4648"}
	want.Client = Client{Enabled: true, Servers: []string{"10.0.0.1:4646"}, NodeClass: "gpu", NodePool: "batch",
		Meta: map[string]string{"rack": "r1"}, Options: map[string]string{"driver.allowlist": "exec"}, Topology: map[string]string{}}
	want.Plugins = map[string]map[string]any{"raw_exec": {"enabled": true, "volumes": []any{"a", "b"}}}
	want.TLS = TLS{HTTP: true, CAFile: "/etc/drover/ca.pem", CertFile: "/etc/drover/server.pem", KeyFile: "/etc/drover/server-key.pem",
		VerifyServerHostname: true, VerifyHTTPSClient: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"syntax", "name = ", "agent.hcl:1"},
		{"unknown top-level", `nmae = "x"`, "agent.hcl:1,1"},
		{"unknown in server", "server {\n  bootstrap_expekt = 1\n}", "agent.hcl:2,3"},
		{"wrong type", `server { bootstrap_expect = "three" }`, "agent.hcl:1"},
		{"meta not string", `client { meta { a = [1] } }`, "agent.hcl:1"},
		{"negative price", "server {\n  usage {\n    prices = { \"nvidia/gpu/H100\" = -1 }\n  }\n}", "server.usage.prices"},
		{"price of no model", "server {\n  usage {\n    prices = { \"H100\" = 1 }\n  }\n}", "server.usage.prices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "agent.hcl", nil)
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want one mentioning %q", tc.src, tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestParseUsagePrices(t *testing.T) {
	c, err := Parse([]byte(`server {
  usage {
    prices = { "nvidia/gpu/H100" = 2.5, "nvidia/gpu/A100" = 1 }
  }
}`), "agent.hcl", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Server.UsagePrices; len(p) != 2 || p["nvidia/gpu/H100"] != 2.5 || p["nvidia/gpu/A100"] != 1 {
		t.Errorf("prices %v", p)
	}
}

func TestLoadFileKeepsBase(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.hcl")
	if err := os.WriteFile(p, []byte(`datacenter = "x"`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Dev()
	got, err := LoadFile(p, base)
	if err != nil {
		t.Fatal(err)
	}
	if got.Datacenter != "x" || !got.DevMode || !got.Server.Enabled || got.Plugins["raw_exec"] == nil {
		t.Errorf("LoadFile over Dev() = %+v, want dev settings with datacenter x", got)
	}
	if base.Datacenter != "dc1" {
		t.Errorf("base was modified: datacenter %q", base.Datacenter)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.hcl"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadFile(missing) = %v, want ErrNotExist", err)
	}
}

// testKey is a gossip key for configs of servers outside dev mode.
const testKey = "KYED7/CBebtGgPJzlH4od8NnEqi7sp1yHIgRgYtuAOo="

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(c *Config)
		want string // "" = valid
	}{
		{"dev", func(c *Config) { *c = *Dev() }, ""},
		{"no role", func(c *Config) {}, "neither the server nor the client"},
		{"server without data dir", func(c *Config) { c.Server.Enabled = true }, "data_dir"},
		{"client without servers", func(c *Config) { c.Client.Enabled = true }, "needs servers"},
		{"bad port", func(c *Config) { *c = *Dev(); c.Ports.HTTP = 70000 }, "http port 70000"},
		{"bad bind", func(c *Config) { *c = *Dev(); c.BindAddr = "localhost" }, "not an IP"},
		{"default bind is loopback", func(c *Config) { c.Server.Enabled, c.DataDir, c.Server.Encrypt = true, "/d", testKey }, ""},
		{"server without a gossip key", func(c *Config) { c.Server.Enabled, c.DataDir = true, "/d" }, "gossip encryption key"},
		{"all interfaces, ACLs off", func(c *Config) { *c = *Dev(); c.BindAddr = "0.0.0.0" }, "ACLs are off"},
		{"public IP, ACLs off", func(c *Config) { c.Server.Enabled, c.DataDir, c.BindAddr = true, "/d", "10.1.2.3" }, "-insecure"},
		{"IPv6 any, ACLs off", func(c *Config) { *c = *Dev(); c.BindAddr = "::" }, "ACLs are off"},
		{"all interfaces, ACLs on", func(c *Config) { *c = *Dev(); c.BindAddr, c.ACLEnabled = "0.0.0.0", true }, ""},
		{"all interfaces, insecure", func(c *Config) { *c = *Dev(); c.BindAddr, c.Insecure = "0.0.0.0", true }, ""},
		{"IPv6 loopback", func(c *Config) { *c = *Dev(); c.BindAddr = "::1" }, ""},
		{"tls without files", func(c *Config) { *c = *Dev(); c.TLS.HTTP = true }, "ca_file, cert_file and key_file"},
		{"tls rpc without files", func(c *Config) { *c = *Dev(); c.TLS.RPC = true }, "ca_file, cert_file and key_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mod(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func TestAdvertisedHTTP(t *testing.T) {
	c := Default()
	if c.BindAddr != "127.0.0.1" {
		t.Errorf("default bind = %q, want 127.0.0.1 (secure default)", c.BindAddr)
	}
	if got, want := c.AdvertisedHTTP(), "127.0.0.1:4646"; got != want {
		t.Errorf("AdvertisedHTTP() = %q, want %q", got, want)
	}
	c.BindAddr = "10.1.2.3"
	if got, want := c.AdvertisedHTTP(), "10.1.2.3:4646"; got != want {
		t.Errorf("AdvertisedHTTP() = %q, want %q", got, want)
	}
}
