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

// AppendJSON appends r as JSON (the exit-status file).
func (r *Result) AppendJSON(b []byte) []byte {
	o := jsonObject{b: b}
	o.int("exit_code", int64(r.ExitCode))
	o.int("signal", int64(r.Signal))
	o.bool("oom_killed", r.OOMKilled)
	if r.Err != "" {
		o.str("error", r.Err)
	}
	o.int("finished_at", r.FinishedAt)
	return o.bytes()
}

// AppendJSON appends s as JSON (one line on the start pipe).
func (s *Started) AppendJSON(b []byte) []byte {
	o := jsonObject{b: b}
	o.int("task_pid", int64(s.TaskPID))
	if s.Err != "" {
		o.str("error", s.Err)
	}
	return o.bytes()
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

// decodeConfig decodes what encoding/json makes of a Config (the json
// tags above; a test holds the two together).
func decodeConfig(b []byte) (*Config, error) {
	v, err := parseJSON(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: want an object", errJSON)
	}
	var ferr error
	f := jsonFields{m: m, err: &ferr}
	c := &Config{}
	f.str("task_name", &c.TaskName)
	f.str("command", &c.Command)
	f.strs("args", &c.Args)
	f.strs("env", &c.Env)
	f.str("cwd", &c.Cwd)
	f.str("user", &c.User)
	if o, ok := f.obj("isolation"); ok {
		iso := &Isolation{}
		o.str("alloc_dir", &iso.AllocDir)
		o.str("task_dir", &iso.TaskDir)
		o.str("hostname", &iso.Hostname)
		o.bool("share_pid", &iso.SharePID)
		o.bool("share_ipc", &iso.ShareIPC)
		o.str("netns", &iso.NetNS)
		o.base64("seccomp", &iso.Seccomp)
		var mounts []Mount
		if n, ok := o.objs("mounts", func(i int, mo jsonFields) {
			mounts = append(mounts, Mount{})
			mo.str("host_path", &mounts[i].HostPath)
			mo.str("task_path", &mounts[i].TaskPath)
			mo.bool("readonly", &mounts[i].Readonly)
		}); ok {
			iso.Mounts = append(make([]Mount, 0, n), mounts...)
		}
		iso.Devices = decodeDevices(o, "devices")
		c.Isolation = iso
	}
	if o, ok := f.obj("cgroup"); ok {
		cg := &CgroupConfig{}
		o.str("name", &cg.Name)
		o.int64("cpu_shares", &cg.CPUShares, 64)
		o.uint16s("reserved_cores", &cg.ReservedCores)
		o.int64("memory_mb", &cg.MemoryMB, 64)
		o.int64("memory_max_mb", &cg.MemoryMaxMB, 64)
		o.int64("pids_limit", &cg.PidsLimit, 64)
		o.bool("restrict_devices", &cg.RestrictDevices)
		cg.Devices = decodeDevices(o, "devices")
		c.Cgroup = cg
	}
	f.str("log_dir", &c.LogDir)
	f.int("log_max_files", &c.LogMaxFiles)
	f.int("log_max_file_size_mb", &c.LogMaxFileSizeMB)
	f.str("exit_file", &c.ExitFile)
	f.str("state_dir", &c.StateDir)
	if ferr != nil {
		return nil, ferr
	}
	return c, nil
}

func decodeDevices(f jsonFields, k string) []Device {
	var devs []Device
	n, ok := f.objs(k, func(i int, o jsonFields) {
		devs = append(devs, Device{})
		o.str("host_path", &devs[i].HostPath)
		o.str("task_path", &devs[i].TaskPath)
		o.str("permissions", &devs[i].Permissions)
	})
	if !ok {
		return nil
	}
	return append(make([]Device, 0, n), devs...)
}
