package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/drover/drover/agent/config"
	"github.com/drover/drover/server"
	"github.com/drover/drover/server/autoscale"
)

// autoscaleConfig builds the server's autoscaler from the agent config:
// its providers (closed on Shutdown) and policies. The local provider's
// agents join this agent's HTTP address.
func (a *Agent) autoscaleConfig(cfg *config.Config) (server.AutoscaleConfig, error) {
	as := cfg.Server.Autoscale
	out := server.AutoscaleConfig{Policies: as.Policies, Interval: as.Interval, Providers: map[string]autoscale.Provider{}}
	for _, p := range as.Providers {
		switch p.Type {
		case "external":
			e := &autoscale.External{Command: p.Command, Timeout: p.Timeout, Stderr: os.Stderr}
			out.Providers[p.Name] = e
			a.autoscaleClosers = append(a.autoscaleClosers, e)
		case "sim":
			l := &liveSim{servers: []string{httpURL(a.HTTPAddr())}, boot: p.BootDelay, devGPUs: p.DevGPUs, log: a.base}
			out.Providers[p.Name] = l
			a.autoscaleClosers = append(a.autoscaleClosers, l)
		case "local":
			dir := p.Dir
			if dir == "" {
				dir = filepath.Join(cfg.DataDir, "autoscale-local", p.Name)
			}
			l := &autoscale.Local{Servers: []string{a.HTTPAddr()}, Dir: dir, DevGPUs: p.DevGPUs, Stderr: os.Stderr}
			out.Providers[p.Name] = l
			a.autoscaleClosers = append(a.autoscaleClosers, l)
		default:
			return out, fmt.Errorf("autoscale provider %q: unknown type %q", p.Name, p.Type)
		}
	}
	return out, nil
}

// closeAutoscale stops the providers' processes (external commands,
// local agents) after the server stopped.
func (a *Agent) closeAutoscale(context.Context) error {
	var first error
	for _, c := range a.autoscaleClosers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	a.autoscaleClosers = nil
	return first
}

var _ io.Closer = (*autoscale.Local)(nil)
