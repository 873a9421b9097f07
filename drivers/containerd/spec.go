package containerd

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/drover/drover/drivers"
)

// Labels put on every container the driver creates.
const (
	LabelTaskID  = "drover.task_id"
	LabelAllocID = "drover.alloc_id"
	LabelJob     = "drover.job"
	LabelTask    = "drover.task"
)

// CgroupParent is the cgroup under which every task's cgroup lives
// (/sys/fs/cgroup/<controller>/drover/<container id> on cgroup v1).
const CgroupParent = "/drover"

const cfsPeriod = 100000 // µs

var (
	idBad = regexp.MustCompile(`[^A-Za-z0-9]+`)
)

// ContainerID derives the containerd container ID of a drover task ID
// ("<alloc>/<task>/<hex>" -> "<alloc>-<task>-<hex>"); IDs longer than
// containerd's 76 characters keep a prefix and a hash.
func ContainerID(taskID string) string {
	id := strings.Trim(idBad.ReplaceAllString(taskID, "-"), "-")
	if id != "" && len(id) <= 76 {
		return id
	}
	sum := sha256.Sum256([]byte(taskID))
	h := hex.EncodeToString(sum[:])[:16]
	if len(id) > 59 {
		id = strings.Trim(id[:59], "-")
	}
	if id == "" {
		return "drover-" + h
	}
	return id + "-" + h
}

// processArgs returns the argv override (nil = the image's), and
// whether only args replace the image's cmd.
func processArgs(tc *TaskConfig) (argv []string, argsOnly bool) {
	switch {
	case len(tc.Entrypoint) > 0:
		argv = append(argv, tc.Entrypoint...)
		if tc.Command != "" {
			argv = append(argv, tc.Command)
		}
		return append(argv, tc.Args...), false
	case tc.Command != "":
		return append([]string{tc.Command}, tc.Args...), false
	case len(tc.Args) > 0:
		return tc.Args, true
	}
	return nil, false
}

// envList merges the task env and the config env (config wins), sorted.
func envList(task, cfg map[string]string) []string {
	m := make(map[string]string, len(task)+len(cfg))
	for k, v := range task {
		m[k] = v
	}
	for k, v := range cfg {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// memoryLimits returns the hard limit and soft reservation in bytes; a
// zero limit means none (memory_max = -1).
func memoryLimits(cfg *drivers.TaskConfig) (limit, reservation int64) {
	var mb, maxMB int64
	if cfg.Resources != nil {
		mb, maxMB = cfg.Resources.Memory.MemoryMB, cfg.Resources.Memory.MemoryMaxMB
	}
	if maxMB < 0 || cfg.MemoryMaxMB < 0 {
		return 0, mb << 20 // memory_max = -1: no ceiling
	}
	if cfg.MemoryMaxMB > maxMB {
		maxMB = cfg.MemoryMaxMB
	}
	if maxMB > mb {
		return maxMB << 20, mb << 20
	}
	return mb << 20, 0
}

// DefaultCaps is the capability set of a task's process (bounding,
// effective and permitted for root; bounding only for other users):
// the exec driver's default set, the container runtimes' one without
// CAP_NET_RAW (which cap_add may bring back; see DefaultAllowCaps).
var DefaultCaps = []string{
	"CAP_AUDIT_WRITE", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_MKNOD", "CAP_NET_BIND_SERVICE", "CAP_SETFCAP",
	"CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT",
}

// nosuid drops the options that would let setuid files or device nodes
// count on a mount and adds nosuid and nodev: no mount drover makes for
// a task honours them.
func nosuid(opts []string) []string {
	out := make([]string, 0, len(opts)+2)
	for _, o := range opts {
		if o != "suid" && o != "dev" && o != "nosuid" && o != "nodev" {
			out = append(out, o)
		}
	}
	return append(out, "nosuid", "nodev")
}

// taskMounts are the alloc dir mounts, the client's mounts and the
// config's mounts, all nosuid and nodev.
func taskMounts(cfg *drivers.TaskConfig, tc *TaskConfig) ([]specs.Mount, error) {
	bind := func(src, dst string, ro bool) specs.Mount {
		mode := "rw"
		if ro {
			mode = "ro"
		}
		return specs.Mount{Type: "bind", Source: src, Destination: dst, Options: nosuid([]string{"rbind", "rprivate", mode})}
	}
	var ms []specs.Mount
	if cfg.AllocDir != "" {
		ms = append(ms, bind(filepath.Join(cfg.AllocDir, "alloc"), "/alloc", false))
	}
	if cfg.TaskDir != "" {
		ms = append(ms,
			bind(filepath.Join(cfg.TaskDir, "local"), "/local", false),
			bind(filepath.Join(cfg.TaskDir, "secrets"), "/secrets", false))
	}
	for _, m := range cfg.Mounts {
		ms = append(ms, bind(m.HostPath, m.TaskPath, m.Readonly))
	}
	for i, m := range tc.Mounts {
		switch m.Type {
		case "tmpfs":
			opts := m.Options
			if len(opts) == 0 {
				opts = []string{"mode=1777"}
			}
			ms = append(ms, specs.Mount{Type: "tmpfs", Source: "tmpfs", Destination: m.Target, Options: nosuid(opts)})
		default:
			src := m.Source
			if !filepath.IsAbs(src) {
				clean := filepath.Clean(src)
				if clean == ".." || strings.HasPrefix(clean, "../") {
					return nil, fmt.Errorf("%w: mounts[%d].source: %q leaves the task dir", drivers.ErrInvalidConfig, i, src)
				}
				src = filepath.Join(cfg.TaskDir, clean)
			}
			if _, err := os.Stat(src); err != nil {
				return nil, fmt.Errorf("%w: mounts[%d].source: %v", drivers.ErrInvalidConfig, i, err)
			}
			opts := append([]string{}, m.Options...)
			hasBind, hasMode := false, false
			for _, o := range opts {
				hasBind = hasBind || o == "bind" || o == "rbind"
				hasMode = hasMode || o == "ro" || o == "rw"
			}
			if !hasBind {
				opts = append(opts, "rbind")
			}
			if !hasMode {
				opts = append(opts, "rw")
			}
			ms = append(ms, specs.Mount{Type: "bind", Source: src, Destination: m.Target, Options: nosuid(opts)})
		}
	}
	return ms, nil
}

// checkPorts: without a bridge network a port can only be used on the
// host port itself.
func checkPorts(cfg *drivers.TaskConfig) error {
	if cfg.NetNS != "" {
		return nil // the client maps host ports to "to" in the alloc's namespace
	}
	for _, p := range cfg.Ports {
		if p.To != 0 && p.To != p.Value {
			return fmt.Errorf("%w: port %q maps %d to %d: the containerd driver runs tasks with ports in the host network and cannot remap; drop \"to\" or set it to the host port",
				drivers.ErrInvalidConfig, p.Label, p.Value, p.To)
		}
	}
	return nil
}

// specOpts builds the container's OCI spec options.
func (d *Driver) specOpts(cfg *drivers.TaskConfig, tc *TaskConfig, img containerd.Image, id string) ([]oci.SpecOpts, error) {
	if err := checkPorts(cfg); err != nil {
		return nil, err
	}
	opts := []oci.SpecOpts{oci.WithImageConfig(img)}
	if argv, argsOnly := processArgs(tc); argsOnly {
		opts = append(opts, oci.WithImageConfigArgs(img, argv))
	} else if argv != nil {
		opts = append(opts, oci.WithProcessArgs(argv...))
	}
	opts = append(opts, oci.WithEnv(envList(cfg.Env, tc.Env)))
	if cfg.User != "" {
		opts = append(opts, oci.WithUser(cfg.User))
	}
	hostNet := cfg.NetNS == "" && (tc.HostNetwork || len(cfg.Ports) > 0)
	if tc.Hostname != "" && !hostNet {
		opts = append(opts, oci.WithHostname(tc.Hostname))
	}
	mounts, err := taskMounts(cfg, tc)
	if err != nil {
		return nil, err
	}
	opts = append(opts, oci.WithMounts(mounts))
	if tc.ReadonlyRootfs {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	switch {
	case cfg.NetNS != "":
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: cfg.NetNS}), oci.WithHostResolvconf)
	case hostNet:
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostHostsFile, oci.WithHostResolvconf)
	}
	// no_new_privs: nothing the task execs gains privileges (setuid,
	// file capabilities), privileged or not.
	opts = append(opts, oci.WithNoNewPrivileges)
	if tc.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	} else {
		opts = append(opts, oci.WithCapabilities(slices.Clip(slices.Clone(DefaultCaps))))
		if len(tc.CapAdd) > 0 {
			opts = append(opts, oci.WithAddedCapabilities(tc.CapAdd))
		}
		if len(tc.CapDrop) > 0 {
			opts = append(opts, oci.WithDroppedCapabilities(tc.CapDrop))
		}
		switch {
		case !tc.Seccomp:
			opts = append(opts, oci.WithSeccompUnconfined)
		case tc.SeccompProfile != "":
			opts = append(opts, seccomp.WithProfile(tc.SeccompProfile))
		default:
			opts = append(opts, seccomp.WithDefaultProfile())
		}
	}
	opts = append(opts, oci.WithCgroup(CgroupParent+"/"+id), d.withResources(cfg, tc))
	if !tc.Privileged {
		opts = append(opts, withCgroupMounts(cgroupRoot, id))
	}
	if len(cfg.Devices) > 0 {
		opts = append(opts, withTaskDevices(d.hostRoot, cfg.Devices))
	}
	return append(opts, withUserCaps), nil
}

// withUserCaps leaves a process that does not run as root only the
// bounding set, as Docker does: runc would otherwise hand a non-root
// user the effective capabilities of the spec (CAP_SETUID alone makes it
// root again). Last of the options, once the user is known.
func withUserCaps(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Process == nil || s.Process.Capabilities == nil || s.Process.User.UID == 0 {
		return nil
	}
	c := s.Process.Capabilities
	c.Effective, c.Permitted, c.Inheritable, c.Ambient = nil, nil, nil, nil
	return nil
}

// withResources sets memory, cpu and pids limits.
func (d *Driver) withResources(cfg *drivers.TaskConfig, tc *TaskConfig) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		r := s.Linux.Resources
		if limit, reservation := memoryLimits(cfg); limit > 0 || reservation > 0 {
			r.Memory = &specs.LinuxMemory{}
			if limit > 0 {
				r.Memory.Limit = &limit
			}
			if reservation > 0 {
				r.Memory.Reservation = &reservation
			}
		}
		if cfg.Resources == nil {
			return nil
		}
		cpu := &specs.LinuxCPU{}
		shares := uint64(max(cfg.Resources.Cpu.CpuShares, 2))
		cpu.Shares = &shares
		period := uint64(cfsPeriod)
		if cores := cfg.Resources.Cpu.ReservedCores; len(cores) > 0 {
			ids := make([]string, len(cores))
			for i, c := range cores {
				ids[i] = strconv.Itoa(int(c))
			}
			cpu.Cpus = strings.Join(ids, ",")
			quota := int64(len(cores)) * cfsPeriod
			cpu.Quota, cpu.Period = &quota, &period
		} else if tc.CPUHardLimit && d.mhzPerCore > 0 {
			quota := max(cfg.Resources.Cpu.CpuShares*cfsPeriod/d.mhzPerCore, 1000)
			cpu.Quota, cpu.Period = &quota, &period
		}
		r.CPU = cpu
		if tc.PidsLimit > 0 {
			r.Pids = &specs.LinuxPids{Limit: tc.PidsLimit}
		}
		return nil
	}
}

// withTaskDevices exposes the task's device list, exactly as the client
// built it (a GPU's nodes and the NVIDIA control devices included), and
// mounts the host's NVIDIA libraries (under root, "" = /) when a device
// of the list is an NVIDIA one.
func withTaskDevices(root string, devs []*drivers.DeviceSpec) oci.SpecOpts {
	return func(ctx context.Context, c oci.Client, ctr *containers.Container, s *oci.Spec) error {
		if err := withDevices(devs)(ctx, c, ctr, s); err != nil {
			return err
		}
		return withNvidiaLibraries(root, devs)(ctx, c, ctr, s)
	}
}

// withDevices exposes host device nodes at their task paths.
func withDevices(devs []*drivers.DeviceSpec) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		for _, dv := range devs {
			host := dv.HostPath
			if real, err := filepath.EvalSymlinks(host); err == nil {
				host = real
			}
			dev, err := oci.DeviceFromPath(host)
			if err != nil {
				return fmt.Errorf("device %s: %w", dv.HostPath, err)
			}
			if dv.TaskPath != "" {
				dev.Path = dv.TaskPath
			}
			perms := dv.Permissions
			if perms == "" {
				perms = "rwm"
			}
			s.Linux.Devices = append(s.Linux.Devices, *dev)
			major, minor := dev.Major, dev.Minor
			s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{
				Allow: true, Type: dev.Type, Major: &major, Minor: &minor, Access: perms,
			})
		}
		return nil
	}
}

// nvidiaLibGlobs are the host files mounted read-only into a task that
// has NVIDIA devices (when they exist on the host).
var nvidiaLibGlobs = []string{
	"/usr/lib/x86_64-linux-gnu/libnvidia-*.so*",
	"/usr/lib/x86_64-linux-gnu/libcuda.so*",
	"/usr/lib/x86_64-linux-gnu/libnvcuvid.so*",
	"/usr/lib64/libnvidia-*.so*",
	"/usr/lib64/libcuda.so*",
	"/usr/bin/nvidia-smi",
}

// nvidiaHostFiles lists the NVIDIA files under root ("" = /) to mount.
func nvidiaHostFiles(root string) []string {
	var out []string
	for _, g := range nvidiaLibGlobs {
		ms, _ := filepath.Glob(filepath.Join(root, g))
		for _, m := range ms {
			if st, err := os.Stat(m); err == nil && !st.IsDir() {
				out = append(out, strings.TrimPrefix(m, root))
			}
		}
	}
	sort.Strings(out)
	return out
}

// hasNvidia: the device list holds a device the client marked NVIDIA
// (a GPU's node or a control device), whatever its path.
func hasNvidia(devs []*drivers.DeviceSpec) bool {
	return slices.ContainsFunc(devs, func(dv *drivers.DeviceSpec) bool { return dv.Vendor == drivers.VendorNvidia })
}

// withNvidiaLibraries mounts the host's NVIDIA user-space libraries when
// the task has an NVIDIA device. Device nodes come from the list alone.
func withNvidiaLibraries(root string, devs []*drivers.DeviceSpec) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if !hasNvidia(devs) {
			return nil
		}
		for _, f := range nvidiaHostFiles(root) {
			s.Mounts = append(s.Mounts, specs.Mount{
				Type: "bind", Source: filepath.Join(root, f), Destination: f,
				Options: []string{"rbind", "rprivate", "ro", "nosuid", "nodev"},
			})
		}
		return nil
	}
}

// cpuMHz reads the first "cpu MHz" of /proc/cpuinfo (0 when unknown).
func cpuMHz() int64 {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(mhz)
			}
		}
	}
	return 0
}

// cgroupV1Controllers are bound into a task (cgroup v1 hosts) so it can
// read its own limits at /sys/fs/cgroup/<controller>.
var cgroupV1Controllers = []string{"memory", "cpu", "cpuacct", "pids", "cpuset"}

// withCgroupMounts makes the task's own cgroup visible read-only at
// /sys/fs/cgroup (the runtime's cgroup mount shows nothing on hybrid
// hosts): on cgroup v1 a tmpfs with one bind mount per controller, on v2
// the task's cgroup directory. runc creates the cgroup before it mounts
// the rootfs, so the sources exist at mount time.
func withCgroupMounts(root, id string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		kept := s.Mounts[:0]
		for _, m := range s.Mounts {
			if m.Destination != "/sys/fs/cgroup" {
				kept = append(kept, m)
			}
		}
		s.Mounts = kept
		rel := filepath.Join(CgroupParent, id)
		ro := []string{"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"}
		if st, err := os.Stat(filepath.Join(root, "memory")); err == nil && st.IsDir() {
			s.Mounts = append(s.Mounts, specs.Mount{
				Type: "tmpfs", Source: "tmpfs", Destination: "/sys/fs/cgroup",
				Options: []string{"nosuid", "nodev", "noexec", "mode=755", "size=64k"},
			})
			for _, c := range cgroupV1Controllers {
				host := filepath.Join(root, c)
				if real, err := filepath.EvalSymlinks(host); err == nil {
					host = real
				}
				if st, err := os.Stat(host); err != nil || !st.IsDir() {
					continue
				}
				s.Mounts = append(s.Mounts, specs.Mount{
					Type: "bind", Source: filepath.Join(host, rel), Destination: "/sys/fs/cgroup/" + c, Options: ro,
				})
			}
			return nil
		}
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
			s.Mounts = append(s.Mounts, specs.Mount{
				Type: "bind", Source: filepath.Join(root, rel), Destination: "/sys/fs/cgroup", Options: ro,
			})
		}
		return nil
	}
}
