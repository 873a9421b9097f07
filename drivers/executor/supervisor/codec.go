//go:build !supervisor_stdjson

package supervisor

import (
	"bufio"
	"fmt"
)

// The supervisor's messages in its own JSON codec (json.go): the config it
// reads, the exit-status file and start line it writes, the namespace
// init's reports. Built with -tags supervisor_stdjson, codec_stdjson.go
// does the same with encoding/json (BenchmarkSupervisorJSON compares the
// two); the tests hold both to encoding/json.

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

// decodeConfig decodes what encoding/json makes of a Config (its json
// tags; a test holds the two together).
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

// appendJSON appends r as JSON (one line on the init's status pipe).
func (r *initReport) appendJSON(b []byte) []byte {
	o := jsonObject{b: b}
	if r.Started {
		o.bool("started", true)
	}
	o.int("exit_code", int64(r.ExitCode))
	o.int("signal", int64(r.Signal))
	if r.Err != "" {
		o.str("error", r.Err)
	}
	return o.bytes()
}

// readInitReport reads the next line of the init's status pipe.
func readInitReport(r *bufio.Reader) (initReport, error) {
	var rep initReport
	line, err := r.ReadBytes('\n')
	if err != nil {
		return rep, err
	}
	v, err := parseJSON(line)
	if err != nil {
		return rep, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return rep, fmt.Errorf("%w: init report: want an object", errJSON)
	}
	var ferr error
	f := jsonFields{m: m, err: &ferr}
	f.bool("started", &rep.Started)
	f.int("exit_code", &rep.ExitCode)
	f.int("signal", &rep.Signal)
	f.str("error", &rep.Err)
	return rep, ferr
}
