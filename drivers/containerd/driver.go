package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"golang.org/x/sync/singleflight"

	"github.com/drover/drover/drivers"
)

// Name of the driver in job files.
const Name = "containerd"

// fingerprintTimeout bounds a Fingerprint call that has to dial.
const fingerprintTimeout = 2 * time.Second

// Event is a task event the driver reports while it works on a task
// (image pull progress, import, ...). The client turns it into a task
// event ("Driver" type) if it registered a handler with OnEvent.
type Event struct {
	TaskID  string
	Message string
	Time    time.Time
}

// Driver runs tasks as containerd containers.
type Driver struct {
	cfg    *ClientConfig
	logger *slog.Logger

	connMu sync.Mutex
	client *containerd.Client

	evMu    sync.RWMutex
	onEvent func(Event)

	importMu sync.Mutex
	imported map[archiveKey]string // archive file version -> image name
	// archives runs one import+unpack per archive file version at a
	// time: tasks starting together with the same archive share it.
	archives singleflight.Group

	tasks drivers.Tasks[*taskState]

	// mhzPerCore converts cpu MHz into a CFS quota; hostRoot prefixes
	// host paths (NVIDIA libraries) in tests.
	mhzPerCore int64
	hostRoot   string
	dataDir    string

	wg sync.WaitGroup // task owner goroutines
}

var (
	_ drivers.Driver   = (*Driver)(nil)
	_ drivers.Statser  = (*Driver)(nil)
	_ drivers.Execer   = (*Driver)(nil)
	_ drivers.Signaler = (*Driver)(nil)
)

// New builds the driver from drivers.Options; it does not connect.
func New(opts drivers.Options) (*Driver, error) {
	cfg, err := ParseClientConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{
		cfg:        cfg,
		logger:     logger.With("component", "driver"),
		imported:   map[archiveKey]string{},
		dataDir:    opts.DataDir,
		mhzPerCore: cpuMHz(),
	}, nil
}

// Factory is a drivers.Factory for the client's driver registry.
func Factory(opts drivers.Options) (drivers.Driver, error) { return New(opts) }

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Config returns the parsed client config.
func (d *Driver) Config() ClientConfig { return *d.cfg }

// OnEvent registers fn to receive task events (image pull progress ...).
// fn must not block; nil unregisters.
func (d *Driver) OnEvent(fn func(Event)) {
	d.evMu.Lock()
	d.onEvent = fn
	d.evMu.Unlock()
}

func (d *Driver) emit(taskID, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	d.logger.Debug("task event", "task_id", taskID, "message", msg)
	d.evMu.RLock()
	fn := d.onEvent
	d.evMu.RUnlock()
	if fn != nil {
		fn(Event{TaskID: taskID, Message: msg, Time: time.Now()})
	}
}

// nsCtx puts the driver's namespace on ctx.
func (d *Driver) nsCtx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, d.cfg.Namespace)
}

// conn returns the shared client, dialling on first use. A missing socket
// fails at once (no dial timeout spent).
func (d *Driver) conn(ctx context.Context) (*containerd.Client, error) {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	if _, err := os.Stat(d.cfg.Address); err != nil {
		return nil, fmt.Errorf("containerd socket %s: %w", d.cfg.Address, err)
	}
	timeout := fingerprintTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	c, err := containerd.New(d.cfg.Address,
		containerd.WithDefaultNamespace(d.cfg.Namespace),
		containerd.WithDefaultRuntime(d.cfg.Runtime),
		containerd.WithTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", d.cfg.Address, err)
	}
	d.client = c
	return c, nil
}

// dropConn forgets a broken connection so the next call redials.
func (d *Driver) dropConn(c *containerd.Client) {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	if d.client == c && c != nil {
		_ = c.Close()
		d.client = nil
	}
}

// Fingerprint implements drivers.Driver: healthy when the daemon answers
// its version. With the socket absent it returns at once.
func (d *Driver) Fingerprint(ctx context.Context) *drivers.Fingerprint {
	ctx, cancel := context.WithTimeout(ctx, fingerprintTimeout)
	defer cancel()
	unhealthy := func(err error) *drivers.Fingerprint {
		return &drivers.Fingerprint{
			Health:            drivers.HealthUnhealthy,
			HealthDescription: err.Error(),
			Attributes:        map[string]string{},
		}
	}
	if _, err := os.Stat(d.cfg.Address); err != nil {
		d.dropConn(d.currentConn())
		if errors.Is(err, os.ErrNotExist) {
			return unhealthy(fmt.Errorf("containerd socket %s not found", d.cfg.Address))
		}
		return unhealthy(err)
	}
	c, err := d.conn(ctx)
	if err != nil {
		return unhealthy(err)
	}
	v, err := c.Version(d.nsCtx(ctx))
	if err != nil {
		d.dropConn(c)
		return unhealthy(fmt.Errorf("containerd version: %w", err))
	}
	return &drivers.Fingerprint{
		Health:            drivers.HealthHealthy,
		HealthDescription: "containerd " + v.Version,
		Attributes: map[string]string{
			"driver.containerd":         "1",
			"driver.containerd.version": v.Version,
			"driver.containerd.runtime": d.cfg.Runtime,
		},
	}
}

func (d *Driver) currentConn() *containerd.Client {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	return d.client
}

// Close stops the driver's goroutines (task owners stop copying logs; the
// containers keep running) and closes the connection.
func (d *Driver) Close() error {
	for _, ts := range d.tasks.All() {
		ts.detach()
	}
	d.wg.Wait()
	d.dropConn(d.currentConn())
	return nil
}

// ValidateConfig implements drivers.Driver.
func (d *Driver) ValidateConfig(cfg map[string]any) error {
	tc, err := ParseTaskConfig(cfg)
	if err != nil {
		return err
	}
	return d.cfg.checkAllowed(tc)
}
