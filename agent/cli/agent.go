package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/drover/drover/agent"
	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/agent/hugepages"
)

func init() {
	rootCmd.AddCommand(newAgentCmd())
}

// agentFlags are the flags of `drover agent`; set ones override -config.
type agentFlags struct {
	dev, server, client             bool
	dataDir, bind, logLevel, config string
	name, dc, region, nodeClass     string
	introToken                      string
	devGPUs                         string
	httpPort, raftPort, gossipPort  int
	bootstrapExpect, devClients     int
	servers, join                   []string
	encrypt                         string
	retryJoin                       []string
	topology                        map[string]string
	hostVolumes                     []string
	aclEnabled, insecure            bool
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent [flags]",
		Short: "Run a drover agent: server, client, or both with -dev",
		Long: `Run a drover agent. -dev runs the server and the client in one process on
127.0.0.1 (in-memory Raft unless -data-dir is given) with every healthy driver;
-dev -dev-clients N runs the server and N client nodes in one process.
Settings come from -config FILE (HCL, Nomad's agent grammar), then flags.`,
		Args: exactArgs(0),
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.dev, "dev", false, "dev mode: server + client on 127.0.0.1, in-memory state")
	fl.BoolVar(&f.server, "server", false, "run the server role")
	fl.BoolVar(&f.client, "client", false, "run the client role")
	fl.StringVar(&f.config, "config", "", "HCL agent config file")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory for Raft and client state")
	fl.StringVar(&f.bind, "bind", "", "address to bind (default 127.0.0.1; another needs -acl-enabled or -insecure)")
	fl.IntVar(&f.httpPort, "http-port", config.DefaultHTTPPort, "HTTP API port (0: any free port)")
	fl.IntVar(&f.raftPort, "raft-port", config.DefaultRaftPort, "Raft port")
	fl.IntVar(&f.gossipPort, "gossip-port", config.DefaultGossipPort, "gossip port")
	fl.IntVar(&f.bootstrapExpect, "bootstrap-expect", 0, "number of servers to wait for before bootstrapping Raft")
	fl.StringSliceVar(&f.servers, "servers", nil, "HTTP addresses of servers for the client (host:port,...)")
	fl.StringArrayVar(&f.join, "join", nil, "gossip address of a server to join (repeatable)")
	fl.StringArrayVar(&f.retryJoin, "retry-join", nil, "like -join (joins are always retried until one answers)")
	fl.StringVar(&f.encrypt, "encrypt", "", "gossip encryption key (base64, 16/24/32 bytes; see operator gossip keyring)")
	fl.StringVar(&f.name, "node", "", "node name (default the hostname)")
	fl.StringVar(&f.dc, "dc", "", "datacenter (default dc1)")
	fl.StringVar(&f.region, "region", "", "region (default global)")
	fl.StringVar(&f.nodeClass, "node-class", "", "node class of the client")
	fl.StringVar(&f.introToken, "client-intro-token", "", "introduction token the client first registers with (drover node intro create; or DROVER_CLIENT_INTRO_TOKEN)")
	fl.StringVar(&f.logLevel, "log-level", "", "log level: debug, info, warn, error")
	fl.StringVar(&f.devGPUs, "dev-gpus", "", "simulate a DGX server's GPUs: dgxa100, dgxh100, dgxh200 or dgxb200 (add :mig for MIG mode); "+
		"without -topology the node gets a simulated rack and block from the number in its name")
	fl.IntVar(&f.devClients, "dev-clients", 0, "with -dev: run this many client nodes (dev-client-1 ...) in the process instead of one, "+
		"each with its own data dir, node ID and simulated GPUs, two to a simulated rack (r1, r2 ...)")
	fl.StringToStringVar(&f.topology, "topology", nil, "the node's network topology domains by level (rack=r1,block=b0): node meta topology.<level>")
	fl.BoolVar(&f.aclEnabled, "acl-enabled", false, "enforce ACLs (bootstrap a management token with drover acl bootstrap)")
	fl.BoolVar(&f.insecure, "insecure", false, "allow a bind address other machines reach with ACLs off (no authentication at all)")
	fl.StringArrayVar(&f.hostVolumes, "host-volume", nil, "a host volume jobs may mount: name=/path or name=/path:ro (repeatable)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := f.build(cmd)
		if err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
		return runAgent(cmd, cfg)
	}
	return cmd
}

// build merges defaults (or dev settings), the config file and set flags.
func (f *agentFlags) build(cmd *cobra.Command) (*config.Config, error) {
	cfg := config.Default()
	if f.dev {
		cfg = config.Dev()
	}
	if f.config != "" {
		c, err := config.LoadFile(f.config, cfg)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	set := cmd.Flags().Changed
	if set("server") {
		cfg.Server.Enabled = f.server
	}
	if set("client") {
		cfg.Client.Enabled = f.client
	}
	if set("data-dir") {
		cfg.DataDir = f.dataDir
	}
	if set("bind") {
		cfg.BindAddr = f.bind
	}
	if set("http-port") {
		cfg.Ports.HTTP = f.httpPort
	}
	if set("raft-port") {
		cfg.Ports.Raft = f.raftPort
	}
	if set("gossip-port") {
		cfg.Ports.Gossip = f.gossipPort
	}
	if set("bootstrap-expect") {
		cfg.Server.BootstrapExpect = f.bootstrapExpect
	}
	if set("servers") {
		cfg.Client.Servers = f.servers
	}
	if set("join") {
		cfg.Join = append(cfg.Join, f.join...)
	}
	if set("retry-join") {
		cfg.Join = append(cfg.Join, f.retryJoin...)
	}
	if set("encrypt") {
		cfg.Server.Encrypt = f.encrypt
	}
	if set("node") {
		cfg.Name = f.name
	}
	if set("dc") {
		cfg.Datacenter = f.dc
	}
	if set("region") {
		cfg.Region = f.region
	}
	if set("node-class") {
		cfg.Client.NodeClass = f.nodeClass
	}
	if set("client-intro-token") {
		cfg.Client.IntroToken = f.introToken
	} else if t := os.Getenv("DROVER_CLIENT_INTRO_TOKEN"); t != "" && cfg.Client.IntroToken == "" {
		cfg.Client.IntroToken = t
	}
	if set("log-level") {
		cfg.LogLevel = f.logLevel
	}
	if set("dev-gpus") {
		cfg.Client.DevGPUs = f.devGPUs
	}
	if set("dev-clients") {
		cfg.Client.DevClients = f.devClients
	}
	if set("topology") {
		maps.Copy(cfg.Client.Topology, f.topology)
	}
	if set("acl-enabled") {
		cfg.ACLEnabled = f.aclEnabled
	}
	if set("insecure") {
		cfg.Insecure = f.insecure
	}
	for _, hv := range f.hostVolumes {
		name, path, ro, err := config.ParseHostVolumeFlag(hv)
		if err != nil {
			return nil, err
		}
		cfg.Client.AddHostVolume(name, path, ro)
	}
	if _, err := parseLevel(cfg.LogLevel); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if s == "" {
		return slog.LevelInfo, nil
	}
	if err := l.UnmarshalText([]byte(strings.ToLower(s))); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// serverGCPercent is the collector's GC percent in an agent that runs a
// server, unless GOGC is set. A server's heap is mostly its state store:
// gigabytes that live as long as the process, all of which every
// collection marks. At 200 the heap may grow to three times the live
// state between collections instead of twice, so marking runs about half
// as often: less server CPU per alloc for more resident memory, as
// BenchmarkC1M's server-CPU-ms/1k-allocs and server-RSS-MB show (runs
// in docs/perf-log.md). A small heap (a dev agent at rest) is not
// measurably bigger. GOGC=100 restores Go's default.
const serverGCPercent = 200

// tuneGC sets a server's GC percent (serverGCPercent) when the
// environment does not.
func tuneGC(cfg *config.Config) {
	if _, set := os.LookupEnv("GOGC"); !set && cfg.Server.Enabled {
		debug.SetGCPercent(serverGCPercent)
	}
}

func runAgent(cmd *cobra.Command, cfg *config.Config) error {
	level, _ := parseLevel(cfg.LogLevel)
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	agent.Version = Version
	tuneGC(cfg)
	defer hugepages.StartFromEnv(logger).Stop() // opt-in: DROVER_HEAP_HUGEPAGES=1
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	a, err := agent.New(cfg, logger)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if err := a.Start(ctx); err != nil {
		return cmdErr("start agent: %w", err)
	}
	scheme := "http"
	if cfg.TLS.HTTP {
		scheme = "https"
	}
	addr := scheme + "://" + a.HTTPAddr()
	roles := []string{}
	if cfg.Server.Enabled {
		roles = append(roles, "server")
	}
	switch {
	case cfg.Client.Enabled && cfg.DevMode && cfg.Client.DevClients > 0:
		roles = append(roles, fmt.Sprintf("%d clients", cfg.Client.DevClients))
	case cfg.Client.Enabled:
		roles = append(roles, "client")
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "==> drover agent started: API %s, UI %s/ui\n", addr, addr)
	fmt.Fprintf(out, "    roles: %s; region %s, datacenter %s\n", strings.Join(roles, "+"), cfg.Region, cfg.Datacenter)
	if dc := a.DevClients(); len(dc) > 0 {
		names := slices.Sorted(maps.Keys(dc))
		slices.SortStableFunc(names, func(x, y string) int { return len(x) - len(y) }) // dev-client-2 before -10
		for _, n := range names {
			fmt.Fprintf(out, "    client node %s: API %s://%s\n", n, scheme, dc[n])
		}
	}
	if f, ok := out.(*os.File); ok {
		_ = f.Sync()
	}
	<-ctx.Done()
	fmt.Fprintln(out, "==> caught signal, shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		return cmdErr("shutdown: %w", err)
	}
	fmt.Fprintln(out, "==> drover agent stopped")
	return nil
}
