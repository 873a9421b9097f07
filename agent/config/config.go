package config

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/drover/drover/api"
)

// ErrInvalid is wrapped by every validation and parse error.
var ErrInvalid = errors.New("invalid agent config")

// Default ports, as Nomad's.
const (
	DefaultHTTPPort   = 4646
	DefaultRaftPort   = 4647
	DefaultGossipPort = 4648
)

// Config is the agent's configuration.
type Config struct {
	// ACLEnabled enforces ACLs on the HTTP API (HCL acl { enabled = true },
	// or -acl-enabled).
	ACLEnabled bool
	// Insecure allows a bind address other machines can reach with ACLs
	// off (HCL insecure = true, or -insecure); without it such a config
	// is refused.
	Insecure   bool
	Name       string
	Region     string
	Datacenter string
	DataDir    string
	BindAddr   string
	// AdvertiseHTTP is the host:port other agents use to reach this HTTP API
	// (default BindAddr:HTTP, or 127.0.0.1 when bound to 0.0.0.0).
	AdvertiseHTTP string
	LogLevel      string
	DevMode       bool
	Ports         Ports
	Server        Server
	Client        Client
	// Plugins maps a driver name to its plugin config.
	Plugins map[string]map[string]any
	// Join lists gossip addresses of servers to join (host:port).
	Join []string
	// JoinWAN lists WAN gossip addresses of servers, of any region, to
	// federate with (HCL server_join { retry_join_wan }; Ports.WAN on).
	JoinWAN []string
	// ACLReplicationToken is the token a non-authoritative region's
	// leader reads the authoritative region's ACL policies and tokens
	// with (HCL acl { replication_token }).
	ACLReplicationToken string
	// Limits bound the HTTP API (HCL block limits, as Nomad's).
	Limits Limits
	// TLS is the agent's mutual TLS (HCL block tls, as Nomad's).
	TLS TLS
	// EnableDebug serves Go's profiles at /debug/pprof/ (HCL enable_debug).
	EnableDebug bool
}

// TLS settings of the agent: the HTTP API over TLS and the agent's own
// requests to other agents (forwarding, client to server) with its
// certificate (drover tls cert create).
type TLS struct {
	HTTP bool
	// RPC carries Raft between servers over mutual TLS: only peers with a
	// server certificate of the region take part.
	RPC                  bool
	CAFile               string
	CertFile             string
	KeyFile              string
	VerifyServerHostname bool
	VerifyHTTPSClient    bool
}

// Limits of the agent's HTTP API.
type Limits struct {
	// HTTPReadTimeout bounds reading one request, headers and body
	// (default 30s; responses are not bounded). HCL http_read_timeout.
	HTTPReadTimeout time.Duration
	// HTTPMaxConnsPerClient bounds the open connections of one client IP,
	// loopback included (default 100 as Nomad; 0: no limit). HCL
	// http_max_conns_per_client.
	HTTPMaxConnsPerClient int
	// SnapshotRestoreMaxBytes bounds a snapshot file restored through
	// PUT /v1/operator/snapshot (default 1 GiB). HCL
	// snapshot_restore_max_bytes.
	SnapshotRestoreMaxBytes int64
}

// Defaults of Limits (the HTTP server's own defaults are the same).
const (
	DefaultHTTPReadTimeout         = 30 * time.Second
	DefaultHTTPMaxConnsPerClient   = 100
	DefaultSnapshotRestoreMaxBytes = 1 << 30
)

// Ports the agent listens on.
type Ports struct {
	HTTP   int
	Raft   int
	Gossip int
	// WAN is the servers' WAN gossip port (federation between regions;
	// HCL ports { serf_wan }): 0, no WAN pool.
	WAN int
}

// Server is the server role's settings.
type Server struct {
	Enabled         bool
	BootstrapExpect int
	NumSchedulers   int
	// Encrypt is the base64 gossip encryption key (-encrypt).
	Encrypt string
	// AuthoritativeRegion is the region whose servers hold the ACL
	// policies and global tokens of the federation (HCL
	// authoritative_region; default this agent's region).
	AuthoritativeRegion string
	// DeadServerGrace: a failed server is removed from Raft after it
	// (default 2m); ServerStabilization: a new server is a non-voter for
	// at least this long (default 3s). HCL: dead_server_grace,
	// server_stabilization_time.
	DeadServerGrace     time.Duration
	ServerStabilization time.Duration
	// MinHeartbeatTTL is the smallest heartbeat TTL handed to clients
	// (default 10s); HeartbeatGrace is added to it before a node counts
	// as missing (default 10s). HCL: min_heartbeat_ttl, heartbeat_grace.
	MinHeartbeatTTL time.Duration
	HeartbeatGrace  time.Duration
	// MaxHeartbeatsPerSecond caps the cluster's heartbeat rate: TTLs grow
	// with the node count to stay under it (0: the server's default, 50).
	// HCL: max_heartbeats_per_second.
	MaxHeartbeatsPerSecond float64
	// JobMaxGroupCount bounds a task group's count: jobs above it are
	// refused at register, plan, scale, revert and dispatch (0: the
	// server's default, 10,000). Nomad's job_max_count bounds the sum of
	// a job's counts; this bounds each group. HCL: job_max_group_count.
	JobMaxGroupCount int
	// UsagePrices is the price of one GPU hour per GPU model
	// ("nvidia/gpu/H100") for the usage ledger's showback cost (HCL:
	// usage { prices = { "nvidia/gpu/H100" = 2.5 } }).
	UsagePrices map[string]float64
	// LeaveOnTerminate: on shutdown the server leaves the gossip pool, so
	// the leader removes it from Raft at once (HCL leave_on_terminate).
	LeaveOnTerminate bool
	// OIDCIssuer is the iss of workload identities and of the OIDC
	// discovery document (HCL oidc_issuer, as Nomad; "" = none).
	OIDCIssuer string
	// Defrag is the leader's defragmentation round (HCL defrag {
	// enabled = true  interval = "10m" }; off by default).
	Defrag Defrag
	// Autoscale is the cluster autoscaler (HCL autoscale { ... },
	// autoscale.go; off without pools).
	Autoscale Autoscale
}

// Defrag turns on the leader's periodic defragmentation: every Interval
// (default 10m) it moves restartable allocs that free room for pending
// work, as drover operator defrag does, at most PerQueue allocs of one
// queue per round (HCL max_disruption_per_queue; 0: no bound; it bounds
// drover operator defrag too).
type Defrag struct {
	Enabled  bool
	Interval time.Duration
	PerQueue int
}

// Client is the client role's settings.
type Client struct {
	Enabled   bool
	Servers   []string // HTTP addresses of servers (host:port)
	NodeClass string
	NodePool  string
	// IntroToken is the introduction token the node first registers with
	// (drover node intro create), where the servers require one and the
	// agent holds no client certificate of the region.
	IntroToken string
	Meta       map[string]string
	Options    map[string]string
	// DevGPUs simulates a DGX server's GPUs ("dgxh100", "dgxa100:mig",
	// ...; -dev-gpus) instead of fingerprinting the host's NVML.
	DevGPUs string
	// DevClients, in dev mode, runs this many client nodes in the agent's
	// process instead of one (-dev-clients N; see DevClient): a multi-node
	// cluster on one machine. 0: the one client of a plain dev agent.
	DevClients int
	// Topology maps a network topology level to this node's domain in it
	// (HCL topology { rack = "r1"  block = "b0" }, or -topology
	// rack=r1,block=b0); it becomes node meta "topology.<level>" (see
	// NodeMeta), which gang topology placement reads.
	Topology map[string]string
	// HostVolumes are the host directories jobs may mount by name (HCL
	// host_volume "models" { path = "/srv/models"  read_only = true }, or
	// -host-volume models=/srv/models:ro).
	HostVolumes map[string]*api.ClientHostVolumeConfig
}

// AddHostVolume adds (or replaces) the host volume name.
func (c *Client) AddHostVolume(name, path string, readOnly bool) {
	if c.HostVolumes == nil {
		c.HostVolumes = map[string]*api.ClientHostVolumeConfig{}
	}
	c.HostVolumes[name] = &api.ClientHostVolumeConfig{Name: name, Path: path, ReadOnly: readOnly}
}

// ParseHostVolumeFlag reads -host-volume's name=path[:ro] form.
func ParseHostVolumeFlag(s string) (name, path string, readOnly bool, err error) {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return "", "", false, fmt.Errorf("%w: -host-volume %q: want name=/path or name=/path:ro", ErrInvalid, s)
	}
	if p, ok := strings.CutSuffix(path, ":ro"); ok {
		path, readOnly = p, true
	}
	return name, path, readOnly, nil
}

// NodeMeta is the node's meta: Meta plus api.TopologyMetaPrefix+level for
// every Topology level (Validate refuses a topology level that Meta also
// sets to another value).
func (c *Client) NodeMeta() map[string]string {
	out := copyMap(c.Meta)
	for level, domain := range c.Topology {
		out[api.TopologyMetaPrefix+level] = domain
	}
	return out
}

// HasTopology reports whether the node has any topology level, through
// the topology block or a "topology.<level>" meta key.
func (c *Client) HasTopology() bool {
	if len(c.Topology) > 0 {
		return true
	}
	for k := range c.Meta {
		if strings.HasPrefix(k, api.TopologyMetaPrefix) {
			return true
		}
	}
	return false
}

// Default returns the settings used when nothing else is given.
func Default() *Config {
	return &Config{
		Region: "global", Datacenter: "dc1", BindAddr: "127.0.0.1", LogLevel: "info",
		Ports:   Ports{HTTP: DefaultHTTPPort, Raft: DefaultRaftPort, Gossip: DefaultGossipPort},
		Client:  Client{NodePool: "default", Meta: map[string]string{}, Options: map[string]string{}, Topology: map[string]string{}},
		Plugins: map[string]map[string]any{},
		Limits: Limits{HTTPReadTimeout: DefaultHTTPReadTimeout, HTTPMaxConnsPerClient: DefaultHTTPMaxConnsPerClient,
			SnapshotRestoreMaxBytes: DefaultSnapshotRestoreMaxBytes},
	}
}

// Dev returns dev-mode settings: server and client in one process on
// 127.0.0.1, a single bootstrapped server, raw_exec enabled.
func Dev() *Config {
	c := Default()
	c.DevMode = true
	c.BindAddr = "127.0.0.1"
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	c.Plugins["raw_exec"] = map[string]any{"enabled": true}
	return c
}

// MaxDevClients bounds -dev-clients: every dev client is a full client
// role (drivers, state file, HTTP API) in the one process.
const MaxDevClients = 64

// DevClientsPerRack is how many dev clients share a simulated rack.
const DevClientsPerRack = 2

// DevClientName is the node name of dev client i (1-based): dev-client-i.
func DevClientName(i int) string { return fmt.Sprintf("dev-client-%d", i) }

// DevClient returns the settings of dev client i (1 to
// Client.DevClients) of a dev agent whose API is at serverHTTP: a
// client-only agent named DevClientName(i) on an ephemeral HTTP port, with
// its own data dir (DataDir/dev-client-i, or a temporary one) and so its
// own node ID, alloc dirs and simulated GPUs, and, unless a topology is
// configured, a simulated rack of DevClientsPerRack nodes (dev-client-1
// and -2 in rack r1, -3 and -4 in r2 ...) in block b1.
func (c *Config) DevClient(i int, serverHTTP string) *Config {
	n := c.clone()
	n.Name = DevClientName(i)
	n.Server.Enabled = false
	n.Client.Enabled = true
	n.Client.DevClients = 0
	n.Client.Servers = []string{serverHTTP}
	n.Ports = Ports{}
	n.AdvertiseHTTP = ""
	n.Join, n.JoinWAN = nil, nil
	if c.DataDir != "" {
		n.DataDir = filepath.Join(c.DataDir, n.Name)
	}
	if runtime.GOOS == "linux" && c.BindAddr == "127.0.0.1" {
		// Each dev client its own loopback address (Linux routes all of
		// 127/8 to lo), so its node, gang hostfile line and task ports are
		// distinct from the others': mpirun then starts the ranks of
		// another member through its rsh agent, as on separate machines.
		n.BindAddr = fmt.Sprintf("127.0.0.%d", 1+i)
	}
	if !c.Client.HasTopology() {
		n.Client.Topology = map[string]string{"rack": fmt.Sprintf("r%d", (i+DevClientsPerRack-1)/DevClientsPerRack), "block": "b1"}
	}
	return n
}

// HTTPAddr is the listen address of the HTTP API.
func (c *Config) HTTPAddr() string { return net.JoinHostPort(c.BindAddr, fmt.Sprint(c.Ports.HTTP)) }

// AdvertisedHTTP is the HTTP address other agents should use.
func (c *Config) AdvertisedHTTP() string {
	if c.AdvertiseHTTP != "" {
		return c.AdvertiseHTTP
	}
	host := c.BindAddr
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, fmt.Sprint(c.Ports.HTTP))
}

// Validate checks the settings; errors wrap ErrInvalid.
func (c *Config) Validate() error {
	var errs []string
	if !c.Server.Enabled && !c.Client.Enabled {
		errs = append(errs, "neither the server nor the client role is enabled (use -server, -client or -dev)")
	}
	for name, p := range map[string]int{"http": c.Ports.HTTP, "raft": c.Ports.Raft, "gossip": c.Ports.Gossip, "serf_wan": c.Ports.WAN} {
		if p < 0 || p > 65535 {
			errs = append(errs, fmt.Sprintf("%s port %d out of range", name, p))
		}
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		errs = append(errs, fmt.Sprintf("bind address %q is not an IP address", c.BindAddr))
	}
	if c.BindAddr != "" && !c.ACLEnabled && !c.Insecure && !loopback(c.BindAddr) {
		errs = append(errs, fmt.Sprintf("bind address %s is reachable from other machines and ACLs are off: anyone who reaches it "+
			"could run jobs and read task files; enable ACLs (-acl-enabled, acl { enabled = true }) or accept that with -insecure", c.BindAddr))
	}
	if c.Server.Enabled && !c.DevMode && c.Server.Encrypt == "" {
		errs = append(errs, "a server outside dev mode needs a gossip encryption key, so that only servers holding it can join "+
			"(-encrypt KEY or server { encrypt = KEY }; drover operator gossip keyring generate makes one)")
	}
	if t := c.TLS; (t.HTTP || t.RPC) && (t.CAFile == "" || t.CertFile == "" || t.KeyFile == "") {
		errs = append(errs, "tls http and rpc need ca_file, cert_file and key_file (drover tls ca create, drover tls cert create)")
	}
	if c.Server.Encrypt != "" {
		if k, err := base64.StdEncoding.DecodeString(c.Server.Encrypt); err != nil || (len(k) != 16 && len(k) != 24 && len(k) != 32) {
			errs = append(errs, "encrypt must be a base64 key of 16, 24 or 32 bytes (drover operator gossip keyring generate)")
		}
	}
	if c.Server.BootstrapExpect < 0 {
		errs = append(errs, "bootstrap_expect must not be negative")
	}
	if c.Server.Enabled && !c.DevMode && c.DataDir == "" {
		errs = append(errs, "a server needs data_dir (-data-dir) outside dev mode")
	}
	if c.Client.DevClients != 0 && (!c.DevMode || !c.Server.Enabled || !c.Client.Enabled) {
		errs = append(errs, "dev_clients needs dev mode (-dev) with the server and client roles")
	}
	if c.Client.DevClients < 0 || c.Client.DevClients > MaxDevClients {
		errs = append(errs, fmt.Sprintf("dev_clients %d: want 0 to %d", c.Client.DevClients, MaxDevClients))
	}
	if c.Client.DevGPUs != "" && !c.Client.Enabled {
		errs = append(errs, "dev_gpus needs the client role")
	}
	for _, level := range slices.Sorted(maps.Keys(c.Client.Topology)) {
		domain := c.Client.Topology[level]
		switch m, ok := c.Client.Meta[api.TopologyMetaPrefix+level]; {
		case level == "" || strings.ContainsAny(level, ". \t"):
			errs = append(errs, fmt.Sprintf("topology level %q: want a name such as rack or block", level))
		case domain == "":
			errs = append(errs, fmt.Sprintf("topology level %q has no domain", level))
		case ok && m != domain:
			errs = append(errs, fmt.Sprintf("topology level %q is %q but meta %s%s is %q", level, domain, api.TopologyMetaPrefix, level, m))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Client.HostVolumes)) {
		hv := c.Client.HostVolumes[name]
		if name == "" || strings.ContainsAny(name, "/ \t\x00") {
			errs = append(errs, fmt.Sprintf("host_volume %q: want a name without slashes or spaces", name))
		} else if !filepath.IsAbs(hv.Path) {
			errs = append(errs, fmt.Sprintf("host_volume %q: path %q must be absolute", name, hv.Path))
		} else if fi, err := os.Stat(hv.Path); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Sprintf("host_volume %q: path %q is not a directory", name, hv.Path))
		}
	}
	if c.Client.Enabled && !c.Server.Enabled && len(c.Client.Servers) == 0 {
		errs = append(errs, "a client without the server role needs servers (-servers host:port)")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return nil
}

// set copies a value the file gave (non-nil) over the default.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// loopback reports whether addr (an IP) is reachable from this machine
// only; 0.0.0.0 and :: are every interface.
func loopback(addr string) bool {
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

// file mirrors the HCL grammar.
type file struct {
	Name          *string       `hcl:"name,optional"`
	Region        *string       `hcl:"region,optional"`
	Datacenter    *string       `hcl:"datacenter,optional"`
	DataDir       *string       `hcl:"data_dir,optional"`
	BindAddr      *string       `hcl:"bind_addr,optional"`
	Insecure      *bool         `hcl:"insecure,optional"`
	EnableDebug   *bool         `hcl:"enable_debug,optional"`
	LogLevel      *string       `hcl:"log_level,optional"`
	AdvertiseHTTP *string       `hcl:"advertise_http,optional"`
	LeaveOnTerm   *bool         `hcl:"leave_on_terminate,optional"`
	Ports         *filePorts    `hcl:"ports,block"`
	Server        *fileServer   `hcl:"server,block"`
	Client        *fileClient   `hcl:"client,block"`
	Plugins       []*filePlugin `hcl:"plugin,block"`
	Limits        *fileLimits   `hcl:"limits,block"`
	ACL           *fileACL      `hcl:"acl,block"`
	TLS           *fileTLS      `hcl:"tls,block"`
}

type fileTLS struct {
	HTTP                 *bool   `hcl:"http,optional"`
	RPC                  *bool   `hcl:"rpc,optional"`
	CAFile               *string `hcl:"ca_file,optional"`
	CertFile             *string `hcl:"cert_file,optional"`
	KeyFile              *string `hcl:"key_file,optional"`
	VerifyServerHostname *bool   `hcl:"verify_server_hostname,optional"`
	VerifyHTTPSClient    *bool   `hcl:"verify_https_client,optional"`
}

type fileACL struct {
	Enabled          *bool   `hcl:"enabled,optional"`
	ReplicationToken *string `hcl:"replication_token,optional"`
}

type fileLimits struct {
	HTTPReadTimeout         *string `hcl:"http_read_timeout,optional"`
	HTTPMaxConnsPerClient   *int    `hcl:"http_max_conns_per_client,optional"`
	SnapshotRestoreMaxBytes *int64  `hcl:"snapshot_restore_max_bytes,optional"`
}

type filePorts struct {
	HTTP    *int `hcl:"http,optional"`
	RPC     *int `hcl:"rpc,optional"`
	Raft    *int `hcl:"raft,optional"`
	Serf    *int `hcl:"serf,optional"`
	Gossip  *int `hcl:"gossip,optional"`
	SerfWAN *int `hcl:"serf_wan,optional"`
}

type fileServer struct {
	Enabled         *bool      `hcl:"enabled,optional"`
	BootstrapExpect *int       `hcl:"bootstrap_expect,optional"`
	NumSchedulers   *int       `hcl:"num_schedulers,optional"`
	Encrypt         *string    `hcl:"encrypt,optional"`
	RetryJoin       []string   `hcl:"retry_join,optional"` // legacy spelling of server_join.retry_join
	DeadServerGrace *string    `hcl:"dead_server_grace,optional"`
	Stabilization   *string    `hcl:"server_stabilization_time,optional"`
	MinHeartbeatTTL *string    `hcl:"min_heartbeat_ttl,optional"`
	HeartbeatGrace  *string    `hcl:"heartbeat_grace,optional"`
	MaxHeartbeats   *float64   `hcl:"max_heartbeats_per_second,optional"`
	JobMaxGroup     *int       `hcl:"job_max_group_count,optional"`
	OIDCIssuer      *string    `hcl:"oidc_issuer,optional"`
	Authoritative   *string    `hcl:"authoritative_region,optional"`
	ServerJoin      *fileJoin  `hcl:"server_join,block"`
	Usage           *fileUsage `hcl:"usage,block"`
	Defrag          *defragHCL `hcl:"defrag,block"`
	Remain          hcl.Body   `hcl:",remain"`

	// Autoscale is the autoscale block (autoscale.go).
	Autoscale *autoscaleHCL `hcl:"autoscale,block"`
}

type defragHCL struct {
	Enabled  *bool   `hcl:"enabled,optional"`
	Interval *string `hcl:"interval,optional"`
	PerQueue *int    `hcl:"max_disruption_per_queue,optional"`
}

type fileUsage struct {
	Prices map[string]float64 `hcl:"prices,optional"`
}

type fileJoin struct {
	RetryJoin    []string `hcl:"retry_join,optional"`
	RetryJoinWAN []string `hcl:"retry_join_wan,optional"`
}

type fileClient struct {
	Enabled   *bool    `hcl:"enabled,optional"`
	Servers   []string `hcl:"servers,optional"`
	NodeClass *string  `hcl:"node_class,optional"`
	NodePool  *string  `hcl:"node_pool,optional"`
	DevGPUs   *string  `hcl:"dev_gpus,optional"`
	// DevClients is -dev-clients.
	DevClients *int `hcl:"dev_clients,optional"`
	// IntroToken is Nomad's client intro_token.
	IntroToken *string `hcl:"intro_token,optional"`
	// HostVolumes are the host_volume blocks.
	HostVolumes []*fileHostVolume `hcl:"host_volume,block"`
	Remain      hcl.Body          `hcl:",remain"`
}

type fileHostVolume struct {
	Name     string `hcl:"name,label"`
	Path     string `hcl:"path"`
	ReadOnly *bool  `hcl:"read_only,optional"`
}

type fileKV struct {
	Body hcl.Body `hcl:",remain"`
}

type filePlugin struct {
	Name   string  `hcl:"name,label"`
	Config *fileKV `hcl:"config,block"`
}

// LoadFile parses an HCL agent config file on top of base (Default() when
// nil). Errors carry file:line:col and wrap ErrInvalid.
func LoadFile(path string, base *Config) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read agent config: %w", err)
	}
	return Parse(src, path, base)
}

// Parse parses HCL agent config source (filename is used in diagnostics).
func Parse(src []byte, filename string, base *Config) (*Config, error) {
	if base == nil {
		base = Default()
	}
	c := base.clone()
	p := hclparse.NewParser()
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(filename, ".json") {
		f, diags = p.ParseJSON(src, filename)
	} else {
		f, diags = p.ParseHCL(src, filename)
	}
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	var fc file
	if diags := gohcl.DecodeBody(f.Body, nil, &fc); diags.HasErrors() {
		return nil, diagErr(diags)
	}
	set(&c.Name, fc.Name)
	set(&c.Region, fc.Region)
	set(&c.Datacenter, fc.Datacenter)
	set(&c.DataDir, fc.DataDir)
	set(&c.BindAddr, fc.BindAddr)
	set(&c.LogLevel, fc.LogLevel)
	set(&c.AdvertiseHTTP, fc.AdvertiseHTTP)
	set(&c.Insecure, fc.Insecure)
	set(&c.EnableDebug, fc.EnableDebug)
	if fc.LeaveOnTerm != nil {
		c.Server.LeaveOnTerminate = *fc.LeaveOnTerm
	}
	if p := fc.Ports; p != nil {
		for _, x := range []struct {
			dst *int
			v   *int
		}{{&c.Ports.HTTP, p.HTTP}, {&c.Ports.Raft, p.RPC}, {&c.Ports.Raft, p.Raft}, {&c.Ports.Gossip, p.Serf}, {&c.Ports.Gossip, p.Gossip}, {&c.Ports.WAN, p.SerfWAN}} {
			if x.v != nil {
				*x.dst = *x.v
			}
		}
	}
	if s := fc.Server; s != nil {
		if diags := unknownIn(s.Remain, "server"); diags.HasErrors() {
			return nil, diagErr(diags)
		}
		if s.Enabled != nil {
			c.Server.Enabled = *s.Enabled
		}
		if s.BootstrapExpect != nil {
			c.Server.BootstrapExpect = *s.BootstrapExpect
		}
		if s.NumSchedulers != nil {
			c.Server.NumSchedulers = *s.NumSchedulers
		}
		if s.Encrypt != nil {
			c.Server.Encrypt = *s.Encrypt
		}
		for _, d := range []struct {
			name string
			v    *string
			dst  *time.Duration
		}{{"dead_server_grace", s.DeadServerGrace, &c.Server.DeadServerGrace}, {"server_stabilization_time", s.Stabilization, &c.Server.ServerStabilization},
			{"min_heartbeat_ttl", s.MinHeartbeatTTL, &c.Server.MinHeartbeatTTL}, {"heartbeat_grace", s.HeartbeatGrace, &c.Server.HeartbeatGrace}} {
			if d.v == nil {
				continue
			}
			v, err := time.ParseDuration(*d.v)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%w: %s: server.%s = %q: want a duration such as 30s", ErrInvalid, filename, d.name, *d.v)
			}
			*d.dst = v
		}
		set(&c.Server.OIDCIssuer, s.OIDCIssuer)
		if s.MaxHeartbeats != nil {
			if *s.MaxHeartbeats <= 0 {
				return nil, fmt.Errorf("%w: %s: server.max_heartbeats_per_second = %g: want more than 0", ErrInvalid, filename, *s.MaxHeartbeats)
			}
			c.Server.MaxHeartbeatsPerSecond = *s.MaxHeartbeats
		}
		if s.JobMaxGroup != nil {
			if *s.JobMaxGroup <= 0 {
				return nil, fmt.Errorf("%w: %s: server.job_max_group_count = %d: want 1 or more", ErrInvalid, filename, *s.JobMaxGroup)
			}
			c.Server.JobMaxGroupCount = *s.JobMaxGroup
		}
		if s.Usage != nil {
			for m, p := range s.Usage.Prices {
				if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 || strings.Count(m, "/") != 2 {
					return nil, fmt.Errorf("%w: %s: server.usage.prices[%q] = %v: want a GPU model vendor/gpu/name and a price >= 0",
						ErrInvalid, filename, m, p)
				}
				if c.Server.UsagePrices == nil {
					c.Server.UsagePrices = map[string]float64{}
				}
				c.Server.UsagePrices[m] = p
			}
		}
		if d := s.Defrag; d != nil {
			if d.Enabled != nil {
				c.Server.Defrag.Enabled = *d.Enabled
			}
			if d.PerQueue != nil {
				if *d.PerQueue < 0 {
					return nil, fmt.Errorf("%w: %s: server.defrag.max_disruption_per_queue = %d: want 0 (no bound) or more", ErrInvalid, filename, *d.PerQueue)
				}
				c.Server.Defrag.PerQueue = *d.PerQueue
			}
			if d.Interval != nil {
				v, err := time.ParseDuration(*d.Interval)
				if err != nil || v <= 0 {
					return nil, fmt.Errorf("%w: %s: server.defrag.interval = %q: want a duration such as 10m", ErrInvalid, filename, *d.Interval)
				}
				c.Server.Defrag.Interval = v
			}
		}
		if s.Autoscale != nil {
			a, err := autoscaleFrom(filename, s.Autoscale)
			if err != nil {
				return nil, err
			}
			c.Server.Autoscale = a
		}
		c.Join = append(c.Join, s.RetryJoin...)
		set(&c.Server.AuthoritativeRegion, s.Authoritative)
		if s.ServerJoin != nil {
			c.Join = append(c.Join, s.ServerJoin.RetryJoin...)
			c.JoinWAN = append(c.JoinWAN, s.ServerJoin.RetryJoinWAN...)
		}
	}
	if cl := fc.Client; cl != nil {
		meta, options, topology, diags := clientMaps(cl.Remain)
		if diags.HasErrors() {
			return nil, diagErr(diags)
		}
		if cl.Enabled != nil {
			c.Client.Enabled = *cl.Enabled
		}
		if cl.Servers != nil {
			c.Client.Servers = cl.Servers
		}
		set(&c.Client.NodeClass, cl.NodeClass)
		set(&c.Client.DevGPUs, cl.DevGPUs)
		set(&c.Client.DevClients, cl.DevClients)
		set(&c.Client.NodePool, cl.NodePool)
		set(&c.Client.IntroToken, cl.IntroToken)
		for k, v := range meta {
			c.Client.Meta[k] = v
		}
		for k, v := range options {
			c.Client.Options[k] = v
		}
		for k, v := range topology {
			c.Client.Topology[k] = v
		}
		for _, hv := range cl.HostVolumes {
			c.Client.AddHostVolume(hv.Name, hv.Path, hv.ReadOnly != nil && *hv.ReadOnly)
		}
	}
	if a := fc.ACL; a != nil && a.Enabled != nil {
		c.ACLEnabled = *a.Enabled
	}
	if a := fc.ACL; a != nil {
		set(&c.ACLReplicationToken, a.ReplicationToken)
	}
	if t := fc.TLS; t != nil {
		set(&c.TLS.HTTP, t.HTTP)
		set(&c.TLS.RPC, t.RPC)
		set(&c.TLS.VerifyServerHostname, t.VerifyServerHostname)
		set(&c.TLS.VerifyHTTPSClient, t.VerifyHTTPSClient)
		set(&c.TLS.CAFile, t.CAFile)
		set(&c.TLS.CertFile, t.CertFile)
		set(&c.TLS.KeyFile, t.KeyFile)
	}
	if l := fc.Limits; l != nil {
		if err := l.apply(&c.Limits, filename); err != nil {
			return nil, err
		}
	}
	for _, pl := range fc.Plugins {
		cfg := map[string]any{}
		if pl.Config != nil {
			m, err := anyMap(pl.Config.Body)
			if err != nil {
				return nil, err
			}
			cfg = m
		}
		c.Plugins[pl.Name] = cfg
	}
	return c, nil
}

// apply sets the limits given in the block, checking each.
func (l *fileLimits) apply(dst *Limits, filename string) error {
	if l.HTTPReadTimeout != nil {
		v, err := time.ParseDuration(*l.HTTPReadTimeout)
		if err != nil || v <= 0 {
			return fmt.Errorf("%w: %s: limits.http_read_timeout = %q: want a positive duration such as 30s", ErrInvalid, filename, *l.HTTPReadTimeout)
		}
		dst.HTTPReadTimeout = v
	}
	if l.HTTPMaxConnsPerClient != nil {
		if *l.HTTPMaxConnsPerClient < 0 {
			return fmt.Errorf("%w: %s: limits.http_max_conns_per_client = %d: want 0 (no limit) or more", ErrInvalid, filename, *l.HTTPMaxConnsPerClient)
		}
		dst.HTTPMaxConnsPerClient = *l.HTTPMaxConnsPerClient
	}
	if l.SnapshotRestoreMaxBytes != nil {
		if *l.SnapshotRestoreMaxBytes <= 0 {
			return fmt.Errorf("%w: %s: limits.snapshot_restore_max_bytes = %d: want a positive number of bytes", ErrInvalid, filename, *l.SnapshotRestoreMaxBytes)
		}
		dst.SnapshotRestoreMaxBytes = *l.SnapshotRestoreMaxBytes
	}
	return nil
}

// unknownIn reports any attribute or block left in a remain body.
func unknownIn(body hcl.Body, _ string) hcl.Diagnostics {
	if body == nil {
		return nil
	}
	_, diags := body.Content(&hcl.BodySchema{})
	return diags
}

// clientMaps reads meta, options and topology of a client block, each
// either a block (meta { k = "v" }) or a map attribute (options = { "a.b"
// = "v" }, needed for keys with dots); anything else in the block is an
// error.
func clientMaps(body hcl.Body) (meta, options, topology map[string]string, diags hcl.Diagnostics) {
	meta, options, topology = map[string]string{}, map[string]string{}, map[string]string{}
	if body == nil {
		return meta, options, topology, nil
	}
	content, diags := body.Content(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "meta"}, {Name: "options"}, {Name: "topology"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "meta"}, {Type: "options"}, {Type: "topology"}},
	})
	if diags.HasErrors() {
		return nil, nil, nil, diags
	}
	dst := map[string]map[string]string{"meta": meta, "options": options, "topology": topology}
	for name, a := range content.Attributes {
		var m map[string]string
		if d := gohcl.DecodeExpression(a.Expr, nil, &m); d.HasErrors() {
			return nil, nil, nil, d
		}
		for k, v := range m {
			dst[name][k] = v
		}
	}
	for _, b := range content.Blocks {
		m, err := stringMapDiags(b.Body)
		if err.HasErrors() {
			return nil, nil, nil, err
		}
		for k, v := range m {
			dst[b.Type][k] = v
		}
	}
	return meta, options, topology, nil
}

func stringMapDiags(body hcl.Body) (map[string]string, hcl.Diagnostics) {
	attrs, diags := body.JustAttributes()
	if diags.HasErrors() {
		return nil, diags
	}
	out := map[string]string{}
	for name, a := range attrs {
		var s string
		if diags := gohcl.DecodeExpression(a.Expr, nil, &s); diags.HasErrors() {
			return nil, diags
		}
		out[name] = s
	}
	return out, nil
}

func anyMap(body hcl.Body) (map[string]any, error) {
	attrs, diags := body.JustAttributes()
	if diags.HasErrors() {
		return nil, diagErr(diags)
	}
	out := map[string]any{}
	for name, a := range attrs {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return nil, diagErr(diags)
		}
		g, err := ctyToGo(v)
		if err != nil {
			r := a.Expr.Range()
			return nil, fmt.Errorf("%w: %s: %s: %v", ErrInvalid, r.String(), name, err)
		}
		out[name] = g
	}
	return out, nil
}

// ctyToGo converts a value to plain Go (via its JSON form).
func ctyToGo(v cty.Value) (any, error) {
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func diagErr(diags hcl.Diagnostics) error {
	var msgs []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		m := d.Summary
		if d.Detail != "" {
			m += "; " + d.Detail
		}
		if d.Subject != nil {
			m = d.Subject.String() + ": " + m
		}
		msgs = append(msgs, m)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(msgs, "\n"))
}

func (c *Config) clone() *Config {
	n := *c
	n.Client.Servers = append([]string(nil), c.Client.Servers...)
	n.Join = append([]string(nil), c.Join...)
	n.JoinWAN = append([]string(nil), c.JoinWAN...)
	n.Client.Meta = copyMap(c.Client.Meta)
	n.Client.Options = copyMap(c.Client.Options)
	n.Client.Topology = copyMap(c.Client.Topology)
	n.Client.HostVolumes = maps.Clone(c.Client.HostVolumes)
	n.Plugins = map[string]map[string]any{}
	for k, v := range c.Plugins {
		n.Plugins[k] = v
	}
	return &n
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
