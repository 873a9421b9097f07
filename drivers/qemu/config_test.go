package qemu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

func TestParseTaskConfig(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want *TaskConfig
		err  string // substring of the error; "" = valid
	}{
		{name: "kernel boot", in: map[string]any{"kernel": "k", "initrd": "i", "kernel_args": "console=ttyS0"},
			want: &TaskConfig{Kernel: "k", Initrd: "i", KernelArgs: "console=ttyS0", GracefulShutdown: true}},
		{name: "image with everything", in: map[string]any{
			"image_path": "disk.qcow2", "image_format": "qcow2", "accelerator": "tcg", "machine": "pc-q35-7.2",
			"graceful_shutdown": false, "port_map": map[string]any{"http": int64(8080), "ssh": float64(22)},
			"args":   []any{"-device", "virtio-rng-pci"},
			"drives": []any{"data.raw", map[string]any{"path": "b.qcow2", "format": "qcow2", "interface": "virtio", "readonly": true}},
		}, want: &TaskConfig{
			ImagePath: "disk.qcow2", ImageFormat: "qcow2", Accelerator: "tcg", Machine: "pc-q35-7.2",
			PortMap: map[string]int{"http": 8080, "ssh": 22}, Args: []string{"-device", "virtio-rng-pci"},
			Drives: []Drive{{Path: "data.raw"}, {Path: "b.qcow2", Format: "qcow2", Interface: "virtio", Readonly: true}},
		}},
		{name: "port_map block form", in: map[string]any{"kernel": "k", "port_map": []any{map[string]any{"http": int64(80)}}},
			want: &TaskConfig{Kernel: "k", GracefulShutdown: true, PortMap: map[string]int{"http": 80}}},
		{name: "drive blocks", in: map[string]any{"kernel": "k", "drive": []any{map[string]any{"path": "x"}}},
			want: &TaskConfig{Kernel: "k", GracefulShutdown: true, Drives: []Drive{{Path: "x"}}}},
		{name: "nothing to boot", in: map[string]any{"accelerator": "tcg"}, err: `"image_path" or "kernel" is required`},
		{name: "initrd without kernel", in: map[string]any{"image_path": "x", "initrd": "i"}, err: "need a kernel"},
		{name: "unknown key", in: map[string]any{"kernel": "k", "bogus": 1}, err: `unknown key "bogus"`},
		{name: "kernel not a string", in: map[string]any{"kernel": 5}, err: `"kernel": must be a string`},
		{name: "bad accelerator", in: map[string]any{"kernel": "k", "accelerator": "hvf"}, err: `"accelerator"`},
		{name: "machine injection", in: map[string]any{"kernel": "k", "machine": "pc,accel=kvm"}, err: `"machine"`},
		{name: "guest port 0", in: map[string]any{"kernel": "k", "port_map": map[string]any{"http": 0}}, err: `"port_map"`},
		{name: "guest port fraction", in: map[string]any{"kernel": "k", "port_map": map[string]any{"http": 80.5}}, err: `"port_map"`},
		{name: "port_map string", in: map[string]any{"kernel": "k", "port_map": "http=80"}, err: `"port_map"`},
		{name: "args not a list", in: map[string]any{"kernel": "k", "args": "-s"}, err: `"args"`},
		{name: "drive format", in: map[string]any{"kernel": "k", "drives": []any{map[string]any{"path": "p", "format": "vmdk"}}}, err: `"drives"`},
		{name: "read-only ide drive", in: map[string]any{"kernel": "k", "drives": []any{map[string]any{"path": "p", "interface": "ide", "readonly": true}}}, err: "read-only"},
		{name: "scsi drive", in: map[string]any{"kernel": "k", "drives": []any{map[string]any{"path": "p", "interface": "scsi"}}}, err: "virtio or ide"},
		{name: "drive without path", in: map[string]any{"kernel": "k", "drives": []any{map[string]any{"readonly": true}}}, err: "path is required"},
		{name: "drive unknown key", in: map[string]any{"kernel": "k", "drives": []any{map[string]any{"path": "p", "cache": "none"}}}, err: `unknown key "cache"`},
		{name: "graceful not bool", in: map[string]any{"kernel": "k", "graceful_shutdown": "yes"}, err: `"graceful_shutdown"`},
		{name: "image_format without image", in: map[string]any{"kernel": "k", "image_format": "raw"}, err: `"image_format"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTaskConfig(tc.in)
			if tc.err != "" {
				if !errors.Is(err, drivers.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseTaskConfig(%v) = %v, want ErrInvalidConfig containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTaskConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTaskConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePluginConfig(t *testing.T) {
	pc, err := ParsePluginConfig(map[string]any{"image_paths": []any{"/srv/images"}, "args_allowlist": []any{"-device"},
		"executor_path": "/usr/bin/drover", "emulator": "qemu-system-x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	want := &PluginConfig{ImagePaths: []string{"/srv/images"}, ArgsAllowlist: []string{"-device"}, ExecutorPath: "/usr/bin/drover", Emulator: "qemu-system-x86_64"}
	if diff := cmp.Diff(want, pc); diff != "" {
		t.Errorf("plugin config (-want +got):\n%s", diff)
	}
	if pc, err := ParsePluginConfig(map[string]any{"vfio_allowlist": []any{"18:00.0"}}); err != nil || len(pc.VFIOAllowlist) != 1 || pc.VFIOAllowlist[0] != "0000:18:00.0" {
		t.Errorf("vfio_allowlist = %+v, %v; want [0000:18:00.0]", pc, err)
	}
	for _, bad := range []map[string]any{
		{"vfio_allowlist": []any{"eth0"}},
		{"image_paths": "/srv"}, {"args_allowlist": []any{"device"}}, {"executor_path": ""}, {"enabled": true},
	} {
		if _, err := ParsePluginConfig(bad); !errors.Is(err, drivers.ErrInvalidConfig) {
			t.Errorf("ParsePluginConfig(%v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	allow := []string{"-device", "-object"}
	tests := []struct {
		args  []string
		allow []string
		ok    bool
	}{
		{nil, nil, true},
		{[]string{"-device", "virtio-rng-pci"}, allow, true},
		{[]string{"-device=virtio-rng-pci", "-object", "rng-random,id=r"}, allow, true},
		{[]string{"-device", "x"}, nil, false},                 // empty allowlist: nothing
		{[]string{"-drive", "file=/etc/shadow"}, allow, false}, // not listed
		{[]string{"virtio-rng-pci"}, allow, false},             // a value without its option
	}
	for _, tc := range tests {
		err := checkArgs(tc.args, tc.allow)
		if (err == nil) != tc.ok {
			t.Errorf("checkArgs(%q, %q) = %v, want ok=%v", tc.args, tc.allow, err, tc.ok)
		}
		if err != nil && !errors.Is(err, drivers.ErrInvalidConfig) {
			t.Errorf("checkArgs error %v does not wrap ErrInvalidConfig", err)
		}
	}
}

func TestVMSpecArgs(t *testing.T) {
	res := &api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 2500}, Memory: api.AllocatedMemoryResources{MemoryMB: 512}}
	fw, err := forwards(map[string]int{"http": 8080}, []api.AllocatedPort{{Label: "http", Value: 24000, HostIP: "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	v := &vmSpec{Name: "web,1", Accelerator: "tcg", Machine: "q35", MemoryMB: memoryMB(res), VCPUs: vcpus(res),
		QMPSocket: "/a/qmp.sock", Disks: []disk{{Path: "/t/d,0.qcow2", Readonly: true}, {Path: "/t/d1.qcow2", Interface: "ide"}},
		Kernel: "/i/vmlinuz", Initrd: "/i/initrd", KernelArgs: "console=ttyS0 quiet", Forwards: fw, Extra: []string{"-device", "virtio-rng-pci"}}
	got := strings.Join(v.args(), " ")
	want := "-name web,,1 -nodefaults -no-user-config -display none -accel tcg -machine q35 -m 512 -smp 2 -serial stdio" +
		" -qmp unix:/a/qmp.sock,server=on,wait=off -drive file=/t/d,,0.qcow2,format=qcow2,if=virtio,readonly=on" +
		" -drive file=/t/d1.qcow2,format=qcow2,if=ide -kernel /i/vmlinuz -initrd /i/initrd -append console=ttyS0 quiet" +
		" -netdev user,id=net0,hostfwd=tcp:127.0.0.1:24000-:8080,hostfwd=udp:127.0.0.1:24000-:8080 -device virtio-net-pci,netdev=net0" +
		" -device virtio-rng-pci"
	if got != want {
		t.Errorf("args:\n got %s\nwant %s", got, want)
	}
	if _, err := forwards(map[string]int{"db": 5432}, []api.AllocatedPort{{Label: "http", Value: 1}}); !errors.Is(err, drivers.ErrInvalidConfig) {
		t.Errorf("forward of an unknown label = %v, want ErrInvalidConfig", err)
	}
}

func TestResources(t *testing.T) {
	tests := []struct {
		r     *api.AllocatedTaskResources
		vcpus int
		memMB int64
	}{
		{nil, 1, defaultMemoryMB},
		{&api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 500}}, 1, defaultMemoryMB},
		{&api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 4000}, Memory: api.AllocatedMemoryResources{MemoryMB: 1024}}, 4, 1024},
		{&api.AllocatedTaskResources{Cpu: api.AllocatedCpuResources{CpuShares: 4000, ReservedCores: []uint16{0, 1, 2}}}, 3, defaultMemoryMB},
	}
	for _, tc := range tests {
		if got := vcpus(tc.r); got != tc.vcpus {
			t.Errorf("vcpus(%+v) = %d, want %d", tc.r, got, tc.vcpus)
		}
		if got := memoryMB(tc.r); got != tc.memMB {
			t.Errorf("memoryMB(%+v) = %d, want %d", tc.r, got, tc.memMB)
		}
	}
}

func TestSocketPath(t *testing.T) {
	p, own := socketPath("/var/lib/drover/alloc/a1/web", "a1/web/1")
	if own || p != "/var/lib/drover/alloc/a1/web/qmp.sock" {
		t.Errorf("short task dir: %s own=%v, want the task dir", p, own)
	}
	long := "/" + strings.Repeat("x", 120)
	p, own = socketPath(long, "a1/web/1")
	if !own || len(p) > maxSocketPath || strings.HasPrefix(p, long) {
		t.Errorf("long task dir: %s (%d bytes) own=%v, want a short path elsewhere", p, len(p), own)
	}
	if p2, _ := socketPath(long, "a1/web/2"); p2 == p {
		t.Errorf("two tasks share the socket path %s", p)
	}
}

func TestParseVersion(t *testing.T) {
	out := []byte("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright (c) 2003-2022 Fabrice Bellard\n")
	if got := parseVersion(out); got != "7.2.22" {
		t.Errorf("parseVersion = %q, want 7.2.22", got)
	}
	if got := parseVersion([]byte("garbage")); got != "" {
		t.Errorf("parseVersion(garbage) = %q, want empty", got)
	}
}

func TestKVMUsableWithoutDevice(t *testing.T) {
	old := kvmDevice
	kvmDevice = filepath.Join(t.TempDir(), "kvm")
	t.Cleanup(func() { kvmDevice = old })
	if KVMUsable() {
		t.Error("KVMUsable() with no device node = true")
	}
	if err := os.WriteFile(kvmDevice, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if KVMUsable() {
		t.Error("KVMUsable() with a plain file as the device = true")
	}
}

func TestPathPolicy(t *testing.T) {
	root := t.TempDir()
	alloc := filepath.Join(root, "alloc")
	task := filepath.Join(alloc, "web")
	images := filepath.Join(root, "images")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{task, images, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inTask := write(filepath.Join(task, "local.img"))
	inImages := write(filepath.Join(images, "vmlinuz"))
	secret := write(filepath.Join(outside, "secret"))
	if err := os.Symlink(secret, filepath.Join(task, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(inImages, filepath.Join(task, "kernel-link")); err != nil {
		t.Fatal(err)
	}
	pol := newPathPolicy(task, alloc, []string{images, "relative/ignored", filepath.Join(root, "missing")})
	tests := []struct {
		path string
		want string // resolved path; "" = rejected
		deny bool   // rejected with ErrPathNotAllowed
	}{
		{"local.img", inTask, false},
		{inTask, inTask, false},
		{inImages, inImages, false},
		{"kernel-link", inImages, false},
		{secret, "", true},
		{"escape", "", true},
		{"../web/local.img", "", true},
		{images + "/../images/vmlinuz", "", true},
		{"missing.img", "", false},
		{task, "", false}, // a directory
		{"", "", false},
	}
	for _, tc := range tests {
		got, err := pol.resolve("image_path", tc.path)
		switch {
		case tc.want != "":
			if err != nil || got != tc.want {
				t.Errorf("resolve(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		case err == nil:
			t.Errorf("resolve(%q) = %q, want an error", tc.path, got)
		case !errors.Is(err, drivers.ErrInvalidConfig):
			t.Errorf("resolve(%q) error %v does not wrap ErrInvalidConfig", tc.path, err)
		case tc.deny != errors.Is(err, ErrPathNotAllowed):
			t.Errorf("resolve(%q) = %v; ErrPathNotAllowed want %v", tc.path, err, tc.deny)
		}
	}
}

// vfio_devices pass only the host PCI devices the client allows.
func TestVFIOAllowlist(t *testing.T) {
	cfg := map[string]any{"kernel": "/k", "vfio_devices": []any{"0000:18:00.0"}}
	for _, tc := range []struct {
		allow []any
		ok    bool
	}{{nil, false}, {[]any{"0000:3b:00.0"}, false}, {[]any{"18:00.0", "3b:00.0"}, true}} {
		d, err := NewDriver(drivers.Options{Config: map[string]any{"vfio_allowlist": tc.allow}})
		if err != nil {
			t.Fatal(err)
		}
		err = d.ValidateConfig(cfg)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, drivers.ErrInvalidConfig)) {
			t.Errorf("allowlist %v: ValidateConfig = %v, want ok=%v", tc.allow, err, tc.ok)
		}
	}
}
