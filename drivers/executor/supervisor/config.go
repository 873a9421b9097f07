package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
)

// Config is what the driver hands the supervisor (as a JSON file).
type Config struct {
	// TaskName names the log files (<TaskName>.stdout.N).
	TaskName string   `json:"task_name"`
	Command  string   `json:"command"`
	Args     []string `json:"args,omitempty"`
	// Env is KEY=VALUE pairs, the task's whole environment.
	Env []string `json:"env,omitempty"`
	// Cwd is the task's working directory (inside the chroot when isolated).
	Cwd string `json:"cwd,omitempty"`
	// User to run as ("" = the supervisor's user, i.e. root).
	User string `json:"user,omitempty"`

	// Isolation, when set, runs the task in namespaces and a chroot.
	Isolation *Isolation `json:"isolation,omitempty"`
	// Cgroup, when set, puts the task into a cgroup with these limits.
	Cgroup *CgroupConfig `json:"cgroup,omitempty"`

	LogDir           string `json:"log_dir"`
	LogMaxFiles      int    `json:"log_max_files,omitempty"`
	LogMaxFileSizeMB int    `json:"log_max_file_size_mb,omitempty"`

	// ExitFile receives the Result, written atomically.
	ExitFile string `json:"exit_file"`
	// StateDir is the supervisor's own directory (its log, the chroot
	// mount point).
	StateDir string `json:"state_dir"`
}

// Isolation settings of the exec driver.
type Isolation struct {
	AllocDir string `json:"alloc_dir"`
	TaskDir  string `json:"task_dir"`
	Hostname string `json:"hostname,omitempty"`
	// SharePID / ShareIPC keep the host's namespace (pid_mode/ipc_mode = "host").
	SharePID bool     `json:"share_pid,omitempty"`
	ShareIPC bool     `json:"share_ipc,omitempty"`
	Mounts   []Mount  `json:"mounts,omitempty"`
	Devices  []Device `json:"devices,omitempty"`
	// NetNS is a network namespace (path) the task joins.
	NetNS string `json:"netns,omitempty"`
	// Seccomp is the task's seccomp program (EncodeFilter; base64 in
	// JSON). Required: the init starts no task without one.
	Seccomp []byte `json:"seccomp,omitempty"`
}

// Mount is a bind mount into the chroot.
type Mount struct {
	HostPath string `json:"host_path"`
	TaskPath string `json:"task_path"`
	Readonly bool   `json:"readonly,omitempty"`
}

// Device is a device node exposed to the task.
type Device struct {
	HostPath    string `json:"host_path"`
	TaskPath    string `json:"task_path"`
	Permissions string `json:"permissions,omitempty"`
}

// CgroupConfig are the task's cgroup and limits; zero means no limit.
type CgroupConfig struct {
	// Name is the leaf: drover/<Name> (v1) or drover.slice/<Name>.scope (v2).
	Name          string   `json:"name"`
	CPUShares     int64    `json:"cpu_shares,omitempty"`
	ReservedCores []uint16 `json:"reserved_cores,omitempty"`
	MemoryMB      int64    `json:"memory_mb,omitempty"`
	MemoryMaxMB   int64    `json:"memory_max_mb,omitempty"`
	PidsLimit     int64    `json:"pids_limit,omitempty"`
	// RestrictDevices installs the allow-list: the defaults plus Devices.
	RestrictDevices bool     `json:"restrict_devices,omitempty"`
	Devices         []Device `json:"devices,omitempty"`
}

// Result is the exit-status file's content.
type Result struct {
	ExitCode  int    `json:"exit_code"`
	Signal    int    `json:"signal"`
	OOMKilled bool   `json:"oom_killed"`
	Err       string `json:"error,omitempty"`
	// FinishedAt is Unix nanoseconds.
	FinishedAt int64 `json:"finished_at"`
}

// Started is what the supervisor reports on its start pipe.
type Started struct {
	TaskPID int    `json:"task_pid"`
	Err     string `json:"error,omitempty"`
}

// WriteFileAtomic writes b to path via a temp file and rename.
func WriteFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func readConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read executor config: %w", err)
	}
	c, err := decodeConfig(b)
	if err != nil {
		return nil, fmt.Errorf("decode executor config %s: %w", path, err)
	}
	if c.Command == "" || c.ExitFile == "" || c.StateDir == "" || c.LogDir == "" || c.TaskName == "" {
		return nil, fmt.Errorf("executor config %s: command, task_name, exit_file, state_dir and log_dir are required", path)
	}
	return c, nil
}
