package nvidia

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/drover/drover/api"
)

// Config of a Fingerprinter.
type Config struct {
	Library Library
	Logger  *slog.Logger
	// HealthInterval is how often ECC counters and the device list are
	// re-read (default 1 minute).
	HealthInterval time.Duration
	// EventWait bounds one NVML event wait, and so how long Watch takes
	// to notice its context ended (default 1 s).
	EventWait time.Duration
}

// Fingerprinter holds the latest NVIDIA fingerprint of the node.
type Fingerprinter struct {
	cfg Config
	log *slog.Logger

	applyMu sync.Mutex // one MIG layout change at a time (ApplyMIG)

	mu        sync.Mutex
	sys       *System
	unhealthy map[string]string // UUID -> reason (sticky until restart)
	devices   []*api.NodeDeviceResource
}

// New reads the first snapshot.
func New(cfg Config) (*Fingerprinter, error) {
	if cfg.Library == nil {
		return nil, fmt.Errorf("nvidia fingerprinter: %w", ErrNoNVML)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = time.Minute
	}
	if cfg.EventWait <= 0 {
		cfg.EventWait = time.Second
	}
	sys, err := cfg.Library.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("nvml snapshot: %w", err)
	}
	f := &Fingerprinter{cfg: cfg, log: cfg.Logger.With("component", "nvidia"), sys: sys, unhealthy: map[string]string{}}
	f.devices = BuildDevices(sys, f.unhealthy)
	return f, nil
}

// Devices returns the current device groups (a copy the caller may keep).
func (f *Fingerprinter) Devices() []*api.NodeDeviceResource {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*api.NodeDeviceResource, len(f.devices))
	for i, d := range f.devices {
		cp := *d
		cp.Instances = make([]*api.NodeDevice, len(d.Instances))
		for j, in := range d.Instances {
			c := *in
			cp.Instances[j] = &c
		}
		out[i] = &cp
	}
	return out
}

// Watch watches device health until ctx ends, calling changed whenever
// the devices or their health changed. It returns after its helper
// goroutine has stopped.
func (f *Fingerprinter) Watch(ctx context.Context, changed func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f.eventLoop(ctx, changed)
	}()
	t := time.NewTicker(f.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			if f.Refresh() {
				changed()
			}
		}
	}
}

// eventLoop waits for NVML events until ctx ends or events fail.
func (f *Fingerprinter) eventLoop(ctx context.Context, changed func()) {
	for ctx.Err() == nil {
		ev, err := f.cfg.Library.WaitEvent(ctx, f.cfg.EventWait)
		if errors.Is(err, ErrTimeout) || ctx.Err() != nil {
			continue
		}
		if err != nil {
			f.log.Warn("nvml events unavailable; health from ECC counters only", "error", err)
			return
		}
		if f.Handle(ev) {
			changed()
		}
	}
}

// Refresh re-reads the snapshot (ECC counters, MIG layout); true when the
// devices changed.
func (f *Fingerprinter) Refresh() bool {
	sys, err := f.cfg.Library.Snapshot()
	if err != nil {
		f.log.Warn("nvml snapshot", "error", err)
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sys = sys
	return f.rebuild()
}

// Handle applies one health event; true when the devices changed. XID
// errors caused by applications (see ApplicationXIDs) are ignored.
func (f *Fingerprinter) Handle(ev Event) bool {
	var why string
	switch ev.Kind {
	case EventXID:
		if ApplicationXIDs[ev.XID] {
			f.log.Debug("gpu application xid ignored", "uuid", ev.UUID, "xid", ev.XID)
			return false
		}
		why = fmt.Sprintf("XID %d critical error", ev.XID)
	case EventECC:
		why = "double-bit ECC error"
	default:
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, done := f.unhealthy[ev.UUID]; done {
		return false
	}
	f.log.Warn("gpu unhealthy", "uuid", ev.UUID, "reason", why)
	f.unhealthy[ev.UUID] = why
	return f.rebuild()
}

// rebuild recomputes devices; f.mu held.
func (f *Fingerprinter) rebuild() bool {
	d := BuildDevices(f.sys, f.unhealthy)
	if reflect.DeepEqual(d, f.devices) {
		return false
	}
	f.devices = d
	return true
}

// Close releases the library.
func (f *Fingerprinter) Close() error { return f.cfg.Library.Close() }

// ApplicationXIDs are XID errors a faulty application causes (bad memory
// access, preemption, engine exceptions); they do not make the GPU
// unhealthy. Every other XID does, until the agent restarts.
var ApplicationXIDs = map[uint64]bool{13: true, 31: true, 43: true, 45: true, 68: true, 109: true}
