package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drover/drover/agent/sim"
	"github.com/drover/drover/server/autoscale"
)

// liveSim is the autoscaler's sim provider in a running cluster: each
// instance is one simulated node (agent/sim, the node simulator's HTTP
// protocol) registered after the boot delay, named after the instance
// (meta drover.instance), in its pool, with the shape's CPU, memory,
// simulated GPUs (DevGPUs) and spot meta. Its allocs read running at
// once and run until stopped. Destroying it stops its heartbeats: the
// servers see it go, as a vanished machine.
type liveSim struct {
	servers []string
	boot    time.Duration
	devGPUs string
	log     *slog.Logger

	mu      sync.Mutex
	next    int
	insts   map[string]*liveSimInstance
	notices []autoscale.Interruption
}

type liveSimInstance struct {
	inst  autoscale.Instance
	timer *time.Timer
	sim   *sim.Sim
	gone  bool
}

var _ autoscale.Provider = (*liveSim)(nil)

func (l *liveSim) Create(_ context.Context, pool string, shape autoscale.Shape, n int) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.insts == nil {
		l.insts = map[string]*liveSimInstance{}
	}
	var ids []string
	for range n {
		l.next++
		id := fmt.Sprintf("sim-%s-%d", pool, l.next)
		in := &liveSimInstance{inst: autoscale.Instance{ID: id, Pool: pool, Spot: shape.Spot, Price: shape.Price, Created: time.Now()}}
		cfg := l.simConfig(id, pool, shape, uint64(l.next))
		in.timer = time.AfterFunc(l.boot, func() { l.start(in, cfg) })
		l.insts[id] = in
		ids = append(ids, id)
	}
	return ids, nil
}

func (l *liveSim) simConfig(id, pool string, shape autoscale.Shape, seed uint64) sim.Config {
	cores := shape.Cores
	if cores <= 0 {
		cores = max(1, int(shape.CPU/1000))
	}
	meta := map[string]string{autoscale.MetaInstance: id}
	if shape.Spot {
		meta[autoscale.MetaSpot] = "true"
	}
	for k, v := range shape.Meta {
		meta[k] = v
	}
	cfg := sim.Config{Servers: l.servers, Nodes: 1, NodePool: pool, NamePrefix: id + "-", Meta: meta, Seed: 1000 + seed,
		Cores: cores, CoreMHz: max(1, int(shape.CPU)/cores), MemoryMB: shape.MemoryMB, DiskMB: shape.DiskMB, Logger: l.log}
	if shape.Datacenter != "" {
		cfg.Datacenters = []string{shape.Datacenter}
	}
	if shape.GPUs > 0 {
		cfg.GPUs = l.devGPUs
		if cfg.GPUs == "" {
			cfg.GPUs = "dgxh100"
		}
	}
	return cfg
}

// start registers the instance's node once it has booted (unless it was
// destroyed meanwhile).
func (l *liveSim) start(in *liveSimInstance, cfg sim.Config) {
	s, err := sim.Start(context.Background(), cfg)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.log.Warn("autoscale sim instance failed to register", "instance", in.inst.ID, "err", err)
		return // listed until the scaler's boot timeout destroys it
	}
	if in.gone {
		s.Stop()
		return
	}
	in.sim = s
}

func (l *liveSim) Destroy(_ context.Context, ids []string) error {
	l.mu.Lock()
	var stop []*sim.Sim
	for _, id := range ids {
		in, ok := l.insts[id]
		if !ok {
			continue
		}
		in.gone = true
		in.timer.Stop()
		if in.sim != nil {
			stop = append(stop, in.sim)
		}
		delete(l.insts, id)
	}
	l.mu.Unlock()
	for _, s := range stop {
		s.Stop()
	}
	return nil
}

func (l *liveSim) List(context.Context) ([]autoscale.Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]autoscale.Instance, 0, len(l.insts))
	for _, in := range l.insts {
		out = append(out, in.inst)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (l *liveSim) Interruptions(context.Context) ([]autoscale.Interruption, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.notices
	l.notices = nil
	return out, nil
}

// Close stops every simulated node.
func (l *liveSim) Close() error {
	l.mu.Lock()
	ids := make([]string, 0, len(l.insts))
	for id := range l.insts {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	return l.Destroy(context.Background(), ids)
}

// httpURL is addr as the node simulator wants it (with a scheme).
func httpURL(addr string) string {
	if strings.Contains(addr, "://") {
		return addr
	}
	return "http://" + addr
}
