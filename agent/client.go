package agent

import (
	"context"
	"fmt"
	nethttp "net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/drover/drover/agent/client"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/drivers/containerd"
	"github.com/drover/drover/drivers/exec"
	"github.com/drover/drover/drivers/qemu"
	"github.com/drover/drover/drivers/rawexec"
)

// clientRole is what the agent needs of the client role.
type clientRole interface {
	Handler() nethttp.Handler
	HasAlloc(id string) bool
	Registered() <-chan struct{}
	Start(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// Drivers is the registry of task drivers a client can enable, by the
// name job files use. A driver that is unhealthy on a node (e.g. no
// containerd socket) is fingerprinted as such and simply not used.
var Drivers = map[string]drivers.Factory{
	exec.Name:       exec.New,
	rawexec.Name:    rawexec.New,
	containerd.Name: containerdFactory,
	qemu.Name:       qemu.New,
}

// newClient builds (but does not start) the client role. In dev mode
// without -data-dir the client's state lives in a temporary directory
// removed on Shutdown, so its allocs are stopped then too; with -data-dir
// tasks outlive a graceful shutdown and are reattached, as on any client.
func (a *Agent) newClient() (clientRole, error) {
	cfg := a.cfg
	dataDir := cfg.DataDir
	if dataDir == "" {
		if !cfg.DevMode {
			return nil, fmt.Errorf("client: data dir required outside dev mode")
		}
		d, err := os.MkdirTemp("", "drover-dev-")
		if err != nil {
			return nil, fmt.Errorf("client: temp data dir: %w", err)
		}
		a.tmpDir = d
		dataDir = d
	}
	servers := cfg.Client.Servers
	if cfg.Server.Enabled && len(servers) == 0 {
		servers = []string{cfg.AdvertisedHTTP()}
	}
	options := map[string]string{}
	for k, v := range cfg.Client.Options {
		options[k] = v
	}
	// Nomad's `plugin "raw_exec" { config { enabled = true } }` is the
	// client option driver.raw_exec.enable here, not a driver setting.
	plugins := map[string]map[string]any{}
	for name, pc := range cfg.Plugins {
		c := map[string]any{}
		for k, v := range pc {
			if name == "raw_exec" && k == "enabled" {
				if truthyAny(v) {
					options["driver.raw_exec.enable"] = "true"
				}
				continue
			}
			c[k] = v
		}
		plugins[name] = c
	}
	devices, err := deviceSource(cfg.Client.DevGPUs, a.base)
	if err != nil {
		return nil, err
	}
	c, err := client.New(&client.Config{
		DataDir: filepath.Join(dataDir, "client"), Servers: servers, HTTPClient: a.tls.client, ServerScheme: a.tls.scheme(), NodeName: cfg.Name, Devices: devices,
		Datacenter: cfg.Datacenter, Region: cfg.Region, NodePool: cfg.Client.NodePool,
		NodeClass: cfg.Client.NodeClass, Meta: nodeMeta(cfg), HTTPAddr: cfg.AdvertisedHTTP(),
		BindAddr: cfg.BindAddr, Drivers: Drivers, PluginConfig: plugins, Options: options,
		HostVolumes: cfg.Client.HostVolumes, DevMode: cfg.DevMode, StopAllocsOnShutdown: a.tmpDir != "", Logger: a.base,
		Host:  simHostResources(cfg.Client.DevGPUs),
		Intro: a.clientIntro,
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// clientIntro is the introduction token this agent's client registers
// with: the configured one; else, where the cluster requires one and this
// agent is also a server (or is a dev client of one), one it signs
// itself (valid a minute, for this node's name and pool); else none.
func (a *Agent) clientIntro(ctx context.Context) (string, error) {
	cfg := a.cfg
	srv := a.server
	if srv == nil {
		srv = a.devServer // a dev client of this process's server
	}
	if cfg.Client.IntroToken != "" || srv == nil || !a.requireNodeIntro() {
		return cfg.Client.IntroToken, nil
	}
	resp, err := srv.Nodes().CreateNodeIntro(ctx, &api.NodeIntroRequest{NodeName: cfg.Name, NodePool: cfg.Client.NodePool, TTL: time.Minute})
	if err != nil {
		return "", fmt.Errorf("introduce this agent's own client: %w", err)
	}
	return resp.Token, nil
}

func truthyAny(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		return b == "true" || b == "1"
	}
	return false
}
