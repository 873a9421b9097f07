package client

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/drover/drover/agent/fingerprint"
	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
	"github.com/drover/drover/internal/clock"
)

// DeviceSource fingerprints devices (agent/fingerprint/nvidia's
// Fingerprinter satisfies it). Watch runs until ctx ends, calling changed
// when Devices changed (health events); the client owns that goroutine
// and closes the source (if it is an io.Closer) after Watch returned.
type DeviceSource interface {
	Devices() []*api.NodeDeviceResource
	Watch(ctx context.Context, changed func())
}

// Config of the client role.
type Config struct {
	// DataDir holds state.db, alloc/<id>/ and drivers/<name>/ (required).
	DataDir string
	// Servers are server HTTP addresses (host:port or URLs).
	Servers    []string
	NodeName   string
	Datacenter string
	Region     string
	NodePool   string
	NodeClass  string
	Meta       map[string]string
	// HostVolumes are the host volumes offered to jobs, by name.
	HostVolumes map[string]*api.ClientHostVolumeConfig
	// HTTPAddr is the advertised host:port of this agent's HTTP server.
	HTTPAddr string
	// BindAddr is the address the agent binds; used for the node's IP.
	BindAddr     string
	Drivers      map[string]drivers.Factory
	PluginConfig map[string]map[string]any
	// Options such as "driver.raw_exec.enable" = "true".
	Options map[string]string
	DevMode bool
	// StopAllocsOnShutdown stops every alloc when the client shuts down
	// gracefully. The dev agent sets it when its data dir is temporary;
	// otherwise tasks keep running and the next agent reattaches.
	StopAllocsOnShutdown bool
	Logger               *slog.Logger
	// Clock is the client's time source (clock.Real by default): its
	// loops, backoffs and the runners' restart delays.
	Clock clock.Clock
	// HTTPClient, when set, carries every call to the servers (tests cut a
	// client off from them with its transport); nil: a plain client.
	HTTPClient *http.Client
	// ServerScheme is the scheme of server addresses given without one,
	// the heartbeat's server list included ("https" under mutual TLS;
	// default http).
	ServerScheme string
	// Devices, when set, builds the node's device fingerprinter (GPUs)
	// once the node ID is known (simulated GPUs derive UUIDs from it).
	Devices func(nodeID string) (DeviceSource, error)
	// GPUSampleInterval is how often allocs' GPU usage is read (0:
	// DefaultGPUSampleInterval; gpuusage.go).
	GPUSampleInterval time.Duration
	// Host, when set, adjusts the host fingerprint before the node is
	// built from it (a simulated DGX node, -dev-gpus, advertises the
	// server's CPU and memory).
	Host func(h *fingerprint.Host)
	// Intro returns the introduction token the node registers with
	// (client intro_token; an agent that is also a server signs one
	// itself). Nil or "": none (an open cluster, or a client certificate).
	Intro func(ctx context.Context) (string, error)

	// Intervals (zero = defaults); tests shorten them.
	DriverFingerprintInterval   time.Duration // 30 s
	ResourceFingerprintInterval time.Duration // 5 min
	UpdateCoalesce              time.Duration // 200 ms
	// AllocWaitTime is the blocking query wait (default 5 min).
	AllocWaitTime time.Duration
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Datacenter == "" {
		c.Datacenter = "dc1"
	}
	if c.Region == "" {
		c.Region = "global"
	}
	if c.NodePool == "" {
		c.NodePool = "default"
	}
	if c.DriverFingerprintInterval <= 0 {
		c.DriverFingerprintInterval = 30 * time.Second
	}
	if c.ResourceFingerprintInterval <= 0 {
		c.ResourceFingerprintInterval = 5 * time.Minute
	}
	if c.UpdateCoalesce <= 0 {
		c.UpdateCoalesce = 200 * time.Millisecond
	}
	if c.AllocWaitTime <= 0 {
		c.AllocWaitTime = 5 * time.Minute
	}
}
