package qemu

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/drover/drover/drivers"
)

// PluginConfig is the client's `plugin "qemu" { config { ... } }` block.
type PluginConfig struct {
	// ImagePaths are host directories (besides the alloc dir) that
	// image_path, kernel, initrd and drives may point into.
	ImagePaths []string
	// ArgsAllowlist are the qemu options a job's `args` may use
	// ("-device", "-object" ...). Empty: no extra arguments at all.
	ArgsAllowlist []string
	// ExecutorPath is the drover binary that supervises qemu (default:
	// this process's executable).
	ExecutorPath string
	// Emulator is the qemu binary (default qemu-system-x86_64 on PATH).
	Emulator string
	// VFIOAllowlist are the host PCI addresses a job's vfio_devices may
	// pass through (normalised). Empty: no passthrough at all.
	VFIOAllowlist []string
}

// ParsePluginConfig checks the plugin config; errors wrap
// drivers.ErrInvalidConfig and name the key.
func ParsePluginConfig(m map[string]any) (*PluginConfig, error) {
	pc := &PluginConfig{}
	for k, v := range m {
		var err error
		switch k {
		case "image_paths":
			pc.ImagePaths, err = drivers.StringList(v)
		case "args_allowlist":
			pc.ArgsAllowlist, err = drivers.StringList(v)
			for _, a := range pc.ArgsAllowlist {
				if !strings.HasPrefix(a, "-") {
					err = fmt.Errorf("%q is not an option (options start with -)", a)
				}
			}
		case "vfio_allowlist":
			var l []string
			if l, err = drivers.StringList(v); err == nil {
				for _, a := range l {
					norm, ok := pciAddr(a)
					if !ok {
						err = fmt.Errorf("%q is not a PCI address like 0000:18:00.0", a)
						break
					}
					pc.VFIOAllowlist = append(pc.VFIOAllowlist, norm)
				}
			}
		case "executor_path", "emulator":
			s, ok := v.(string)
			if !ok || s == "" {
				err = fmt.Errorf("must be a non-empty string, got %T", v)
			}
			if k == "executor_path" {
				pc.ExecutorPath = s
			} else {
				pc.Emulator = s
			}
		default:
			err = fmt.Errorf("unknown key")
		}
		if err != nil {
			return nil, fmt.Errorf("qemu plugin config: %w: %q: %v", drivers.ErrInvalidConfig, k, err)
		}
	}
	return pc, nil
}

// Drive is an extra disk. Its image is overlaid per alloc like image_path.
type Drive struct {
	Path string
	// Format of the image: "qcow2" or "raw" ("" = detect with qemu-img).
	Format string
	// Interface is qemu's if=: virtio (default) or ide. (qemu 7.2 has no
	// if=scsi on the pc machines; a SCSI disk needs args.)
	Interface string
	// Readonly attaches the overlay read-only.
	Readonly bool
}

// TaskConfig is a validated task `config { ... }` block.
type TaskConfig struct {
	ImagePath   string
	ImageFormat string
	Kernel      string
	Initrd      string
	KernelArgs  string
	// Accelerator is "kvm", "tcg" or "" (kvm when usable, else tcg).
	Accelerator string
	Machine     string
	// GracefulShutdown sends an ACPI power-down before quitting (default true).
	GracefulShutdown bool
	// PortMap maps a group port label to a guest TCP/UDP port.
	PortMap map[string]int
	Args    []string
	Drives  []Drive
	// VFIODevices are host PCI addresses ("0000:18:00.0") passed through
	// to the guest with vfio-pci (the devices must be bound to vfio-pci).
	VFIODevices []string
}

var (
	machineRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	formats   = map[string]bool{"": true, "qcow2": true, "raw": true}
	ifaces    = map[string]bool{"": true, "virtio": true, "ide": true}
	pciRE     = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
)

// pciAddr normalises a PCI address to qemu's domain:bus:dev.fn form:
// lower case, a 4-digit domain (NVML's 8-digit "00000000:18:00.0" and a
// missing domain are accepted).
func pciAddr(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch strings.Count(s, ":") {
	case 1:
		s = "0000:" + s
	case 2:
		if dom, rest, _ := strings.Cut(s, ":"); len(dom) == 8 && strings.HasPrefix(dom, "0000") {
			s = dom[4:] + ":" + rest
		}
	}
	return s, pciRE.MatchString(s)
}

// ParseTaskConfig checks a task's config block. Errors wrap
// drivers.ErrInvalidConfig and name the offending key. Paths are checked
// against the allowed directories only at start (they depend on the
// alloc dir).
func ParseTaskConfig(m map[string]any) (*TaskConfig, error) {
	c := &TaskConfig{GracefulShutdown: true}
	bad := func(k string, format string, a ...any) error {
		return fmt.Errorf("%w: %q: %s", drivers.ErrInvalidConfig, k, fmt.Sprintf(format, a...))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic first error
	for _, k := range keys {
		v := m[k]
		switch k {
		case "image_path", "image_format", "kernel", "initrd", "kernel_args", "accelerator", "machine":
			s, ok := v.(string)
			if !ok {
				return nil, bad(k, "must be a string, got %T", v)
			}
			switch k {
			case "image_path":
				c.ImagePath = s
			case "image_format":
				if !formats[s] {
					return nil, bad(k, "must be \"qcow2\" or \"raw\", got %q", s)
				}
				c.ImageFormat = s
			case "kernel":
				c.Kernel = s
			case "initrd":
				c.Initrd = s
			case "kernel_args":
				c.KernelArgs = s
			case "accelerator":
				if s != "" && s != "kvm" && s != "tcg" {
					return nil, bad(k, "must be \"kvm\" or \"tcg\", got %q", s)
				}
				c.Accelerator = s
			case "machine":
				if s != "" && !machineRE.MatchString(s) {
					return nil, bad(k, "%q is not a machine type name", s)
				}
				c.Machine = s
			}
		case "graceful_shutdown":
			b, ok := v.(bool)
			if !ok {
				return nil, bad(k, "must be a bool, got %T", v)
			}
			c.GracefulShutdown = b
		case "port_map":
			pm, err := portMap(v)
			if err != nil {
				return nil, bad(k, "%v", err)
			}
			c.PortMap = pm
		case "args":
			a, err := drivers.StringList(v)
			if err != nil {
				return nil, bad(k, "%v", err)
			}
			c.Args = a
		case "vfio_devices":
			a, err := drivers.StringList(v)
			if err != nil {
				return nil, bad(k, "%v", err)
			}
			for _, addr := range a {
				norm, ok := pciAddr(addr)
				if !ok {
					return nil, bad(k, "%q is not a PCI address like 0000:18:00.0", addr)
				}
				c.VFIODevices = append(c.VFIODevices, norm)
			}
		case "drives", "drive":
			ds, err := drives(v)
			if err != nil {
				return nil, bad(k, "%v", err)
			}
			c.Drives = append(c.Drives, ds...)
		default:
			return nil, fmt.Errorf("%w: unknown key %q", drivers.ErrInvalidConfig, k)
		}
	}
	switch {
	case c.ImagePath == "" && c.Kernel == "":
		return nil, fmt.Errorf("%w: %q or %q is required", drivers.ErrInvalidConfig, "image_path", "kernel")
	case c.Kernel == "" && (c.Initrd != "" || c.KernelArgs != ""):
		return nil, fmt.Errorf("%w: %q: initrd and kernel_args need a kernel", drivers.ErrInvalidConfig, "kernel")
	case c.ImagePath == "" && c.ImageFormat != "":
		return nil, fmt.Errorf("%w: %q: set without image_path", drivers.ErrInvalidConfig, "image_format")
	}
	return c, nil
}

// portMap accepts `port_map = { http = 8080 }` (a map) and the block
// form `port_map { http = 8080 }` (a list of maps).
func portMap(v any) (map[string]int, error) {
	out := map[string]int{}
	addAll := func(m map[string]any) error {
		for label, p := range m {
			n, ok := drivers.Int(p)
			if !ok || n < 1 || n > 65535 {
				return fmt.Errorf("port %q: guest port must be 1-65535, got %v", label, p)
			}
			if label == "" {
				return fmt.Errorf("empty port label")
			}
			out[label] = int(n)
		}
		return nil
	}
	switch t := v.(type) {
	case map[string]any:
		if err := addAll(t); err != nil {
			return nil, err
		}
	case []any:
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("must map port labels to guest ports, got %T", e)
			}
			if err := addAll(m); err != nil {
				return nil, err
			}
		}
	case []map[string]any:
		for _, m := range t {
			if err := addAll(m); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("must map port labels to guest ports, got %T", v)
	}
	return out, nil
}

// drives accepts a list of paths or of {path, format, interface, readonly}.
func drives(v any) ([]Drive, error) {
	var list []any
	switch t := v.(type) {
	case []any:
		list = t
	case []map[string]any:
		for _, m := range t {
			list = append(list, m)
		}
	case map[string]any:
		list = []any{t}
	default:
		return nil, fmt.Errorf("must be a list of drives, got %T", v)
	}
	out := make([]Drive, 0, len(list))
	for i, e := range list {
		var d Drive
		switch t := e.(type) {
		case string:
			d.Path = t
		case map[string]any:
			for k, x := range t {
				switch k {
				case "path", "format", "interface":
					s, ok := x.(string)
					if !ok {
						return nil, fmt.Errorf("drive %d: %s must be a string, got %T", i, k, x)
					}
					switch k {
					case "path":
						d.Path = s
					case "format":
						if !formats[s] {
							return nil, fmt.Errorf("drive %d: format must be \"qcow2\" or \"raw\", got %q", i, s)
						}
						d.Format = s
					case "interface":
						if !ifaces[s] {
							return nil, fmt.Errorf("drive %d: interface must be virtio or ide, got %q", i, s)
						}
						d.Interface = s
					}
				case "readonly":
					b, ok := x.(bool)
					if !ok {
						return nil, fmt.Errorf("drive %d: readonly must be a bool, got %T", i, x)
					}
					d.Readonly = b
				default:
					return nil, fmt.Errorf("drive %d: unknown key %q", i, k)
				}
			}
		default:
			return nil, fmt.Errorf("drive %d must be a path or a block, got %T", i, e)
		}
		if d.Path == "" {
			return nil, fmt.Errorf("drive %d: path is required", i)
		}
		if d.Readonly && d.Interface == "ide" {
			return nil, fmt.Errorf("drive %d: qemu cannot attach an ide disk read-only; use virtio", i)
		}
		out = append(out, d)
	}
	return out, nil
}

// checkArgs enforces the allowlist: every element that starts with "-"
// is an option and must be listed (an "-opt=value" form counts as
// "-opt"); other elements are the values of the option before them.
func checkArgs(args, allow []string) error {
	allowed := map[string]bool{}
	for _, a := range allow {
		allowed[a] = true
	}
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			if i == 0 {
				return fmt.Errorf("%w: %q: %q is a value without an option before it", drivers.ErrInvalidConfig, "args", a)
			}
			continue
		}
		opt, _, _ := strings.Cut(a, "=")
		if !allowed[opt] {
			if len(allow) == 0 {
				return fmt.Errorf("%w: %q: option %q not allowed (the client's args_allowlist is empty)", drivers.ErrInvalidConfig, "args", opt)
			}
			return fmt.Errorf("%w: %q: option %q not in the client's args_allowlist %v", drivers.ErrInvalidConfig, "args", opt, allow)
		}
	}
	return nil
}

// checkVFIO enforces the client's vfio_allowlist on a job's vfio_devices.
func checkVFIO(devs, allow []string) error {
	for _, dev := range devs {
		found := false
		for _, a := range allow {
			found = found || a == dev
		}
		if !found {
			return fmt.Errorf("%w: %q: %s is not in the client's vfio_allowlist %v", drivers.ErrInvalidConfig, "vfio_devices", dev, allow)
		}
	}
	return nil
}
