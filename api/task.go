package api

import "time"

// Lifecycle hooks.
const (
	TaskLifecycleHookPrestart  = "prestart"
	TaskLifecycleHookPoststart = "poststart"
	TaskLifecycleHookPoststop  = "poststop"
)

// Task is one process, container or VM run by a driver.
type Task struct {
	Name            string                 `json:"Name"`
	Driver          string                 `json:"Driver"`
	User            string                 `json:"User,omitempty"`
	Lifecycle       *TaskLifecycle         `json:"Lifecycle,omitempty"`
	Config          map[string]any         `json:"Config,omitempty"`
	Constraints     []*Constraint          `json:"Constraints,omitempty"`
	Affinities      []*Affinity            `json:"Affinities,omitempty"`
	Env             map[string]string      `json:"Env,omitempty"`
	Services        []*Service             `json:"Services,omitempty"`
	Resources       *Resources             `json:"Resources,omitempty"`
	RestartPolicy   *RestartPolicy         `json:"RestartPolicy,omitempty"`
	Meta            map[string]string      `json:"Meta,omitempty"`
	KillTimeout     time.Duration          `json:"KillTimeout,omitempty"`
	KillSignal      string                 `json:"KillSignal,omitempty"`
	LogConfig       *LogConfig             `json:"LogConfig,omitempty"`
	Artifacts       []*TaskArtifact        `json:"Artifacts,omitempty"`
	Templates       []*Template            `json:"Templates,omitempty"`
	DispatchPayload *DispatchPayloadConfig `json:"DispatchPayload,omitempty"`
	Leader          bool                   `json:"Leader,omitempty"`
	ShutdownDelay   time.Duration          `json:"ShutdownDelay,omitempty"`
	Kind            string                 `json:"Kind,omitempty"`
	// MaxRunDuration bounds one run of the task: past it the task is
	// stopped (kill_signal, kill_timeout) and fails without a restart.
	MaxRunDuration time.Duration `json:"MaxRunDuration,omitempty"`
	// VolumeMounts mount the group's volumes into the task.
	VolumeMounts []*VolumeMount `json:"VolumeMounts,omitempty"`
	// Identity is the default workload identity's settings; Identities
	// are the named ones (see TaskIdentities).
	Identity   *WorkloadIdentity   `json:"Identity,omitempty"`
	Identities []*WorkloadIdentity `json:"Identities,omitempty"`
}

// DefaultKillTimeout is Nomad's default.
const DefaultKillTimeout = 5 * time.Second

// TaskLifecycle places a task before, beside or after the main tasks.
type TaskLifecycle struct {
	Hook    string `json:"Hook"`
	Sidecar bool   `json:"Sidecar"`
}

// LogConfig bounds the rotated log files of a task.
type LogConfig struct {
	MaxFiles      int  `json:"MaxFiles"`
	MaxFileSizeMB int  `json:"MaxFileSizeMB"`
	Disabled      bool `json:"Disabled,omitempty"`
}

// DefaultLogConfig is 10 files of 10 MB.
func DefaultLogConfig() *LogConfig { return &LogConfig{MaxFiles: 10, MaxFileSizeMB: 10} }

// Template renders a file into the task dir before start.
type Template struct {
	SourcePath   string        `json:"SourcePath,omitempty"`
	DestPath     string        `json:"DestPath"`
	EmbeddedTmpl string        `json:"EmbeddedTmpl,omitempty"`
	ChangeMode   string        `json:"ChangeMode,omitempty"` // noop, restart, signal
	ChangeSignal string        `json:"ChangeSignal,omitempty"`
	Splay        time.Duration `json:"Splay,omitempty"`
	Perms        string        `json:"Perms,omitempty"`
	LeftDelim    string        `json:"LeftDelim,omitempty"`
	RightDelim   string        `json:"RightDelim,omitempty"`
	Envvars      bool          `json:"Envvars,omitempty"`
}

// TaskArtifact is fetched into the task dir before start.
type TaskArtifact struct {
	GetterSource  string            `json:"GetterSource"`
	GetterOptions map[string]string `json:"GetterOptions,omitempty"`
	GetterHeaders map[string]string `json:"GetterHeaders,omitempty"`
	GetterMode    string            `json:"GetterMode,omitempty"` // any, file, dir
	RelativeDest  string            `json:"RelativeDest,omitempty"`
}

// DispatchPayloadConfig writes a dispatched payload into the task dir.
type DispatchPayloadConfig struct {
	File string `json:"File"`
}

// Service registers a task or group with service discovery.
type Service struct {
	Name        string            `json:"Name"`
	Tags        []string          `json:"Tags,omitempty"`
	CanaryTags  []string          `json:"CanaryTags,omitempty"`
	PortLabel   string            `json:"PortLabel,omitempty"`
	AddressMode string            `json:"AddressMode,omitempty"`
	Provider    string            `json:"Provider,omitempty"`
	Checks      []*ServiceCheck   `json:"Checks,omitempty"`
	Meta        map[string]string `json:"Meta,omitempty"`
	TaskName    string            `json:"TaskName,omitempty"`
	// OnUpdate is how the checks count for deployments: require_healthy
	// (default), ignore_warnings or ignore.
	OnUpdate string `json:"OnUpdate,omitempty"`
	// CheckRestart applies to every check of the service that sets none.
	CheckRestart *CheckRestart `json:"CheckRestart,omitempty"`
}

// Check on_update modes, as Nomad.
const (
	OnUpdateRequireHealthy = "require_healthy"
	OnUpdateIgnoreWarnings = "ignore_warnings"
	OnUpdateIgnore         = "ignore"
)

// CheckRestart restarts a task after Limit consecutive unhealthy check
// results, not counting those within Grace of the task's start.
type CheckRestart struct {
	Limit          int           `json:"Limit"`
	Grace          time.Duration `json:"Grace"`
	IgnoreWarnings bool          `json:"IgnoreWarnings"`
}

// ServiceCheck is a health check of a service.
type ServiceCheck struct {
	Name      string              `json:"Name,omitempty"`
	Type      string              `json:"Type"` // http, tcp, script, grpc
	Command   string              `json:"Command,omitempty"`
	Args      []string            `json:"Args,omitempty"`
	Path      string              `json:"Path,omitempty"`
	Protocol  string              `json:"Protocol,omitempty"`
	PortLabel string              `json:"PortLabel,omitempty"`
	Method    string              `json:"Method,omitempty"`
	Header    map[string][]string `json:"Header,omitempty"`
	Interval  time.Duration       `json:"Interval"`
	Timeout   time.Duration       `json:"Timeout"`
	TaskName  string              `json:"TaskName,omitempty"`
	Body      string              `json:"Body,omitempty"`
	// TLSSkipVerify and TLSServerName for https and gRPC over TLS.
	TLSSkipVerify bool   `json:"TLSSkipVerify,omitempty"`
	TLSServerName string `json:"TLSServerName,omitempty"`
	GRPCService   string `json:"GRPCService,omitempty"`
	GRPCUseTLS    bool   `json:"GRPCUseTLS,omitempty"`
	// SuccessBeforePassing and FailuresBeforeCritical are how many
	// results in a row it takes to change the check's status.
	SuccessBeforePassing   int           `json:"SuccessBeforePassing,omitempty"`
	FailuresBeforeCritical int           `json:"FailuresBeforeCritical,omitempty"`
	OnUpdate               string        `json:"OnUpdate,omitempty"`
	CheckRestart           *CheckRestart `json:"CheckRestart,omitempty"`
}
