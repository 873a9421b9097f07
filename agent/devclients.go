package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// devClientsEnabled: a dev agent with -dev-clients N runs its server role
// itself and its client role as N client-only agents in the same process
// (startDevClients), instead of one client of its own.
func (a *Agent) devClientsEnabled() bool { return a.cfg.DevMode && a.cfg.Client.DevClients > 0 }

// startDevClients starts the dev clients, each a client-only Agent
// (config.Config.DevClient) with its own node, data dir and HTTP API on an
// ephemeral port, registering with this agent's server through its API.
// Each is started in turn; the first that fails fails the start (the
// agent's Start then shuts down those already running).
func (a *Agent) startDevClients(ctx context.Context) error {
	for i := 1; i <= a.cfg.Client.DevClients; i++ {
		cfg := a.cfg.DevClient(i, a.HTTPAddr())
		c, err := New(cfg, a.base.With("node", cfg.Name))
		if err != nil {
			return fmt.Errorf("dev client %s: %w", cfg.Name, err)
		}
		c.devServer = a.server
		if err := c.Start(ctx); err != nil {
			return fmt.Errorf("dev client %s: %w", cfg.Name, err) // its Start shut it down
		}
		a.devClients = append(a.devClients, c)
	}
	return nil
}

// shutdownDevClients stops the dev clients, all at once: each stops its
// tasks (their kill_timeout) before it returns.
func (a *Agent) shutdownDevClients(ctx context.Context) error {
	errs := make([]error, len(a.devClients))
	var wg sync.WaitGroup
	for i, c := range a.devClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Shutdown(ctx); err != nil {
				errs[i] = fmt.Errorf("dev client %s: %w", c.cfg.Name, err)
			}
		}()
	}
	wg.Wait()
	a.devClients = nil
	return errors.Join(errs...)
}

// DevClients are the HTTP addresses of the dev clients' APIs, by node name.
func (a *Agent) DevClients() map[string]string {
	out := map[string]string{}
	for _, c := range a.devClients {
		out[c.cfg.Name] = c.HTTPAddr()
	}
	return out
}
