package config

import (
	"fmt"
	"time"

	"github.com/drover/drover/server/autoscale"
)

// Autoscale is the cluster autoscaler's configuration (HCL server {
// autoscale { ... } }): providers by name and one policy per node pool.
//
//	server {
//	  autoscale {
//	    interval = "10s"
//	    provider "cloud" { type = "external"  command = ["/usr/local/bin/drover-cloud"] }
//	    provider "here"  { type = "local"  dir = "/var/lib/drover-local" }
//	    provider "bench" { type = "sim"  boot_delay = "60s" }
//	    pool "gpu" {
//	      min = 0  max = 16  provider = "cloud"  cooldown = "2m"
//	      node_shape { gpu_model = "H100"  gpus = 8  cpu = 96000  memory = 393216  spot = true  price = 24.5 }
//	      scale_in { strategy = "empty"  idle = "10m"  drain_deadline = "5m" }
//	    }
//	  }
//	}
type Autoscale struct {
	Interval  time.Duration
	Providers []AutoscaleProvider
	Policies  []autoscale.Policy
}

// AutoscaleProvider is one provider block.
type AutoscaleProvider struct {
	Name string
	// Type is "external" (Command, Timeout), "local" (Dir, DevGPUs; real
	// client agents on this host, for tests) or "sim" (BootDelay,
	// DevGPUs; simulated nodes, for benchmarks).
	Type      string
	Command   []string
	Timeout   time.Duration
	Dir       string
	DevGPUs   string
	BootDelay time.Duration
}

type autoscaleHCL struct {
	Interval  *string                 `hcl:"interval,optional"`
	Providers []*autoscaleProviderHCL `hcl:"provider,block"`
	Pools     []*autoscalePoolHCL     `hcl:"pool,block"`
}

type autoscaleProviderHCL struct {
	Name    string   `hcl:"name,label"`
	Type    string   `hcl:"type"`
	Command []string `hcl:"command,optional"`
	Timeout *string  `hcl:"timeout,optional"`
	Dir     *string  `hcl:"dir,optional"`
	DevGPUs *string  `hcl:"dev_gpus,optional"`
	Boot    *string  `hcl:"boot_delay,optional"`
}

type autoscalePoolHCL struct {
	Pool     string      `hcl:"pool,label"`
	Min      *int        `hcl:"min,optional"`
	Max      int         `hcl:"max"`
	Provider string      `hcl:"provider"`
	Cooldown *string     `hcl:"cooldown,optional"`
	Shape    *shapeHCL   `hcl:"node_shape,block"`
	ScaleIn  *scaleInHCL `hcl:"scale_in,block"`
}

type shapeHCL struct {
	Datacenter *string           `hcl:"datacenter,optional"`
	GPUModel   *string           `hcl:"gpu_model,optional"`
	GPUs       *int              `hcl:"gpus,optional"`
	GPUMemory  *int              `hcl:"gpu_memory,optional"`
	CPU        int64             `hcl:"cpu"`
	Cores      *int              `hcl:"cores,optional"`
	Memory     int64             `hcl:"memory"`
	Disk       *int64            `hcl:"disk,optional"`
	Spot       *bool             `hcl:"spot,optional"`
	Price      *float64          `hcl:"price,optional"`
	Drivers    []string          `hcl:"drivers,optional"`
	Meta       map[string]string `hcl:"meta,optional"`
}

type scaleInHCL struct {
	Strategy      *string `hcl:"strategy,optional"`
	Idle          *string `hcl:"idle,optional"`
	DrainDeadline *string `hcl:"drain_deadline,optional"`
}

// autoscaleFrom checks and converts the autoscale block of file filename.
func autoscaleFrom(filename string, h *autoscaleHCL) (Autoscale, error) {
	var out Autoscale
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: server.autoscale: %s", ErrInvalid, filename, fmt.Sprintf(format, args...))
	}
	dur := func(what string, s *string, dst *time.Duration) error {
		if s == nil {
			return nil
		}
		v, err := time.ParseDuration(*s)
		if err != nil || v < 0 {
			return bad("%s = %q: want a duration such as 10m", what, *s)
		}
		*dst = v
		return nil
	}
	if err := dur("interval", h.Interval, &out.Interval); err != nil {
		return out, err
	}
	names := map[string]bool{}
	for _, p := range h.Providers {
		if names[p.Name] {
			return out, bad("provider %q defined twice", p.Name)
		}
		names[p.Name] = true
		ap := AutoscaleProvider{Name: p.Name, Type: p.Type, Command: p.Command}
		switch p.Type {
		case "external":
			if len(p.Command) == 0 {
				return out, bad("provider %q: type external needs a command", p.Name)
			}
		case "local", "sim":
		default:
			return out, bad("provider %q: type %q: want external, local or sim", p.Name, p.Type)
		}
		if err := dur("provider "+p.Name+" boot_delay", p.Boot, &ap.BootDelay); err != nil {
			return out, err
		}
		if err := dur("provider "+p.Name+" timeout", p.Timeout, &ap.Timeout); err != nil {
			return out, err
		}
		if p.Dir != nil {
			ap.Dir = *p.Dir
		}
		if p.DevGPUs != nil {
			ap.DevGPUs = *p.DevGPUs
		}
		out.Providers = append(out.Providers, ap)
	}
	pools := map[string]bool{}
	for _, p := range h.Pools {
		if pools[p.Pool] {
			return out, bad("pool %q defined twice", p.Pool)
		}
		pools[p.Pool] = true
		if !names[p.Provider] {
			return out, bad("pool %q: no provider %q", p.Pool, p.Provider)
		}
		pol := autoscale.Policy{Pool: p.Pool, Max: p.Max, Provider: p.Provider}
		if p.Min != nil {
			pol.Min = *p.Min
		}
		if err := dur("pool "+p.Pool+" cooldown", p.Cooldown, &pol.Cooldown); err != nil {
			return out, err
		}
		if s := p.Shape; s != nil {
			pol.Shape = autoscale.Shape{CPU: s.CPU, MemoryMB: s.Memory, Drivers: s.Drivers, Meta: s.Meta}
			set(&pol.Shape.Datacenter, s.Datacenter)
			set(&pol.Shape.GPUModel, s.GPUModel)
			set(&pol.Shape.GPUs, s.GPUs)
			set(&pol.Shape.GPUMemoryMiB, s.GPUMemory)
			set(&pol.Shape.Cores, s.Cores)
			set(&pol.Shape.DiskMB, s.Disk)
			set(&pol.Shape.Spot, s.Spot)
			set(&pol.Shape.Price, s.Price)
		}
		if s := p.ScaleIn; s != nil {
			set(&pol.ScaleIn.Strategy, s.Strategy)
			if err := dur("pool "+p.Pool+" idle", s.Idle, &pol.ScaleIn.Idle); err != nil {
				return out, err
			}
			if err := dur("pool "+p.Pool+" drain_deadline", s.DrainDeadline, &pol.ScaleIn.DrainDeadline); err != nil {
				return out, err
			}
		}
		if err := pol.Validate(); err != nil {
			return out, bad("%v", err)
		}
		out.Policies = append(out.Policies, pol)
	}
	return out, nil
}
