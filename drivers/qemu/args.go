package qemu

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// defaultMemoryMB is the guest memory when the task asks for none.
const defaultMemoryMB = 256

// vmSpec is everything the qemu command line is built from; paths are
// resolved and checked already.
type vmSpec struct {
	Name        string
	Accelerator string // "kvm" or "tcg"
	Machine     string
	MemoryMB    int64
	VCPUs       int
	QMPSocket   string
	// Disks are overlay files (qcow2), the image's first.
	Disks      []disk
	Kernel     string
	Initrd     string
	KernelArgs string
	// Forwards are host -> guest port forwards.
	Forwards []forward
	// VFIO are host PCI addresses passed through with vfio-pci.
	VFIO  []string
	Extra []string
}

type disk struct {
	Path      string
	Interface string
	Readonly  bool
}

type forward struct {
	Label     string
	HostIP    string
	HostPort  int
	GuestPort int
}

// optEscape doubles commas: qemu's option syntax splits values on ",".
func optEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// vcpus is max(1, reserved cores or CpuShares/1000).
func vcpus(r *api.AllocatedTaskResources) int {
	if r == nil {
		return 1
	}
	n := len(r.Cpu.ReservedCores)
	if n == 0 {
		n = int(r.Cpu.CpuShares / 1000)
	}
	return max(1, n)
}

// memoryMB is the task's MemoryMB (defaultMemoryMB when unset).
func memoryMB(r *api.AllocatedTaskResources) int64 {
	if r == nil || r.Memory.MemoryMB <= 0 {
		return defaultMemoryMB
	}
	return r.Memory.MemoryMB
}

// forwards maps port_map labels to the group's allocated host ports.
func forwards(pm map[string]int, ports []api.AllocatedPort) ([]forward, error) {
	labels := make([]string, 0, len(pm))
	for l := range pm {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var out []forward
	for _, l := range labels {
		var found *api.AllocatedPort
		for i := range ports {
			if ports[i].Label == l {
				found = &ports[i]
				break
			}
		}
		if found == nil || found.Value <= 0 {
			have := make([]string, 0, len(ports))
			for _, p := range ports {
				have = append(have, p.Label)
			}
			return nil, fmt.Errorf("%w: %q: port label %q is not a port of the group's network (have %v)", drivers.ErrInvalidConfig, "port_map", l, have)
		}
		out = append(out, forward{Label: l, HostIP: found.HostIP, HostPort: found.Value, GuestPort: pm[l]})
	}
	return out, nil
}

// args is the qemu command line (without the binary). The serial console
// is qemu's stdout, which the supervisor writes to the task's stdout log.
func (v *vmSpec) args() []string {
	a := []string{
		"-name", optEscape(v.Name),
		"-nodefaults", "-no-user-config", "-display", "none",
		"-accel", v.Accelerator,
	}
	if v.Machine != "" {
		a = append(a, "-machine", v.Machine)
	}
	if v.Accelerator == "kvm" {
		a = append(a, "-cpu", "host")
	}
	a = append(a,
		"-m", strconv.FormatInt(v.MemoryMB, 10),
		"-smp", strconv.Itoa(v.VCPUs),
		"-serial", "stdio",
		"-qmp", "unix:"+optEscape(v.QMPSocket)+",server=on,wait=off",
	)
	for _, d := range v.Disks {
		iface := d.Interface
		if iface == "" {
			iface = "virtio"
		}
		opt := "file=" + optEscape(d.Path) + ",format=qcow2,if=" + iface
		if d.Readonly {
			opt += ",readonly=on"
		}
		a = append(a, "-drive", opt)
	}
	if v.Kernel != "" {
		a = append(a, "-kernel", v.Kernel)
		if v.Initrd != "" {
			a = append(a, "-initrd", v.Initrd)
		}
		if v.KernelArgs != "" {
			a = append(a, "-append", v.KernelArgs)
		}
	}
	if len(v.Forwards) > 0 {
		netdev := "user,id=net0"
		for _, f := range v.Forwards {
			for _, proto := range []string{"tcp", "udp"} {
				netdev += fmt.Sprintf(",hostfwd=%s:%s:%d-:%d", proto, f.HostIP, f.HostPort, f.GuestPort)
			}
		}
		a = append(a, "-netdev", netdev, "-device", "virtio-net-pci,netdev=net0")
	}
	for _, addr := range v.VFIO {
		a = append(a, "-device", "vfio-pci,host="+addr)
	}
	return append(a, v.Extra...)
}
