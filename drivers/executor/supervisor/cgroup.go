package supervisor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// v1Controllers are the v1 hierarchies a task's cgroup spans.
var v1Controllers = []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer"}

// v2Controllers are enabled for task cgroups on v2: stats, OOM events and
// the pids limit need them even when no limit of theirs is set.
var v2Controllers = []string{"cpu", "memory", "pids"}

// cgroupMode is the host's cgroup layout.
type cgroupMode int

const (
	modeUnavailable cgroupMode = iota
	modeLegacy                 // v1 only
	modeHybrid                 // v1 controllers, a v2 hierarchy at /sys/fs/cgroup/unified
	modeUnified                // v2 only
)

var (
	modeOnce sync.Once
	mode     cgroupMode
)

// hostMode detects the cgroup layout once (statfs of /sys/fs/cgroup and
// /sys/fs/cgroup/unified).
func hostMode() cgroupMode {
	modeOnce.Do(func() {
		var st unix.Statfs_t
		if err := unix.Statfs(cgroupRoot, &st); err != nil {
			mode = modeUnavailable
			return
		}
		if st.Type == unix.CGROUP2_SUPER_MAGIC {
			mode = modeUnified
			return
		}
		mode = modeLegacy
		if err := unix.Statfs(filepath.Join(cgroupRoot, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			mode = modeHybrid
		}
	})
	return mode
}

// CgroupsV2 reports whether this host uses the unified hierarchy only.
func CgroupsV2() bool { return hostMode() == modeUnified }

// CgroupsUsable reports whether task cgroups can be created here (root,
// and a v1 memory controller or a v2 hierarchy with controllers).
func CgroupsUsable() error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	switch hostMode() {
	case modeUnavailable:
		return errors.New("no cgroup hierarchy mounted")
	case modeUnified:
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

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// cgWrite is one limit: value written to file (under the controller's
// directory on v1).
type cgWrite struct {
	ctrl, file, value string
}

// writes lists the limit files of c in the order they must be written
// (on v1 memory.memsw.limit_in_bytes after memory.limit_in_bytes).
func (c *CgroupConfig) writes(v2 bool) []cgWrite {
	var w []cgWrite
	add := func(ctrl, file string, v int64) {
		w = append(w, cgWrite{ctrl, file, strconv.FormatInt(v, 10)})
	}
	if c.CPUShares > 0 {
		shares := max(c.CPUShares, 2)
		if v2 {
			// The same mapping as runc and systemd: [2, 262144] -> [1, 10000].
			add("cpu", "cpu.weight", 1+((min(shares, 262144)-2)*9999)/262142)
		} else {
			add("cpu", "cpu.shares", shares)
		}
	}
	if n := int64(len(c.ReservedCores)); n > 0 {
		const period = 100000
		cpus := make([]string, n)
		for i, core := range c.ReservedCores {
			cpus[i] = strconv.Itoa(int(core))
		}
		if v2 {
			w = append(w, cgWrite{"cpu", "cpu.max", strconv.FormatInt(n*period, 10) + " " + strconv.Itoa(period)})
		} else {
			add("cpu", "cpu.cfs_period_us", period)
			add("cpu", "cpu.cfs_quota_us", n*period)
		}
		w = append(w, cgWrite{"cpuset", "cpuset.cpus", strings.Join(cpus, ",")})
	}
	if c.MemoryMaxMB < 0 {
		// memory_max = -1: no ceiling; memory stays the soft reservation.
		if v2 {
			w = append(w, cgWrite{"memory", "memory.max", "max"})
			if c.MemoryMB > 0 {
				add("memory", "memory.low", c.MemoryMB<<20)
			}
			w = append(w, cgWrite{"memory", "memory.swap.max", "0"})
		} else {
			add("memory", "memory.limit_in_bytes", -1)
			if c.MemoryMB > 0 {
				add("memory", "memory.soft_limit_in_bytes", c.MemoryMB<<20)
			}
		}
	} else if c.MemoryMB > 0 || c.MemoryMaxMB > 0 {
		limit := max(c.MemoryMB, c.MemoryMaxMB) << 20
		soft := int64(0)
		if c.MemoryMaxMB > c.MemoryMB && c.MemoryMB > 0 {
			soft = c.MemoryMB << 20
		}
		// No swap beyond the limit (v1: memory+swap = limit; v2: swap 0).
		if v2 {
			add("memory", "memory.max", limit)
			if soft > 0 {
				add("memory", "memory.low", soft)
			}
			w = append(w, cgWrite{"memory", "memory.swap.max", "0"})
		} else {
			add("memory", "memory.limit_in_bytes", limit)
			if soft > 0 {
				add("memory", "memory.soft_limit_in_bytes", soft)
			}
			w = append(w, cgWrite{"memory", "memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10)})
		}
	}
	if c.PidsLimit > 0 {
		add("pids", "pids.max", c.PidsLimit)
	}
	if c.RestrictDevices && !v2 {
		w = append(w, cgWrite{"devices", "devices.deny", "a *:* rwm"})
		for _, r := range deviceRules(c.Devices) {
			w = append(w, cgWrite{"devices", "devices.allow", r})
		}
	}
	return w
}

// deviceRules: the basic character devices and the listed ones, as
// devices.allow lines (everything else is denied first).
func deviceRules(devs []Device) []string {
	rules := []string{
		"c 1:3 rwm",   // null
		"c 1:5 rwm",   // zero
		"c 1:7 rwm",   // full
		"c 1:8 rwm",   // random
		"c 1:9 rwm",   // urandom
		"c 5:0 rwm",   // tty
		"c 5:2 rwm",   // ptmx
		"c 136:* rwm", // pts
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
		rules = append(rules, fmt.Sprintf("%s %d:%d %s", typ, major(st.Rdev), minor(st.Rdev), perm))
	}
	return rules
}

func major(dev uint64) uint64 { return ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xfffff000) }
func minor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) & 0xfff00) }

// taskCgroup is a created task cgroup.
type taskCgroup struct {
	name string
	v2   bool
}

// createCgroup makes the task cgroup (every v1 controller drover uses, or
// the v2 scope with its controllers enabled) and writes its limits.
func createCgroup(c *CgroupConfig) (*taskCgroup, error) {
	g := &taskCgroup{name: c.Name, v2: CgroupsV2()}
	if g.v2 {
		ctrls := v2Controllers
		if len(c.ReservedCores) > 0 {
			ctrls = append(slices.Clip(ctrls), "cpuset")
		}
		if err := g.createV2(ctrls); err != nil {
			return nil, fmt.Errorf("create cgroup v2 %s: %w", c.Name, err)
		}
	} else if err := g.createV1(); err != nil {
		return nil, fmt.Errorf("create cgroup v1 %s: %w", c.Name, err)
	}
	for _, w := range c.writes(g.v2) {
		p := filepath.Join(CgroupDir(c.Name, w.ctrl), w.file)
		if w.file == "memory.memsw.limit_in_bytes" || w.file == "memory.swap.max" {
			if !fileExists(p) {
				continue // no swap accounting on this host
			}
		}
		if err := os.WriteFile(p, []byte(w.value), 0); err != nil {
			return nil, fmt.Errorf("cgroup %s: set %s to %q: %w", c.Name, w.file, w.value, err)
		}
	}
	return g, nil
}

// createV1 makes drover/<name> under each mounted v1 controller. A new
// cpuset cgroup starts with no CPUs and memory nodes: both are copied
// from its parent.
func (g *taskCgroup) createV1() error {
	for _, ctrl := range v1Controllers {
		base := filepath.Join(cgroupRoot, ctrl)
		if !fileExists(filepath.Join(base, "cgroup.procs")) {
			continue // controller not mounted (or mounted together with another)
		}
		for _, dir := range []string{filepath.Join(base, "drover"), filepath.Join(base, "drover", g.name)} {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
			if ctrl == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := inheritCpuset(dir, f); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// inheritCpuset copies file from dir's parent when dir's is empty.
func inheritCpuset(dir, file string) error {
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		return nil
	}
	parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
	if err != nil {
		return err
	}
	if err := os.WriteFile(p, bytes.TrimSpace(parent), 0); err != nil {
		return fmt.Errorf("set %s: %w", p, err)
	}
	return nil
}

// createV2 makes drover.slice/<name>.scope and enables the controllers in
// every ancestor's cgroup.subtree_control.
func (g *taskCgroup) createV2(ctrls []string) error {
	leaf := CgroupDir(g.name, "")
	slice := filepath.Dir(leaf)
	if err := os.Mkdir(slice, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	for _, dir := range []string{cgroupRoot, slice} {
		avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return err
		}
		have := strings.Fields(string(avail))
		for _, c := range ctrls {
			if !slices.Contains(have, c) {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0); err != nil {
				return fmt.Errorf("enable %s in %s: %w", c, dir, err)
			}
		}
	}
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// join moves the calling process into the v1 cgroup (children forked
// now are born there); leave moves it to drover's parent cgroup.
func (g *taskCgroup) join() error {
	return joinCgroup(g.name, os.Getpid())
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
		return ReadKV(filepath.Join(CgroupDir(name, ""), "memory.events"), "oom_kill") > 0
	}
	return ReadKV(filepath.Join(CgroupDir(name, "memory"), "memory.oom_control"), "oom_kill") > 0
}

// ReadKV returns the value of key in a "key value" per line file (0 if absent).
func ReadKV(path, key string) uint64 {
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

func ReadUint(path string) uint64 {
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
