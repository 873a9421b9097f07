package fingerprint

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drover/drover/api"
)

// HostConfig says where to look.
type HostConfig struct {
	// DataDir is the client data dir; its filesystem is the node's disk.
	DataDir string
	// BindAddr is the address the agent binds ("" or 0.0.0.0 = any).
	BindAddr string
	// DevMode advertises 127.0.0.1.
	DevMode bool
	// Root prefixes /proc, /sys and /etc (tests); "" = "/".
	Root string
}

// Host is the fingerprint of the machine (without drivers).
type Host struct {
	Attributes map[string]string
	Resources  *api.NodeResources
}

// FingerprintHost reads the host. Parts that cannot be read are left out
// of the attributes; only a missing data dir is an error.
func FingerprintHost(cfg HostConfig) (*Host, error) {
	h := &Host{Attributes: map[string]string{}, Resources: &api.NodeResources{
		MinDynamicPort: api.DefaultMinDynamicPort, MaxDynamicPort: api.DefaultMaxDynamicPort,
	}}
	a := h.Attributes
	root := cfg.Root
	if root == "" {
		root = "/"
	}
	p := func(s string) string { return filepath.Join(root, s) }

	// CPU.
	cpu := readCPU(p("proc/cpuinfo"), p("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"))
	a["cpu.arch"] = runtime.GOARCH
	a["cpu.numcores"] = strconv.Itoa(cpu.cores)
	a["cpu.frequency"] = strconv.Itoa(cpu.mhz)
	a["cpu.totalcompute"] = strconv.Itoa(cpu.cores * cpu.mhz)
	if cpu.model != "" {
		a["cpu.modelname"] = cpu.model
	}
	h.Resources.Cpu.CpuShares = int64(cpu.cores * cpu.mhz)
	h.Resources.Cpu.TotalCpuCores = uint16(cpu.cores)
	for i := 0; i < cpu.cores; i++ {
		h.Resources.Cpu.ReservableCpuCores = append(h.Resources.Cpu.ReservableCpuCores, uint16(i))
	}
	h.Resources.Cpu.NUMA = readNUMA(p("sys/devices/system/node"))

	// Memory.
	if total, ok := readMemTotal(p("proc/meminfo")); ok {
		a["memory.totalbytes"] = strconv.FormatUint(total, 10)
		h.Resources.Memory.MemoryMB = int64(total / (1 << 20))
	}

	// Disk of the data dir.
	if cfg.DataDir != "" {
		var st unix.Statfs_t
		if err := unix.Statfs(cfg.DataDir, &st); err != nil {
			return nil, fmt.Errorf("fingerprint disk of %s: %w", cfg.DataDir, err)
		}
		total := st.Blocks * uint64(st.Bsize)
		free := st.Bavail * uint64(st.Bsize)
		a["unique.storage.volume"] = mountOf(p("proc/self/mountinfo"), cfg.DataDir)
		a["unique.storage.bytestotal"] = strconv.FormatUint(total, 10)
		a["unique.storage.bytesfree"] = strconv.FormatUint(free, 10)
		h.Resources.Disk.DiskMB = int64(free / (1 << 20))
	}

	// Kernel and OS.
	a["kernel.name"] = runtime.GOOS
	a["arch"] = runtime.GOARCH
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		a["kernel.version"] = unix.ByteSliceToString(u.Release[:])
		a["kernel.arch"] = unix.ByteSliceToString(u.Machine[:])
	}
	if hn, err := os.Hostname(); err == nil {
		a["unique.hostname"] = hn
	}
	if osr := readOSRelease(p("etc/os-release")); osr != nil {
		if v := osr["ID"]; v != "" {
			a["os.name"] = v
		}
		if v := osr["VERSION_ID"]; v != "" {
			a["os.version"] = v
		}
		if v := osr["PRETTY_NAME"]; v != "" {
			a["os.pretty_name"] = v
		}
	}

	// cgroups: v2 when the root has cgroup.controllers, else v1 (a
	// hybrid host with a v2 hierarchy at /sys/fs/cgroup/unified is v1).
	if _, err := os.Stat(p("sys/fs/cgroup/cgroup.controllers")); err == nil {
		a["unique.cgroup.version"] = "v2"
		a["unique.cgroup.mountpoint"] = "/sys/fs/cgroup"
	} else if _, err := os.Stat(p("sys/fs/cgroup")); err == nil {
		a["unique.cgroup.version"] = "v1"
		a["unique.cgroup.mountpoint"] = "/sys/fs/cgroup"
	}

	// Network.
	ip := NetworkIP(cfg.BindAddr, cfg.DevMode)
	if ip != "" {
		a["unique.network.ip-address"] = ip
		h.Resources.Networks = []*api.NetworkResource{{Mode: "host", Device: deviceOf(ip), IP: ip, CIDR: ip + "/32"}}
	}
	return h, nil
}

type cpuInfo struct {
	cores, mhz int
	model      string
}

// readNUMA reads the NUMA nodes and their cores from sysfs
// (node<N>/cpulist, e.g. "0-3,8-11"); nil unless there are two or more
// (the scheduler then takes reserved cores next to an alloc's GPUs).
func readNUMA(dir string) []api.NodeNUMANode {
	paths, _ := filepath.Glob(filepath.Join(dir, "node[0-9]*", "cpulist"))
	var out []api.NodeNUMANode
	for _, path := range paths {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "node"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n := api.NodeNUMANode{ID: id}
		for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
			lo, hi, isRange := strings.Cut(part, "-")
			a, errA := strconv.Atoi(lo)
			z := a
			var errZ error
			if isRange {
				z, errZ = strconv.Atoi(hi)
			}
			if errA != nil || errZ != nil || a < 0 || z > 65535 {
				continue
			}
			for c := a; c <= z; c++ {
				n.Cores = append(n.Cores, uint16(c))
			}
		}
		if len(n.Cores) > 0 {
			out = append(out, n)
		}
	}
	if len(out) < 2 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func readCPU(cpuinfo, maxFreq string) cpuInfo {
	c := cpuInfo{cores: runtime.NumCPU()}
	if b, err := os.ReadFile(maxFreq); err == nil {
		if khz, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && khz > 0 {
			c.mhz = khz / 1000
		}
	}
	f, err := os.Open(cpuinfo)
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch k {
			case "model name":
				if c.model == "" {
					c.model = v
				}
			case "cpu MHz":
				if c.mhz == 0 {
					if f, err := strconv.ParseFloat(v, 64); err == nil {
						c.mhz = int(f)
					}
				}
			}
		}
	}
	if c.mhz == 0 {
		c.mhz = 1000 // unknown: a conservative guess so the node is schedulable
	}
	return c
}

func readMemTotal(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

func readOSRelease(path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		m[k] = strings.Trim(v, `"'`)
	}
	return m
}

// mountOf returns the mount source of the filesystem holding dir.
func mountOf(mountinfo, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return abs
	}
	best, src := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		mp := f[4]
		sep := 6
		for sep < len(f) && f[sep] != "-" {
			sep++
		}
		if sep+2 >= len(f) {
			continue
		}
		if (abs == mp || mp == "/" || strings.HasPrefix(abs, mp+"/")) && len(mp) >= len(best) {
			best, src = mp, f[sep+2]
		}
	}
	if src == "" {
		return abs
	}
	return src
}

// NetworkIP is the node's advertised address: the bind address when it
// is specific, 127.0.0.1 in dev mode, else the first non-loopback IPv4
// (or IPv6) address of an up interface.
func NetworkIP(bind string, dev bool) string {
	if bind != "" && bind != "0.0.0.0" && bind != "::" {
		if h, _, err := net.SplitHostPort(bind); err == nil {
			bind = h
		}
		return bind
	}
	if dev {
		return "127.0.0.1"
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	var v6 string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok || ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
			if v6 == "" {
				v6 = ipn.IP.String()
			}
		}
	}
	if v6 != "" {
		return v6
	}
	return "127.0.0.1"
}

func deviceOf(ip string) string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, ad := range addrs {
			if ipn, ok := ad.(*net.IPNet); ok && ipn.IP.String() == ip {
				return ifc.Name
			}
		}
	}
	return ""
}
