package drivers

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/drover/drover/api"
)

// Errors drivers return; callers branch with errors.Is.
var (
	// ErrTaskNotFound: the driver does not know the task (e.g. not recovered).
	ErrTaskNotFound = errors.New("task not found")
	// ErrInvalidConfig: the task's driver config fails the driver's schema.
	ErrInvalidConfig = errors.New("invalid driver config")
	// ErrNotSupported: the driver lacks the ability asked for.
	ErrNotSupported = errors.New("not supported by driver")
	// ErrRecoverFailed: the task could not be reattached (it is gone).
	ErrRecoverFailed = errors.New("task could not be recovered")
)

// Health of a driver on this node.
const (
	HealthUndetected = "undetected"
	HealthUnhealthy  = "unhealthy"
	HealthHealthy    = "healthy"
)

// Fingerprint is a driver's health and node attributes. Attributes are
// added to the node as-is, e.g. "driver.exec" = "1",
// "driver.containerd.version" = "1.6.20".
type Fingerprint struct {
	Health            string
	HealthDescription string
	Attributes        map[string]string
}

// Driver runs tasks. Every method is safe for concurrent use.
type Driver interface {
	// Name is the driver name used in job files ("exec", "containerd" ...).
	Name() string
	// Fingerprint reports health and attributes; called periodically.
	Fingerprint(ctx context.Context) *Fingerprint
	// ValidateConfig checks a task's config block against the driver's
	// schema; errors wrap ErrInvalidConfig and name the offending key.
	ValidateConfig(cfg map[string]any) error
	// StartTask starts the task and returns the handle to persist.
	StartTask(ctx context.Context, cfg *TaskConfig) (*TaskHandle, error)
	// WaitTask returns a channel that yields exactly one ExitResult when
	// the task exits (or ctx ends: then the channel is closed unsent).
	WaitTask(ctx context.Context, taskID string) (<-chan *ExitResult, error)
	// StopTask sends signal ("" = SIGTERM), waits up to timeout, then kills.
	StopTask(ctx context.Context, taskID string, timeout time.Duration, signal string) error
	// DestroyTask releases everything the task held; force kills a running task first.
	DestroyTask(ctx context.Context, taskID string, force bool) error
	// RecoverTask reattaches to a task started by an earlier agent process
	// from its persisted handle; ErrRecoverFailed when it is gone.
	RecoverTask(ctx context.Context, h *TaskHandle) error
}

// Statser reports a running task's resource usage.
type Statser interface {
	TaskStats(ctx context.Context, taskID string) (*api.TaskResourceUsage, error)
}

// Signaler sends a signal ("SIGHUP", "SIGUSR1" ...) to a running task.
type Signaler interface {
	SignalTask(ctx context.Context, taskID string, signal string) error
}

// Execer runs a command inside a running task's environment.
type Execer interface {
	ExecTask(ctx context.Context, taskID string, opts *ExecOptions) (*ExitResult, error)
}

// ExecOptions for Execer. Stdin may be nil. With TTY, Stdout gets both
// streams and Resize delivers terminal sizes.
type ExecOptions struct {
	Command []string
	Env     map[string]string
	TTY     bool
	Stdin   interface{ Read([]byte) (int, error) }
	Stdout  interface{ Write([]byte) (int, error) }
	Stderr  interface{ Write([]byte) (int, error) }
	Resize  <-chan TerminalSize
}

// TerminalSize of an exec TTY.
type TerminalSize struct{ Height, Width uint16 }

// TaskConfig is everything a driver needs to start a task. Paths are on
// the host. Config has been interpolated and validated already.
type TaskConfig struct {
	// ID is unique per task run: "<allocID>/<task>/<8 hex>".
	ID      string
	AllocID string
	JobID   string
	Group   string
	Name    string
	User    string
	Config  map[string]any
	Env     map[string]string
	// Resources are the task's allocated resources.
	Resources *api.AllocatedTaskResources
	// MemoryMaxMB is the hard limit when memory oversubscription is used (0 = MemoryMB).
	MemoryMaxMB int64
	// Devices are host device nodes the task may use (GPUs ...).
	Devices []*DeviceSpec
	// Mounts are extra bind mounts.
	Mounts []*MountSpec
	// Ports assigned to the group (label -> host port, To).
	Ports []api.AllocatedPort
	// NetNS is the path of the alloc's network namespace (bridge mode:
	// ports are mapped from their host port to To by the client); ""
	// keeps the driver's default network.
	NetNS string

	// AllocDir is the alloc directory: AllocDir/alloc is shared by the
	// group's tasks (mounted at /alloc), TaskDir is AllocDir/<task> with
	// local/ (mounted at /local), secrets/ (/secrets) and tmp/.
	AllocDir string
	TaskDir  string

	// Logs: the driver writes stdout and stderr to
	// LogDir/<Name>.stdout.N and LogDir/<Name>.stderr.N, rotating at
	// LogMaxFileSizeMB and keeping LogMaxFiles files (see the logging
	// package). LogDir is AllocDir/alloc/logs.
	LogDir           string
	LogMaxFiles      int
	LogMaxFileSizeMB int

	KillSignal  string
	KillTimeout time.Duration

	Logger *slog.Logger `json:"-"`
}

// DeviceSpec is a device node to expose.
type DeviceSpec struct {
	HostPath    string
	TaskPath    string
	Permissions string // "rwm"
	// Vendor is the vendor of the allocated device the node belongs to
	// (VendorNvidia for a GPU's nodes and the control devices), "" for
	// other nodes. Drivers that need a vendor's user-space libraries
	// decide from it.
	Vendor string
}

// MountSpec is a bind mount.
type MountSpec struct {
	HostPath string
	TaskPath string
	Readonly bool
}

// TaskHandle identifies a started task; the client persists it (as JSON)
// and hands it back to RecoverTask after an agent restart.
type TaskHandle struct {
	Version int         `json:"Version"`
	Config  *TaskConfig `json:"Config"`
	// DriverState is the driver's own reattach data (pid, container id, ...).
	DriverState []byte    `json:"DriverState"`
	StartedAt   time.Time `json:"StartedAt"`
}

// ExitResult is how a task ended.
type ExitResult struct {
	ExitCode  int
	Signal    int
	OOMKilled bool
	// Err is set when the driver lost track of the task.
	Err error
}

// Successful reports a clean exit.
func (r *ExitResult) Successful() bool {
	return r.ExitCode == 0 && r.Signal == 0 && !r.OOMKilled && r.Err == nil
}

// Options configure a driver instance.
type Options struct {
	Logger *slog.Logger
	// Config is the client's plugin "<name>" { config { ... } } block.
	Config map[string]any
	// DataDir is a directory the driver may own (e.g. containerd content).
	DataDir string
	// DevMode is set by `drover agent -dev`.
	DevMode bool
	// ClientOptions is the client's options { ... } block (e.g.
	// "user.denylist"); nil when the client sets none.
	ClientOptions map[string]string
}

// Factory builds a driver.
type Factory func(opts Options) (Driver, error)
