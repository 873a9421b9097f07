package executor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup1"
	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the v1 hierarchies a task's cgroup spans.
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer"}

// CgroupsV2 reports whether this host uses the unified hierarchy only.
func CgroupsV2() bool { return cgroups.Mode() == cgroups.Unified }

// CgroupsUsable reports whether task cgroups can be created here (root,
// and a v1 memory controller or a v2 hierarchy with controllers).
func CgroupsUsable() error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	switch cgroups.Mode() {
	case cgroups.Unavailable:
		return errors.New("no cgroup hierarchy mounted")
	case cgroups.Unified:
		b, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("cgroup v2: %w", err)
		}
		if !strings.Contains(string(b), "memory") {
			return errors.New("cgroup v2: memory controller not available")
		}
	default:
		if _, err := os.Stat(filepath.Join(cgroupRoot, "memory", "memory.limit_in_bytes")); err != nil {
			return fmt.Errorf("cgroup v1 memory controller: %w", err)
		}
	}
	return nil
}

// CgroupDir is the task cgroup's directory for a v1 controller (ignored on v2).
func CgroupDir(name, controller string) string {
	if CgroupsV2() {
		return filepath.Join(cgroupRoot, "drover.slice", name+".scope")
	}
	return filepath.Join(cgroupRoot, controller, "drover", name)
}

// CgroupName turns a task ID into a cgroup leaf name.
func CgroupName(taskID string) string {
	r := strings.NewReplacer("/", "_", ".", "_", " ", "_")
	return r.Replace(taskID)
}

func (c *CgroupConfig) resources() *specs.LinuxResources {
	res := &specs.LinuxResources{}
	if c.CPUShares > 0 || len(c.ReservedCores) > 0 {
		res.CPU = &specs.LinuxCPU{}
		if c.CPUShares > 0 {
			s := uint64(max(c.CPUShares, 2))
			res.CPU.Shares = &s
		}
		if n := len(c.ReservedCores); n > 0 {
			period := uint64(100000)
			quota := int64(n) * int64(period)
			res.CPU.Period, res.CPU.Quota = &period, &quota
			cpus := make([]string, n)
			for i, core := range c.ReservedCores {
				cpus[i] = strconv.Itoa(int(core))
			}
			res.CPU.Cpus = strings.Join(cpus, ",")
		}
	}
	if c.MemoryMB > 0 || c.MemoryMaxMB > 0 {
		limit := max(c.MemoryMB, c.MemoryMaxMB) << 20
		res.Memory = &specs.LinuxMemory{Limit: &limit}
		if c.MemoryMaxMB > c.MemoryMB && c.MemoryMB > 0 {
			soft := c.MemoryMB << 20
			res.Memory.Reservation = &soft
		}
		// No swap beyond the limit (memory+swap = limit).
		if CgroupsV2() || fileExists(filepath.Join(cgroupRoot, "memory", "memory.memsw.limit_in_bytes")) {
			swap := limit
			res.Memory.Swap = &swap
		}
	}
	if c.PidsLimit > 0 {
		// runtime-spec v1.2 (pinned: containerd 1.7's oci package does not
		// build with v1.3, where Limit became *int64).
		res.Pids = &specs.LinuxPids{Limit: c.PidsLimit}
	}
	if c.RestrictDevices && !CgroupsV2() {
		res.Devices = deviceRules(c.Devices)
	}
	return res
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// deviceRules: deny all, allow the basic character devices and the listed ones.
func deviceRules(devs []Device) []specs.LinuxDeviceCgroup {
	i := func(v int64) *int64 { return &v }
	rules := []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		{Allow: true, Type: "c", Major: i(1), Minor: i(3), Access: "rwm"},  // null
		{Allow: true, Type: "c", Major: i(1), Minor: i(5), Access: "rwm"},  // zero
		{Allow: true, Type: "c", Major: i(1), Minor: i(7), Access: "rwm"},  // full
		{Allow: true, Type: "c", Major: i(1), Minor: i(8), Access: "rwm"},  // random
		{Allow: true, Type: "c", Major: i(1), Minor: i(9), Access: "rwm"},  // urandom
		{Allow: true, Type: "c", Major: i(5), Minor: i(0), Access: "rwm"},  // tty
		{Allow: true, Type: "c", Major: i(5), Minor: i(2), Access: "rwm"},  // ptmx
		{Allow: true, Type: "c", Major: i(136), Minor: nil, Access: "rwm"}, // pts
	}
	for _, d := range devs {
		var st syscall.Stat_t
		if err := syscall.Stat(d.HostPath, &st); err != nil {
			continue
		}
		typ := "c"
		if st.Mode&syscall.S_IFMT == syscall.S_IFBLK {
			typ = "b"
		}
		perm := d.Permissions
		if perm == "" {
			perm = "rwm"
		}
		rules = append(rules, specs.LinuxDeviceCgroup{Allow: true, Type: typ,
			Major: i(int64(major(st.Rdev))), Minor: i(int64(minor(st.Rdev))), Access: perm})
	}
	return rules
}

func major(dev uint64) uint64 { return ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xfffff000) }
func minor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) & 0xfff00) }

// taskCgroup is a created task cgroup.
type taskCgroup struct {
	name string
	v1   cgroup1.Cgroup
	v2   *cgroup2.Manager
}

func createCgroup(c *CgroupConfig) (*taskCgroup, error) {
	res := c.resources()
	if CgroupsV2() {
		m, err := cgroup2.NewManager(cgroupRoot, "/drover.slice/"+c.Name+".scope", cgroup2.ToResources(res))
		if err != nil {
			return nil, fmt.Errorf("create cgroup v2 %s: %w", c.Name, err)
		}
		// Stats, OOM events and the pids limit need these controllers
		// even when no limit of theirs is set.
		if err := m.ToggleControllers([]string{"cpu", "memory", "pids"}, cgroup2.Enable); err != nil {
			return nil, fmt.Errorf("enable cgroup v2 controllers for %s: %w", c.Name, err)
		}
		g := &taskCgroup{name: c.Name, v2: m}
		return g, g.setPidsLimit(c.PidsLimit)
	}
	cg, err := cgroup1.New(cgroup1.StaticPath("/drover/"+c.Name), res, cgroup1.WithHiearchy(v1Hierarchy))
	if err != nil {
		return nil, fmt.Errorf("create cgroup v1 %s: %w", c.Name, err)
	}
	g := &taskCgroup{name: c.Name, v1: cg}
	return g, g.setPidsLimit(c.PidsLimit)
}

// setPidsLimit writes pids.max directly (the runtime-spec field's type
// differs between spec versions).
func (g *taskCgroup) setPidsLimit(n int64) error {
	if n <= 0 {
		return nil
	}
	p := filepath.Join(CgroupDir(g.name, "pids"), "pids.max")
	if err := os.WriteFile(p, []byte(strconv.FormatInt(n, 10)), 0); err != nil {
		return fmt.Errorf("set pids limit: %w", err)
	}
	return nil
}

// v1Hierarchy limits the v1 cgroup to the controllers drover manages.
func v1Hierarchy() ([]cgroup1.Subsystem, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	var out []cgroup1.Subsystem
	for _, s := range all {
		for _, n := range v1Controllers {
			if string(s.Name()) == n {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// join moves the calling process into the v1 cgroup (children forked
// now are born there); leave moves it to drover's parent cgroup.
func (g *taskCgroup) join() error {
	return g.v1.Add(cgroup1.Process{Pid: os.Getpid()})
}

func (g *taskCgroup) leave() error {
	pid := []byte(strconv.Itoa(os.Getpid()))
	var errs []error
	for _, c := range v1Controllers {
		p := filepath.Join(cgroupRoot, c, "drover", "cgroup.procs")
		if !fileExists(p) {
			continue
		}
		if err := os.WriteFile(p, pid, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// joinCgroup moves process pid into an existing task cgroup.
func joinCgroup(name string, pid int) error {
	b := []byte(strconv.Itoa(pid))
	if CgroupsV2() {
		return os.WriteFile(filepath.Join(CgroupDir(name, ""), "cgroup.procs"), b, 0)
	}
	for _, c := range v1Controllers {
		p := filepath.Join(CgroupDir(name, c), "cgroup.procs")
		if !fileExists(p) {
			continue
		}
		if err := os.WriteFile(p, b, 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", p, err)
		}
	}
	return nil
}

// openDir opens the v2 cgroup directory for clone3(CLONE_INTO_CGROUP).
func (g *taskCgroup) openDir() (*os.File, error) {
	return os.Open(CgroupDir(g.name, ""))
}

// OOMKilled reads the memory cgroup's OOM-kill counter.
func OOMKilled(name string) bool {
	if CgroupsV2() {
		return readKV(filepath.Join(CgroupDir(name, ""), "memory.events"), "oom_kill") > 0
	}
	return readKV(filepath.Join(CgroupDir(name, "memory"), "memory.oom_control"), "oom_kill") > 0
}

// readKV returns the value of key in a "key value" per line file (0 if absent).
func readKV(path, key string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == key {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			return v
		}
	}
	return 0
}

func readUint(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// CgroupPids lists the processes in a task cgroup.
func CgroupPids(name string) []int {
	b, err := os.ReadFile(filepath.Join(CgroupDir(name, "pids"), "cgroup.procs"))
	if err != nil && !CgroupsV2() {
		b, err = os.ReadFile(filepath.Join(CgroupDir(name, "memory"), "cgroup.procs"))
	}
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// KillCgroup SIGKILLs every process in a task cgroup until it is empty or
// the deadline passes.
func KillCgroup(name string, deadline time.Time) error {
	if CgroupsV2() {
		if err := os.WriteFile(filepath.Join(CgroupDir(name, ""), "cgroup.kill"), []byte("1"), 0); err == nil {
			return waitEmpty(name, deadline)
		}
	}
	for {
		pids := CgroupPids(name)
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: %d processes left after kill", name, len(pids))
		}
		<-time.After(10 * time.Millisecond)
	}
}

func waitEmpty(name string, deadline time.Time) error {
	for len(CgroupPids(name)) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s not empty", name)
		}
		<-time.After(10 * time.Millisecond)
	}
	return nil
}

// DeleteCgroup kills what is left in a task cgroup and removes it.
func DeleteCgroup(name string) error {
	if err := KillCgroup(name, time.Now().Add(5*time.Second)); err != nil {
		return err
	}
	var errs []error
	if CgroupsV2() {
		if err := os.Remove(CgroupDir(name, "")); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	for _, c := range append(v1Controllers, "systemd") {
		d := CgroupDir(name, c)
		if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
